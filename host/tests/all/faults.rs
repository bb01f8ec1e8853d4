//! The fault suite: the `webapp` plugin in the `wasmop` binary on the real control plane,
//! through what an operator meets on its worst day — the apiserver killed mid-watch, etcd
//! compacted under a stalled watch, throttling, a second writer fighting over the same objects,
//! twenty hot swaps under load, its CRD deleted and recreated, a namespace deleted with work in
//! flight, the host itself killed mid-reconcile. (The apiserver paused longer than the lease is
//! `fencing.rs`.)
//!
//! After each fault the case makes more changes and asserts that every WebApp converges (its
//! status observed its generation, its Deployment has its replicas and image, its Service and
//! marker ConfigMap exist), that no WebApp was lost or left half-deleted and no marker outlived
//! its WebApp, and that the host neither panicked nor exited. Each prints how long convergence
//! took after the fault. Cases run one at a time: several stop the shared apiserver.

use crate::common;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::logged::Logged;
use common::scrape::{free_address, get, wait_ready};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use wasmop::plugins::PluginStatus;
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(300);
const MARKER: &str = "webapp-marker-";
const APPLIED_BY: &str = "example.wasmop.dev/applied-by";

/// One case at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A host running webapp over one namespace, and the WebApps that should exist there.
struct Rig {
    apps: Api<DynamicObject>,
    deployments: Api<Deployment>,
    services: Api<Service>,
    configmaps: Api<ConfigMap>,
    metrics: String,
    /// The host's command line after `run`, and the kubeconfig it speaks with.
    command: (Vec<OsString>, PathBuf),
    host: Logged,
    expected: BTreeSet<String>,
}

/// How a case's host runs.
#[derive(Default)]
struct Setup {
    /// The plugin flags; `--plugin webapp.wasm` when empty.
    plugins: Vec<OsString>,
    /// Namespaces it watches beside the case's own.
    others: Vec<String>,
    /// Speak as the operator's ServiceAccount (as `deploy/` runs it) instead of the admin.
    as_operator: bool,
}

impl Rig {
    /// A namespace named for `case` and a host running webapp over it as `setup` says.
    async fn start(plane: &ControlPlane, case: &str, setup: Setup) -> anyhow::Result<Self> {
        common::install_webapp_crd(plane).await?;
        let namespace = plane.create_namespace(case).await?;
        let client = plane.client().await?;
        let mut args = match setup.plugins.is_empty() {
            true => vec!["--plugin".into(), common::component("webapp").into()],
            false => setup.plugins,
        };
        let watched = [namespace.clone()].into_iter().chain(setup.others);
        let metrics = free_address();
        for arg in [
            "--namespaces",
            &watched.collect::<Vec<_>>().join(","),
            "--metrics-bind-address",
            &metrics,
            "--health-probe-bind-address",
            "0",
        ] {
            args.push(arg.into());
        }
        let kubeconfig = match setup.as_operator {
            true => common::account::kubeconfig(plane).await?,
            false => plane.kubeconfig_path().to_owned(),
        };
        let command = (args, kubeconfig);
        let rig = Rig {
            apps: common::webapps(client.clone(), &namespace),
            deployments: Api::namespaced(client.clone(), &namespace),
            services: Api::namespaced(client.clone(), &namespace),
            configmaps: Api::namespaced(client, &namespace),
            host: spawn(&command)?,
            metrics,
            command,
            expected: BTreeSet::new(),
        };
        wait_ready(&rig.metrics).await;
        Ok(rig)
    }

    /// Kills the host with SIGKILL and starts it again.
    async fn kill_and_restart(&mut self) -> anyhow::Result<()> {
        self.host.child.start_kill()?;
        self.host.child.wait().await?;
        self.host = spawn(&self.command)?;
        Ok(())
    }

    fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let pid = self
            .host
            .child
            .id()
            .ok_or_else(|| anyhow::anyhow!("no host"))?;
        let status = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill {signal} {pid}");
        Ok(())
    }

    async fn create(&mut self, names: impl IntoIterator<Item = String>) -> anyhow::Result<()> {
        let names: Vec<String> = names.into_iter().collect();
        let apps = self.apps.clone();
        stream::iter(names.clone())
            .map(|name| {
                let apps = apps.clone();
                async move {
                    apps.create(&PostParams::default(), &common::webapp(&name))
                        .await
                }
            })
            .buffer_unordered(8)
            .try_collect::<Vec<_>>()
            .await?;
        self.expected.extend(names);
        Ok(())
    }

    async fn scale(&self, name: &str, replicas: i64) -> anyhow::Result<()> {
        let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
        self.apps
            .patch(name, &PatchParams::default(), &patch)
            .await?;
        Ok(())
    }

    async fn delete(&mut self, name: &str) -> anyhow::Result<()> {
        self.apps.delete(name, &DeleteParams::default()).await?;
        self.expected.remove(name);
        Ok(())
    }

    /// What is not as it should be, or `None` once everything converged.
    async fn unconverged(&self) -> anyhow::Result<Option<String>> {
        let list = Default::default();
        let apps = self.apps.list(&list).await?.items;
        let deployments: HashMap<String, Deployment> = self
            .deployments
            .list(&list)
            .await?
            .into_iter()
            .map(|d| (d.metadata.name.clone().unwrap_or_default(), d))
            .collect();
        let services: HashSet<String> = self
            .services
            .list(&list)
            .await?
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect();
        let markers: HashSet<String> = self
            .configmaps
            .list(&list)
            .await?
            .into_iter()
            .filter_map(|c| c.metadata.name?.strip_prefix(MARKER).map(str::to_owned))
            .collect();
        let mut pending = Vec::new();
        let live: BTreeSet<String> = apps
            .iter()
            .filter_map(|a| a.metadata.name.clone())
            .collect();
        if live != self.expected {
            let lost: Vec<_> = self.expected.difference(&live).collect();
            let extra: Vec<_> = live.difference(&self.expected).collect();
            pending.push(format!("WebApps missing {lost:?}, not yet gone {extra:?}"));
        }
        for app in &apps {
            let name = app.metadata.name.clone().unwrap_or_default();
            if let Some(problem) = app_problem(app, deployments.get(&name), &services, &markers) {
                pending.push(format!("{name}: {problem}"));
            }
        }
        for marker in markers.iter().filter(|m| !live.contains(*m)) {
            pending.push(format!("the marker of {marker} outlived its WebApp"));
        }
        Ok(pending
            .first()
            .map(|first| format!("{} pending, first: {first}", pending.len())))
    }

    /// Waits until everything converged; prints how long that took after `fault` at `since`.
    async fn converge(&self, fault: &str, since: Instant) -> anyhow::Result<Duration> {
        let mut last = String::new();
        let poll = async {
            loop {
                match self.unconverged().await {
                    Ok(None) => return,
                    Ok(Some(pending)) => last = pending,
                    Err(error) => last = error.to_string(),
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        };
        if tokio::time::timeout(LIMIT / 2, poll).await.is_err() {
            anyhow::bail!("{fault}: not converged: {last}");
        }
        let took = since.elapsed();
        println!(
            "FAULT {fault}: {} WebApps converged {:.1} s after it; objects lost: 0",
            self.expected.len(),
            took.as_secs_f64()
        );
        Ok(took)
    }

    /// The statuses `/plugins` reports.
    async fn plugins(&self) -> anyhow::Result<Vec<PluginStatus>> {
        Ok(serde_json::from_str(
            &get(&self.metrics, "/plugins").await?.1,
        )?)
    }
}

/// `wasmop run` with `args`, speaking with `kubeconfig`.
fn spawn((args, kubeconfig): &(Vec<OsString>, PathBuf)) -> anyhow::Result<Logged> {
    let mut command = common::host_as(kubeconfig);
    command.args(args);
    Logged::spawn("wasmop", command)
}

/// What is wrong with `app`, if anything.
fn app_problem(
    app: &DynamicObject,
    deployment: Option<&Deployment>,
    services: &HashSet<String>,
    markers: &HashSet<String>,
) -> Option<&'static str> {
    let name = app.metadata.name.as_deref().unwrap_or_default();
    let spec = &app.data["spec"];
    let template = deployment.map(|d| &d.spec);
    let image = template
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.as_deref());
    let replicas = template.and_then(|s| s.replicas).map(i64::from);
    if app.metadata.deletion_timestamp.is_some() {
        Some("still being deleted")
    } else if app.data["status"]["observedGeneration"].as_i64() != app.metadata.generation {
        Some("status has not observed its generation")
    } else if replicas != spec["replicas"].as_i64() || image != spec["image"].as_str() {
        Some("its Deployment does not match its spec")
    } else if !services.contains(name) {
        Some("no Service")
    } else if !markers.contains(name) {
        Some("no marker")
    } else {
        None
    }
}

fn names(prefix: &str, range: std::ops::Range<usize>) -> impl Iterator<Item = String> {
    range.map(move |i| format!("{prefix}-{i}"))
}

