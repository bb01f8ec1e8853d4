//! Tenants filling the guest memory budget with `WasmReconciler`s, each within the per-plugin
//! limits: they take all the budget but the operator's reserve (`--operator-reserved-memory`),
//! the next tenant is refused with an `Exhausted` status naming the reserve, and the operator's
//! plugin, dropped into the plugin directory afterwards, loads into the reserve and upgrades
//! with the whole budget taken, while a tenant's plugin keeps reconciling beside it. Deleting a
//! tenant's WasmReconciler (loaded or refused) takes its metric series out of `/metrics`. The
//! same holds for the instance pool's slots (`--operator-reserved-instances`).

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use wasmop::plugins::{PluginState, PluginStatus};
use wasmop_envtest::{ControlPlane, within};

use crate::common;
use crate::common::scrape::{free_address, get, parse, value, wait_ready};

const LIMIT: Duration = Duration::from_secs(600);

const MI: usize = 1 << 20;

/// The host's guest memory budget.
const BUDGET: usize = 256 * MI;

/// What only the operator's plugins may take of it.
const RESERVE: usize = 64 * MI;

/// Each tenant's memory limit (its share of the budget).
const TENANT_SHARE: usize = 32 * MI;

/// The operator's plugins' memory limit: its plugin fills the reserve alone.
const OPERATOR_SHARE: usize = 64 * MI;

/// The plugin name of guest-good, which each tenant's copy replaces by one of the same length.
const NAME: &[u8] = b"guest-good";

/// guest-good's bytes with its plugin name `name` (of [`NAME`]'s length).
fn renamed(name: &str) -> anyhow::Result<Vec<u8>> {
    assert_eq!(name.len(), NAME.len());
    let bytes = std::fs::read(common::component("guest-good"))?;
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes.as_slice();
    while let Some(at) = rest.windows(NAME.len()).position(|w| w == NAME) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(name.as_bytes());
        rest = &rest[at + NAME.len()..];
    }
    out.extend_from_slice(rest);
    Ok(out)
}

/// Stores `bytes` in ConfigMap `name` of `namespace` and creates WasmReconciler `name` loading
/// it with a memory limit of [`TENANT_SHARE`].
async fn tenant(
    plane: &ControlPlane,
    namespace: &str,
    name: &str,
    bytes: Vec<u8>,
) -> anyhow::Result<()> {
    let memory = json!({"memoryLimit": format!("{}Mi", TENANT_SHARE / MI)});
    tenant_with(plane, namespace, (name, bytes), memory).await
}

/// Stores `bytes` in ConfigMap `name` of `namespace` and creates WasmReconciler `name` loading
/// it with the further spec fields `settings`.
async fn tenant_with(
    plane: &ControlPlane,
    namespace: &str,
    (name, bytes): (&str, Vec<u8>),
    settings: serde_json::Value,
) -> anyhow::Result<()> {
    let module = common::reconcilers::store_bytes(plane, namespace, name, bytes).await?;
    let mut spec = json!({"module": module});
    spec.as_object_mut()
        .expect("an object")
        .extend(settings.as_object().cloned().unwrap_or_default());
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
        "metadata": {"name": name},
        "spec": spec,
    }))?;
    common::reconcilers::api(plane.client().await?)
        .create(&PostParams::default(), &object)
        .await?;
    Ok(())
}