#[tokio::test]
async fn the_apiserver_killed_and_restarted_mid_watch() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    within(LIMIT, "apiserver restart", async {
        let plane = &shared_by(module_path!()).await?;
        let mut rig = Rig::start(plane, "restart", Setup::default()).await?;
        rig.create(names("app", 0..20)).await?;
        rig.converge("start", Instant::now()).await?;

        plane.restart_apiserver().await?;
        let after = Instant::now();
        for name in names("app", 0..10) {
            rig.scale(&name, 2).await?;
        }
        for name in names("app", 10..15).collect::<Vec<_>>() {
            rig.delete(&name).await?;
        }
        rig.create(names("app", 20..25)).await?;
        rig.converge("kube-apiserver killed and restarted mid-watch", after)
            .await?;
        rig.host.assert_healthy()
    })
    .await
}

#[tokio::test]
async fn a_stalled_watch_resumes_after_etcd_compaction_by_relisting() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    within(LIMIT, "etcd compaction", async {
        let plane = &shared_by(module_path!()).await?;
        let mut rig = Rig::start(plane, "compaction", Setup::default()).await?;
        rig.create(names("app", 0..20)).await?;
        rig.converge("start", Instant::now()).await?;

        rig.signal("-STOP")?;
        for name in names("app", 5..20) {
            rig.scale(&name, 3).await?;
        }
        for name in names("app", 0..5).collect::<Vec<_>>() {
            rig.delete(&name).await?;
        }
        rig.create(names("app", 20..25)).await?;
        let revision = plane.compact_etcd().await?;
        plane.restart_apiserver().await?;
        rig.signal("-CONT")?;
        let after = Instant::now();
        rig.converge("etcd compacted under a stalled watch", after).await?;
        let expired = rig.host.count("too old resource version") + rig.host.count("410");
        println!("compacted at revision {revision}; the host's watches reported 410 Gone {expired} times and relisted");
        anyhow::ensure!(expired > 0, "no watch resumed from the compacted revision");
        rig.host.assert_healthy()
    })
    .await
}

/// The apiserver's count of requests it turned away with 429 for being over its in-flight limit.
async fn throttled(client: &kube::Client) -> anyhow::Result<f64> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_terminations_total{"))
        .filter(|l| l.contains(r#"code="429""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

#[tokio::test]
async fn throttled_by_a_tiny_inflight_limit() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    within(LIMIT, "throttling", async {
        let flags = [
            "--max-requests-inflight=1",
            "--max-mutating-requests-inflight=1",
            "--enable-priority-and-fairness=false",
        ];
        let plane = ControlPlane::start_tuned(&flags).await?;
        let client = plane.client().await?;
        let mut rig = Rig::start(
            &plane,
            "throttled",
            Setup {
                as_operator: true,
                ..Setup::default()
            },
        )
        .await?;
        let before = throttled(&client).await?;
        let started = Instant::now();
        rig.create(names("app", 0..30)).await?;
        for name in names("app", 0..10) {
            rig.scale(&name, 2).await?;
        }
        rig.converge(
            "one request in flight at a time (429 with Retry-After)",
            started,
        )
        .await?;
        let answered = throttled(&client).await? - before;
        println!("the apiserver answered {answered} requests 429 meanwhile");
        anyhow::ensure!(answered > 0.0, "nothing was throttled");
        rig.host.assert_healthy()
    })
    .await
}

#[tokio::test]
async fn a_second_writer_fights_over_the_same_deployments() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    within(LIMIT, "a second writer", async {
        let plane = &shared_by(module_path!()).await?;
        let mut rig = Rig::start(plane, "fight", Setup::default()).await?;
        rig.create(names("app", 0..10)).await?;
        rig.converge("start", Instant::now()).await?;

        let fighter = PatchParams::apply("fighter").force();
        let started = Instant::now();
        let mut applied = 0;
        for round in 0..15 {
            for name in names("app", 0..10) {
                let theirs = json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": name, "labels": {"fighter.example/round": round.to_string()},
                                 "annotations": {"fighter.example/owned": "yes"}},
                    "spec": {"replicas": 5},
                });
                rig.deployments.patch(&name, &fighter, &Patch::Apply(&theirs)).await?;
                applied += 1;
            }
            if round == 7 {
                for name in names("app", 0..10) {
                    rig.scale(&name, 2).await?;
                }
            }
        }
        let after = Instant::now();
        println!("the fighter force-applied replicas 5 {applied} times in {:.1} s", started.elapsed().as_secs_f64());
        rig.converge("a second field manager fighting over spec.replicas", after).await?;
        for deployment in rig.deployments.list(&Default::default()).await? {
            let meta = &deployment.metadata;
            let name = meta.name.clone().unwrap_or_default();
            let theirs = meta.annotations.as_ref().and_then(|a| a.get("fighter.example/owned"));
            let label = meta.labels.as_ref().and_then(|l| l.get("fighter.example/round"));
            anyhow::ensure!(theirs.is_some_and(|v| v == "yes"), "{name}: the fighter's annotation was overwritten");
            anyhow::ensure!(label.is_some_and(|v| v == "14"), "{name}: the fighter's label was overwritten");
        }
        rig.host.assert_healthy()
    })
    .await
}

/// Waits until `/plugins` says webapp runs `version`.
async fn running(rig: &Rig, version: &str) -> anyhow::Result<()> {
    loop {
        let plugins = rig.plugins().await?;
        if plugins
            .iter()
            .any(|p| p.version.as_deref() == Some(version) && p.last_error.is_none())
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn twenty_hot_swaps_under_load() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    within(LIMIT, "twenty hot swaps", async {
        let plane = &shared_by(module_path!()).await?;
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("webapp.wasm");
        let versions = [
            ("0.1.0", common::component("webapp")),
            ("0.2.0", common::component("webapp-v2")),
        ];
        let put = |module: &std::path::Path| -> anyhow::Result<()> {
            let staged = dir.path().join(".webapp.tmp");
            std::fs::copy(module, &staged)?;
            std::fs::rename(&staged, &file)?;
            Ok(())
        };
        put(&versions[1].1)?;
        let setup = Setup {
            plugins: vec!["--plugin-dir".into(), dir.path().into()],
            ..Setup::default()
        };
        let mut rig = Rig::start(plane, "swaps", setup).await?;
        rig.create(names("app", 0..40)).await?;
        rig.converge("start", Instant::now()).await?;

        let started = Instant::now();
        let mut changes = 0;
        for swap in 1..=20 {
            let (version, module) = &versions[(swap + 1) % 2];
            put(module)?;
            for i in 0..4 {
                let name = format!("app-{}", (swap * 4 + i) % 40);
                rig.scale(&name, (swap % 5 + 1) as i64).await?;
                changes += 1;
            }
            running(&rig, version).await?;
        }
        // Only 0.2.0 rewrites a Deployment another version stamped, so the swaps end on it.
        let last = format!("webapp/{}", versions[1].0);
        println!(
            "20 swaps, each awaited until /plugins showed it, with {changes} changes: {:.1} s",
            started.elapsed().as_secs_f64()
        );
        rig.converge("20 hot swaps under load (after the last)", Instant::now())
            .await?;
        // 0.2.0 queued every WebApp once when it took over; it restamps each in turn.
        loop {
            let deployments = rig.deployments.list(&Default::default()).await?;
            let stale = deployments.iter().find(|d| {
                let stamp = d
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(APPLIED_BY));
                stamp != Some(&last)
            });
            let Some(stale) = stale else { break };
            println!(
                "{:?} still applied by an older version",
                stale.metadata.name
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        rig.host.assert_healthy()
    })
    .await
}

/// Drops the finalizers of WebApps that earlier cases' hosts (gone now) left behind, so
/// deleting the CRD waits only for this case's host.
async fn release_other_webapps(plane: &ControlPlane, rig: &Rig) -> anyhow::Result<()> {
    let client = plane.client().await?;
    let kind = kube::api::GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp");
    let resource = kube::core::ApiResource::from_gvk_with_plural(&kind, "webapps");
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    for app in all.list(&Default::default()).await? {
        let namespace = app.metadata.namespace.clone().unwrap_or_default();
        if rig.apps.namespace() == Some(namespace.as_str()) {
            continue;
        }
        let theirs: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &namespace, &resource);
        let name = app.metadata.name.unwrap_or_default();
        theirs
            .patch(&name, &PatchParams::default(), &release)
            .await?;
    }
    Ok(())
}

#[tokio::test]
async fn its_crd_deleted_and_recreated_while_it_runs() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    within(LIMIT, "CRD deleted and recreated", async {
        let plane = &shared_by(module_path!()).await?;
        let mut rig = Rig::start(plane, "crd", Setup::default()).await?;
        rig.create(names("app", 0..5)).await?;
        rig.converge("start", Instant::now()).await?;

        release_other_webapps(plane, &rig).await?;
        let crds: Api<CustomResourceDefinition> = Api::all(plane.client().await?);
        crds.delete("webapps.example.wasmop.dev", &DeleteParams::default())
            .await?;
        rig.expected.clear();
        let degraded = loop {
            let plugins = rig.plugins().await?;
            if let Some(reason) = plugins.iter().find_map(|p| p.degraded.clone()) {
                break reason;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        println!("while its CRD is gone, webapp reports: {degraded}");
        anyhow::ensure!(degraded.contains("WebApp"), "{degraded}");
        while crds.get_opt("webapps.example.wasmop.dev").await?.is_some() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let markers = rig.configmaps.list(&Default::default()).await?.into_iter();
        let markers: Vec<_> = markers
            .filter_map(|c| c.metadata.name)
            .filter(|n| n.starts_with(MARKER))
            .collect();
        anyhow::ensure!(
            markers.is_empty(),
            "finalizers left markers behind: {markers:?}"
        );

        common::install_webapp_crd(plane).await?;
        let after = Instant::now();
        rig.create(names("again", 0..5)).await?;
        rig.converge("its CRD deleted and recreated", after).await?;
        while rig.plugins().await?.iter().any(|p| p.degraded.is_some()) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        rig.host.assert_healthy()
    })
    .await
}

#[tokio::test]
async fn a_namespace_deleted_with_work_in_flight() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    within(LIMIT, "a namespace deleted", async {
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let doomed = plane.create_namespace("doomed").await?;
        let mut rig = Rig::start(
            plane,
            "survivor",
            Setup {
                others: vec![doomed.clone()],
                ..Setup::default()
            },
        ).await?;
        let doomed_apps = common::webapps(client.clone(), &doomed);
        for name in names("doomed", 0..10) {
            doomed_apps.create(&PostParams::default(), &common::webapp(&name)).await?;
        }
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces.delete(&doomed, &DeleteParams::default()).await?;
        let after = Instant::now();
        rig.create(names("app", 0..10)).await?;
        rig.converge("a namespace deleted with work in flight (this namespace kept working)", after).await?;

        // The test control plane runs no namespace controller: do its work, as it would.
        for app in doomed_apps.list(&Default::default()).await? {
            doomed_apps.delete(&app.metadata.name.unwrap_or_default(), &DeleteParams::default()).await?;
        }
        while !doomed_apps.list(&Default::default()).await?.items.is_empty() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let leftovers: Api<ConfigMap> = Api::namespaced(client.clone(), &doomed);
        let markers = leftovers.list(&Default::default()).await?.into_iter();
        let markers: Vec<_> = markers.filter_map(|c| c.metadata.name).filter(|n| n.starts_with(MARKER)).collect();
        anyhow::ensure!(markers.is_empty(), "markers left behind: {markers:?}");
        let finalize = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": doomed}, "spec": {"finalizers": []}});
        let request = http::Request::put(format!("/api/v1/namespaces/{doomed}/finalize"))
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&finalize)?)?;
        client.request_text(request).await?;
        while namespaces.get_opt(&doomed).await?.is_some() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let depth = loop {
            let text = get(&rig.metrics, "/metrics").await?.1;
            let depth = text.lines().find(|l| l.starts_with("workqueue_depth{")).and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
            if depth == Some(0.0) {
                break depth;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        println!("the doomed namespace's WebApps were finalized and its namespace went; queue depth {depth:?}");
        rig.create(names("later", 0..3)).await?;
        rig.converge("after the namespace went", Instant::now()).await?;
        rig.host.assert_healthy()
    })
    .await
}

#[tokio::test]
async fn the_host_killed_mid_reconcile_and_restarted() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    within(LIMIT, "SIGKILL mid-reconcile", async {
        let plane = &shared_by(module_path!()).await?;
        let mut rig = Rig::start(plane, "killed", Setup::default()).await?;
        rig.create(names("app", 0..30)).await?;
        rig.converge("start", Instant::now()).await?;
        // Deletions, scale-ups and new WebApps, and the kill while the host works on them.
        rig.create(names("app", 30..40)).await?;
        for name in names("app", 0..10).collect::<Vec<_>>() {
            rig.delete(&name).await?;
        }
        for name in names("app", 10..20) {
            rig.scale(&name, 3).await?;
        }
        let in_flight = rig.unconverged().await?;
        rig.kill_and_restart().await?;
        let after = Instant::now();
        println!(
            "killed with {}",
            in_flight.as_deref().unwrap_or("nothing pending")
        );
        anyhow::ensure!(
            in_flight.is_some(),
            "the host was killed with nothing in flight"
        );
        rig.converge(
            "the host killed with SIGKILL mid-reconcile and restarted",
            after,
        )
        .await?;
        rig.host.assert_healthy()
    })
    .await
}