/// `wasmop plugins --json` against the host at `address`, until `check` holds.
async fn plugins_until(
    address: &str,
    check: impl Fn(&[PluginStatus]) -> bool,
) -> anyhow::Result<Vec<PluginStatus>> {
    loop {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
            .args(["plugins", "--json", "--address", address])
            .output()
            .await?;
        let statuses: Vec<PluginStatus> = serde_json::from_slice(&output.stdout)?;
        if check(&statuses) {
            return Ok(statuses);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A host's ports and plugin directory, and a policy reading modules from one namespace and
/// letting the operator's webapp convert its WebApps (which a policy must name).
struct Pool {
    probes: String,
    metrics: String,
    dir: tempfile::TempDir,
    policy: std::path::PathBuf,
}

impl Pool {
    /// The settings, the policy reading modules from `modules` with `more` of its own.
    fn new(plane: &ControlPlane, modules: &str, more: &str) -> anyhow::Result<Self> {
        let policy = plane.dir().join(format!("{modules}-policy.yaml"));
        let allowed = "conversions: {example.wasmop.dev/WebApp: webapp}";
        let text = format!("modules: {{namespaces: [{modules}]}}\n{allowed}\n{more}");
        std::fs::write(&policy, text)?;
        Ok(Pool {
            probes: free_address(),
            metrics: free_address(),
            dir: tempfile::tempdir()?,
            policy,
        })
    }

    /// The host watching `work`, loading WasmReconcilers and the plugin directory.
    fn host(&self, plane: &ControlPlane, work: &str) -> tokio::process::Command {
        let mut host = common::host(plane);
        host.args(["--wasm-reconcilers", "--namespaces", work])
            .arg("--policy")
            .arg(&self.policy)
            .arg("--plugin-dir")
            .arg(self.dir.path())
            .args(["--metrics-bind-address", &self.metrics])
            .args(["--health-probe-bind-address", &self.probes]);
        host
    }

    /// Drops the operator's webapp 0.1.0 into the plugin directory, awaits `loaded` once it
    /// runs, upgrades it to 0.2.0, and checks it converges a WebApp in `work` while tenant
    /// `good` still reconciles there; what `loaded` gave, and the upgraded plugin.
    async fn operator_upgrades<T>(
        &self,
        plane: &ControlPlane,
        work: &str,
        loaded: impl std::future::Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<(T, PluginStatus)> {
        common::publish("webapp", self.dir.path(), "webapp.wasm")?;
        let first = plugins_until(&self.probes, |s| running(s, "webapp").is_some()).await?;
        assert_eq!(
            running(&first, "webapp").unwrap().version.as_deref(),
            Some("0.1.0")
        );
        let read = loaded.await?;
        common::publish("webapp-v2", self.dir.path(), "webapp.wasm")?;
        let upgraded = plugins_until(&self.probes, |s| {
            let webapp = s.iter().find(|s| s.name.as_deref() == Some("webapp"));
            webapp.is_some_and(|w| w.version.as_deref() == Some("0.2.0") || w.last_error.is_some())
        })
        .await?;
        let webapp = upgraded
            .into_iter()
            .find(|s| s.name.as_deref() == Some("webapp"));
        let webapp = webapp.expect("webapp is listed");
        assert_eq!(webapp.last_error, None, "{webapp:?}");
        assert_eq!(webapp.version.as_deref(), Some("0.2.0"), "{webapp:?}");
        let apps = common::webapps(plane.client().await?, work);
        apps.create(&Default::default(), &common::webapp("served"))
            .await?;
        common::converged(&apps, "served").await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, work);
        common::seen_by_good(&configmaps, "neighbour").await?;
        Ok((read, webapp))
    }
}

/// The running version of plugin `name`, if it runs.
fn running<'a>(statuses: &'a [PluginStatus], name: &str) -> Option<&'a PluginStatus> {
    statuses
        .iter()
        .find(|s| s.name.as_deref() == Some(name) && s.state == PluginState::Running)
}

/// The lines of `/metrics` at `metrics` naming `name` in a label value (a plugin, controller,
/// webhook path or source).
async fn series_of(metrics: &str, name: &str) -> anyhow::Result<usize> {
    let (_, text) = get(metrics, "/metrics").await?;
    let named = format!("{name}\"");
    Ok(text
        .lines()
        .filter(|line| !line.starts_with('#') && line.contains(&named))
        .count())
}

/// Deletes WasmReconciler `name` and waits until `/metrics` names it no more; the series it had.
async fn deleted(api: &Api<DynamicObject>, metrics: &str, name: &str) -> anyhow::Result<usize> {
    let before = series_of(metrics, name).await?;
    api.delete(name, &Default::default()).await?;
    while series_of(metrics, name).await? > 0 {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(before)
}

/// The guest memory gauge `name` the host at `metrics` serves.
async fn gauge(metrics: &str, name: &str) -> anyhow::Result<f64> {
    let (_, text) = get(metrics, "/metrics").await?;
    value(&parse(&text), name, &[]).ok_or_else(|| anyhow::anyhow!("no {name} in:\n{text}"))
}

#[tokio::test]
async fn tenants_filling_the_budget_leave_the_operator_its_reserve_to_load_and_upgrade()
-> anyhow::Result<()> {
    within(LIMIT, "tenants filling the guest memory budget", async {
        // WasmReconcilers are cluster-scoped: a plane of its own keeps other tests' hosts off them.
        let plane = &ControlPlane::start().await?;
        common::reconcilers::install_crd(plane).await?;
        common::install_webapp_crd(plane).await?;
        let modules = plane.create_namespace("pool-modules").await?;
        let work = plane.create_namespace("pool-work").await?;
        let pool = Pool::new(plane, &modules, "")?;
        let (probes, metrics) = (&pool.probes, &pool.metrics);
        let _host = pool
            .host(plane, &work)
            .args(["--guest-memory-budget", &format!("{}Mi", BUDGET / MI)])
            .args(["--operator-reserved-memory", &format!("{}Mi", RESERVE / MI)])
            .args(["--memory-limit", &format!("{}Mi", OPERATOR_SHARE / MI)])
            .spawn()?;
        wait_ready(probes).await;

        let api = common::reconcilers::api(plane.client().await?);
        let fit = (BUDGET - RESERVE) / TENANT_SHARE;
        let names: Vec<String> = (0..=fit).map(|i| format!("tenant-{i:03}")).collect();
        tenant(plane, &modules, "good", renamed("guest-good")?).await?;
        for name in &names[1..fit] {
            tenant(plane, &modules, name, renamed(name)?).await?;
        }
        for name in std::iter::once("good").chain(names[1..fit].iter().map(String::as_str)) {
            common::reconcilers::status_until(&api, name, |s| {
                common::reconcilers::condition(s, "Ready")["status"] == "True"
            })
            .await?;
        }
        let extra = &names[fit];
        tenant(plane, &modules, extra, renamed(extra)?).await?;
        let status = common::reconcilers::status_until(&api, extra, |s| {
            common::reconcilers::condition(s, "Degraded")["status"] == "True"
        })
        .await?;
        let degraded = common::reconcilers::condition(&status, "Degraded");
        let message = degraded["message"].as_str().unwrap_or_default();
        assert_eq!(degraded["reason"], "Exhausted", "{status}");
        assert!(
            message.contains(&format!("has 0 left unreserved for tenants' plugins ({RESERVE} bytes of it kept for the operator's plugins")),
            "{message}"
        );
        let tenants_reserved = gauge(metrics, "wasmop_guest_memory_tenant_reserved_bytes").await?;
        assert_eq!(tenants_reserved, (BUDGET - RESERVE) as f64);
        let (_, text) = get(metrics, "/metrics").await?;
        let failures = "wasmop_wasmreconciler_install_failures_total";
        let refused = value(&parse(&text), failures, &[("reason", "Exhausted")]);
        assert!(refused >= Some(1.0), "the refusal is counted: {refused:?}");
        eprintln!(
            "POOL: {fit} tenants of {} MiB reserved {} MiB of the {} MiB budget; tenant {} more refused: {}",
            TENANT_SHARE / MI,
            tenants_reserved / MI as f64,
            BUDGET / MI,
            fit + 1,
            degraded["reason"]
        );

        let reserved = gauge(metrics, "wasmop_guest_memory_reserved_bytes");
        let (reserved, webapp) = pool.operator_upgrades(plane, &work, reserved).await?;
        assert_eq!(reserved, BUDGET as f64, "tenants and the operator took the whole budget");
        let after = gauge(metrics, "wasmop_guest_memory_reserved_bytes").await?;
        assert_eq!(after, BUDGET as f64, "the old version's share went back");
        eprintln!(
            "RESERVE: with {} MiB of {} MiB reserved, the operator's plugin loaded into the {} MiB reserve and upgraded 0.1.0 -> {} (converged a WebApp); tenant good still reconciled",
            reserved / MI as f64,
            BUDGET / MI,
            RESERVE / MI,
            webapp.version.as_deref().unwrap_or_default()
        );

        let loaded_series = deleted(&api, metrics, &names[1]).await?;
        let refused_series = deleted(&api, metrics, extra).await?;
        assert!(loaded_series > 10, "a running tenant's controller has its series");
        assert!(refused_series >= 1, "a refused tenant has its load failures counted");
        let kept = series_of(metrics, "guest-good").await?;
        assert!(kept > 10, "the neighbour keeps its series");
        eprintln!(
            "SERIES: deleting a running tenant removed its {loaded_series} series and a refused one its {refused_series}; the neighbour kept its {kept}"
        );
        Ok(())
    })
    .await
}

/// The instance pool's slots a tenant's plugin with this concurrency reserves (its workers, one
/// more, no warm instances).
const WIDE: u32 = 430;

#[tokio::test]
async fn tenants_filling_the_instance_pool_leave_the_operator_its_reserve() -> anyhow::Result<()> {
    within(LIMIT, "tenants filling the instance pool", async {
        let plane = &ControlPlane::start().await?;
        common::reconcilers::install_crd(plane).await?;
        common::install_webapp_crd(plane).await?;
        let modules = plane.create_namespace("slots-modules").await?;
        let work = plane.create_namespace("slots-work").await?;
        let wide = "max-concurrent-reconciles: 500\nmax-instances: 600\n";
        let pool = Pool::new(plane, &modules, wide)?;
        let (probes, metrics) = (&pool.probes, &pool.metrics);
        let _host = pool.host(plane, &work).spawn()?;
        wait_ready(probes).await;

        // Two wide tenants take 862 of the 872 slots tenants may reserve (1000 less 128).
        let api = common::reconcilers::api(plane.client().await?);
        let wide = json!({"maxConcurrentReconciles": WIDE});
        tenant_with(
            plane,
            &modules,
            ("good", renamed("guest-good")?),
            wide.clone(),
        )
        .await?;
        tenant_with(
            plane,
            &modules,
            ("wide-00001", renamed("wide-00001")?),
            wide,
        )
        .await?;
        for name in ["good", "wide-00001"] {
            common::reconcilers::status_until(&api, name, |s| {
                common::reconcilers::condition(s, "Ready")["status"] == "True"
            })
            .await?;
        }
        let narrow = json!({"maxConcurrentReconciles": 20});
        tenant_with(
            plane,
            &modules,
            ("wide-00002", renamed("wide-00002")?),
            narrow,
        )
        .await?;
        let status = common::reconcilers::status_until(&api, "wide-00002", |s| {
            common::reconcilers::condition(s, "Degraded")["status"] == "True"
        })
        .await?;
        let degraded = common::reconcilers::condition(&status, "Degraded");
        assert_eq!(degraded["reason"], "Exhausted", "{status}");
        let tenants = gauge(metrics, "wasmop_instance_pool_tenant_reserved_instances").await?;
        assert_eq!(tenants, f64::from(2 * (WIDE + 1)));

        // The operator's plugin loads into the reserve and upgrades beside them.
        let (_, webapp) = pool
            .operator_upgrades(plane, &work, async { Ok(()) })
            .await?;
        eprintln!(
            "SLOTS: two tenants reserved {tenants} of the 872 slots tenants may take; a third was \
             refused {}; the operator's webapp loaded into the 128-slot reserve and upgraded to \
             {} (converged a WebApp); tenant good still reconciled",
            degraded["reason"],
            webapp.version.as_deref().unwrap_or_default()
        );
        Ok(())
    })
    .await
}
