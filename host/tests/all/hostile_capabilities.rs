//! Every capability a plugin has beside its reconcile calls, attacked on the real control plane
//! as a malicious plugin author would (`tests/guests/overreach`, `converter`, `narrow`): webhooks
//! on kinds it was never granted, writes from a webhook call, the conversion of another
//! operator's custom resource, owner references the garbage collector would act on (with
//! kube-controller-manager's garbage collector running), events in namespaces it may not write,
//! requests of its own client-go clients (`tests/guests/reach`) beyond what it declared (and a
//! permission on a kind the apiserver does not serve, which must not stop it),
//! a module that names itself after a more privileged plugin, and a plugin that would hold the
//! guest memory others need. Each test checks what a user would: the refusal and its reason,
//! that nothing reached the apiserver, and that what another operator or plugin owns is intact.
//! Each prints what it measured.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};
use wasmop::cache::{Cache, Informer};
use wasmop::contract::object::{GroupVersionKind, ObjectKey};
use wasmop::contract::{AdmissionRequest, Environment, Refusal};
use wasmop::runtime::{DispatchError, Plugin, PluginOptions, Runtime, RuntimeConfig, RuntimeError};
use wasmop_envtest::{ControlPlane, shared_by, within};

use common::scrape::{free_address, get};

const LIMIT: Duration = Duration::from_secs(300);

/// One test at a time: they count what the shared apiserver received.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The policy of the attacks: ConfigMaps and nothing else.
const CONFIGMAPS_ONLY: &str = "allow:\n  - kinds: [core/ConfigMap]\n    \
                               verbs: [get, list, watch, create, patch, delete]\n";

/// A policy allowing anything and naming guest-converter's conversion of Things.
const CONVERTER: &str = "conversions:\n  other.example.com/Thing: guest-converter\n";

/// `other.example.com`'s Thing: another operator's custom resource.
const THING_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.other.example.com}
spec:
  group: other.example.com
  names: {kind: Thing, plural: things, singular: thing}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

/// The conversion another operator set on the Thing CRD.
const OTHERS_CONVERSION: &str = "https://converter.other-operator.invalid/convert";

fn configmap_kind() -> GroupVersionKind {
    GroupVersionKind::gvk("", "v1", "ConfigMap")
}

/// A runtime whose operator policy is the YAML `policy`.
fn runtime_under(policy: &str) -> Runtime {
    let ceiling = wasmop::config::parse_policy(policy).expect("a valid policy");
    Runtime::new(RuntimeConfig {
        ceiling,
        ..RuntimeConfig::default()
    })
    .expect("the runtime starts")
}

/// Loads component `name` into `runtime` with the production cache-backed client and events.
async fn load(
    runtime: &Runtime,
    kube: &kube::Client,
    cache: &Arc<Cache>,
    name: &str,
) -> Result<Plugin, RuntimeError> {
    common::load_on_cluster(runtime, (kube, cache), name, PluginOptions::default()).await
}

/// A cache of every namespace's ConfigMaps, synced.
async fn configmap_cache(kube: &kube::Client) -> anyhow::Result<(Arc<Cache>, Arc<Informer>)> {
    let cache = Arc::new(Cache::new(kube.clone()));
    let informer = cache.informer(&configmap_kind()).await?;
    informer.wait_synced().await;
    Ok((cache, informer))
}

/// Creates ConfigMap `name` in `namespace` with `labels`, and waits until `informer` holds it.
async fn configmap(
    kube: &kube::Client,
    informer: &Informer,
    (namespace, name): (&str, &str),
    labels: Value,
) -> anyhow::Result<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(kube.clone(), namespace);
    let object = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))?;
    let created = api.create(&PostParams::default(), &object).await?;
    while informer.get(&ObjectKey::new(namespace, name)).is_none() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(created)
}

/// Writes `text` as a policy file in `dir`.
fn policy_file(dir: &Path, text: &str) -> anyhow::Result<std::path::PathBuf> {
    let path = dir.join("policy.yaml");
    std::fs::write(&path, text)?;
    Ok(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_on_kinds_never_granted_are_refused_at_load_and_never_registered()
-> anyhow::Result<()> {
    within(LIMIT, "webhooks on Secrets and Pods", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("overreach").await?;
        let kube = plane.client().await?;
        let (cache, _informer) = configmap_cache(&kube).await?;

        let refused = load(&runtime_under(CONFIGMAPS_ONLY), &kube, &cache, "guest-overreach").await;
        let Err(RuntimeError::Refused { reason, .. }) = refused else {
            panic!("guest-overreach loaded: {:?}", refused.map(|p| p.name().to_owned()));
        };
        println!("OVERREACH refused at load: {reason}");
        assert!(reason.contains("validating webhook on Secret.v1"), "{reason}");
        let anything = load(&runtime_under(""), &kube, &cache, "guest-overreach").await;
        let Err(RuntimeError::Refused { reason, .. }) = anything else {
            panic!("guest-overreach loaded without a policy");
        };
        assert!(reason.contains("describe() declared no such permission"), "{reason}");

        let dir = tempfile::tempdir()?;
        let policy = policy_file(dir.path(), CONFIGMAPS_ONLY)?;
        let plugins = dir.path().join("plugins");
        std::fs::create_dir(&plugins)?;
        std::fs::copy(
            common::component("guest-overreach"),
            plugins.join("guest-overreach.wasm"),
        )?;
        let (metrics, webhooks) = (free_address(), free_address());
        let _host = common::host(plane)
            .arg("--plugin-dir")
            .arg(&plugins)
            .arg("--policy")
            .arg(&policy)
            .args(["--namespaces", &namespace, "--health-probe-bind-address", "0"])
            .args(["--metrics-bind-address", &metrics])
            .args(["--webhook-bind-address", &webhooks])
            .args(["--webhook-url", &format!("https://{webhooks}")])
            .args(["--webhook-configuration-name", "overreach"])
            .spawn()?;
        let status = common::scrape::plugins_until(&metrics, |body| body.contains("validating webhook")).await?;
        assert!(status.contains("Secret.v1"), "{status}");
        let (_, scraped) = get(&metrics, "/metrics").await?;
        let failures = common::scrape::parse(&scraped)["wasmop_plugin_load_failures_total"]
            .iter()
            .map(|(_, value)| value)
            .sum::<f64>();
        assert!(failures >= 1.0, "the refusal is counted");
        for kind in ["validatingwebhookconfiguration", "mutatingwebhookconfiguration"] {
            let found = plane.run_kubectl(&["get", kind, "overreach"], None).await;
            assert!(found.is_err(), "{kind} overreach exists: {found:?}");
        }
        println!("OVERREACH in wasmop run: refused ({failures} load failure counted), no webhook configuration written");
        Ok(())
    })
    .await
}

/// An admission request for the create of ConfigMap `name` in `namespace`.
fn configmap_create(namespace: &str, name: &str) -> AdmissionRequest {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace}});
    common::admission_create(configmap_kind(), ObjectKey::new(namespace, name), object)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_calls_read_the_cache_only() -> anyhow::Result<()> {
    within(LIMIT, "writes from a defaulting webhook", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("webhook-writes").await?;
        let kube = plane.client().await?;
        let (cache, informer) = configmap_cache(&kube).await?;
        configmap(&kube, &informer, (&namespace, "victim"), json!({})).await?;
        let plugin = load(&runtime_under(CONVERTER), &kube, &cache, "guest-converter").await?;
        let mut audit = plane.audit_log();
        let before = audit.read_new()?.len();

        let answer = plugin.default(&configmap_create(&namespace, "new")).await?;
        let defaulted: Value = serde_json::from_str(&answer.expect("defaulted"))?;
        let wrote = &defaulted["metadata"]["annotations"]["converter.wasmop.dev/write"];
        assert_eq!(wrote, "forbidden", "the webhook's patch: {defaulted}");
        assert!(plugin.refusals()[Refusal::EventDropped as usize].1 >= 1);

        tokio::time::sleep(Duration::from_secs(1)).await;
        let victim: Api<ConfigMap> = Api::namespaced(kube.clone(), &namespace);
        let labels = victim
            .get("victim")
            .await?
            .metadata
            .labels
            .unwrap_or_default();
        assert!(!labels.contains_key("pwned"), "{labels:?}");
        let events: Api<Event> = Api::namespaced(kube.clone(), &namespace);
        let recorded = events.list(&ListParams::default()).await?.items.len();
        assert_eq!(recorded, 0, "the webhook's event was published");
        let writes = audit
            .read_new()?
            .into_iter()
            .filter(|e| e.namespace == namespace && e.is_write() && e.resource != "namespaces")
            .count();
        assert_eq!(writes, 0, "writes reached the apiserver");
        println!(
            "WEBHOOK WRITES: the defaulting webhook's patch was refused (forbidden) and its event \
             dropped; 0 writes in {namespace} reached the apiserver ({before} audit events before)"
        );
        Ok(())
    })
    .await
}

/// The Thing CRD's conversion webhook URL and the host's mark on it, if any.
async fn thing_conversion(plane: &ControlPlane) -> anyhow::Result<(String, String, Value)> {
    let crd = plane
        .run_kubectl(
            &["get", "crd", "things.other.example.com", "-o", "json"],
            None,
        )
        .await?;
    let crd: Value = serde_json::from_str(&crd)?;
    let conversion = &crd["spec"]["conversion"];
    let strategy = conversion["strategy"].as_str().unwrap_or("None").to_owned();
    let url = conversion["webhook"]["clientConfig"]["url"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mark = crd["metadata"]["annotations"]["wasmop.dev/converted-by"].clone();
    Ok((strategy, url, mark))
}

/// Sets the Thing CRD's conversion to another operator's webhook, or to `None`.
async fn set_thing_conversion(plane: &ControlPlane, others: bool) -> anyhow::Result<()> {
    let conversion = match others {
        true => json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": OTHERS_CONVERSION}, "conversionReviewVersions": ["v1"]}}),
        false => json!({"strategy": "None", "webhook": null}),
    };
    let patch = json!({"spec": {"conversion": conversion}}).to_string();
    let args = [
        "patch",
        "crd",
        "things.other.example.com",
        "--type=merge",
        "-p",
        &patch,
    ];
    plane.run_kubectl(&args, None).await?;
    Ok(())
}

/// `wasmop run` with `plugin` under `policy`, its webhooks configured as `converter`; the
/// address of its metrics.
fn converter_host(
    plane: &ControlPlane,
    (namespace, policy): (&str, &Path),
    plugin: &str,
) -> anyhow::Result<(tokio::process::Child, String)> {
    let (metrics, webhooks) = (free_address(), free_address());
    let host = common::host(plane)
        .args(["--plugin", &common::component(plugin).display().to_string()])
        .arg("--policy")
        .arg(policy)
        .args([
            "--namespaces",
            namespace,
            "--health-probe-bind-address",
            "0",
        ])
        .args(["--metrics-bind-address", &metrics])
        .args(["--webhook-bind-address", &webhooks])
        .args(["--webhook-url", &format!("https://{webhooks}")])
        .args(["--webhook-configuration-name", "converter"])
        // Its defaulting webhook on ConfigMaps must not refuse other tests' creates once the
        // host is gone.
        .args(["--webhook-failure-policy", "Ignore"])
        .spawn()?;
    Ok((host, metrics))
}

/// Waits until the host configured as `converter` has written its mutating configuration (the
/// conversions are set in the same pass, after it) and a moment more.
async fn configured(plane: &ControlPlane) -> anyhow::Result<()> {
    let args = ["get", "mutatingwebhookconfiguration", "converter"];
    while plane.run_kubectl(&args, None).await.is_err() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversion_is_owned_by_the_plugin_the_policy_names_and_never_taken_from_another()
-> anyhow::Result<()> {
    within(LIMIT, "conversions", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("conversions").await?;
        let dir = tempfile::tempdir()?;
        let crd = dir.path().join("thing.yaml");
        std::fs::write(&crd, THING_CRD)?;
        plane.install_crds(&[&crd]).await?;
        let kube = plane.client().await?;
        let (cache, _informer) = configmap_cache(&kube).await?;

        let unnamed = format!("{CONFIGMAPS_ONLY}  - kinds: [other.example.com/Thing]\n    verbs: [get, list, watch, update]\n");
        let refused = load(&runtime_under(&unnamed), &kube, &cache, "guest-converter").await;
        let Err(RuntimeError::Refused { reason, .. }) = refused else {
            panic!("guest-converter loaded without its conversion named");
        };
        assert!(reason.contains("asks to convert Thing.other.example.com/v1") && reason.contains("operator's policy"), "{reason}");
        println!("CONVERSION not named by the policy: refused at load: {reason}");

        let named = format!("{unnamed}conversions:\n  other.example.com/Thing: guest-converter\n");
        let policy = policy_file(dir.path(), &named)?;
        set_thing_conversion(plane, true).await?;
        let (host, metrics) = converter_host(plane, (&namespace, &policy), "guest-converter")?;
        common::scrape::plugins_until(&metrics, |body| body.contains("guest-converter") && body.contains("running")).await?;
        configured(plane).await?;
        let (strategy, url, mark) = thing_conversion(plane).await?;
        assert_eq!((strategy.as_str(), url.as_str()), ("Webhook", OTHERS_CONVERSION), "taken from another");
        assert!(mark.is_null(), "{mark}");
        println!("CONVERSION set by another operator: left as it was ({url})");
        common::terminate(host).await?;

        set_thing_conversion(plane, false).await?;
        let (host, metrics) = converter_host(plane, (&namespace, &policy), "guest-converter")?;
        common::scrape::plugins_until(&metrics, |body| body.contains("running")).await?;
        let (strategy, url, mark) = loop {
            let found = thing_conversion(plane).await?;
            if found.0 == "Webhook" {
                break found;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert!(url.ends_with("/convert/guest-converter"), "{strategy} {url}");
        assert_eq!(mark, "converter/guest-converter");
        common::terminate(host).await?;

        let (host, metrics) = converter_host(plane, (&namespace, &policy), "guest-good")?;
        common::scrape::plugins_until(&metrics, |body| body.contains("guest-good")).await?;
        let reverted = loop {
            let found = thing_conversion(plane).await?;
            if found.0 == "None" {
                break found;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert!(reverted.2.is_null(), "the mark stays: {:?}", reverted.2);
        common::terminate(host).await?;
        println!("CONVERSION from None: taken ({url}), and set back to None once the plugin was gone");
        plane
            .run_kubectl(&["delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration", "converter", "--ignore-not-found"], None)
            .await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owner_references_reach_only_objects_the_plugin_reads_and_the_garbage_collector_spares_the_rest()
-> anyhow::Result<()> {
    within(LIMIT, "owner references", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let _collector = plane.start_garbage_collector().await?;
        let namespace = plane.create_namespace("owners").await?;
        let elsewhere = plane.create_namespace("owners-elsewhere").await?;
        let kube = plane.client().await?;
        let (cache, informer) = configmap_cache(&kube).await?;
        let ns = namespace.as_str();
        for name in ["victim-a", "victim-b", "orphan-victim-a", "adopt-victim-b"] {
            configmap(&kube, &informer, (ns, name), json!({})).await?;
        }
        let label = json!({"converter.wasmop.dev/elsewhere": "yes"});
        configmap(&kube, &informer, (&elsewhere, "owner-elsewhere"), label).await?;
        let plugin = load(&runtime_under(CONVERTER), &kube, &cache, "guest-converter").await?;
        let mut audit = plane.audit_log();
        audit.read_new()?;

        let attempts = match plugin.reconcile(&ObjectKey::new(ns, "orphan-victim-a")).await {
            Err(DispatchError::Failed { message, .. }) => serde_json::from_str::<Value>(&message)?,
            other => panic!("expected the guest's report, got {other:?}"),
        };
        println!("OWNERS attempts: {attempts}");
        for attempt in attempts.as_array().unwrap() {
            assert_ne!(attempt["result"], "ok", "{attempt}");
        }
        let patched_victim = audit
            .read_new()?
            .into_iter()
            .filter(|e| e.name == "victim-a" && e.is_write())
            .count();
        assert_eq!(patched_victim, 0, "a refused owner reference reached the apiserver");

        plugin.reconcile(&ObjectKey::new(ns, "adopt-victim-b")).await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(kube.clone(), ns);
        let owners = configmaps.get("victim-b").await?.metadata.owner_references.unwrap_or_default();
        assert_eq!(owners.len(), 1, "the real owner was set");
        configmaps.delete("adopt-victim-b", &Default::default()).await?;
        let collected = std::time::Instant::now();
        while configmaps.get_opt("victim-b").await?.is_some() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let waited = collected.elapsed();
        tokio::time::sleep(waited.max(Duration::from_secs(2))).await;
        assert!(configmaps.get_opt("victim-a").await?.is_some(), "victim-a was collected");
        println!(
            "OWNERS: 5 forged owner references refused, 0 sent; the real owner's dependent was \
             collected {:.1} s after its owner's deletion; victim-a is still there after as long again",
            waited.as_secs_f64()
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_land_only_where_the_plugin_may_write_and_a_repeat_joins_its_series()
-> anyhow::Result<()> {
    within(LIMIT, "events elsewhere", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let home = "narrow-home";
        let _ = plane
            .run_kubectl(&["create", "namespace", home], None)
            .await;
        let elsewhere = plane.create_namespace("narrow-elsewhere").await?;
        let kube = plane.client().await?;
        let (cache, informer) = configmap_cache(&kube).await?;
        configmap(&kube, &informer, (&elsewhere, "seen"), json!({})).await?;
        configmap(&kube, &informer, (home, "seen"), json!({})).await?;
        let plugin = load(&runtime_under(""), &kube, &cache, "guest-narrow").await?;
        plugin
            .reconcile(&ObjectKey::new(&elsewhere, "seen"))
            .await?;
        plugin.reconcile(&ObjectKey::new(home, "seen")).await?;

        let at_home: Api<Event> = Api::namespaced(kube.clone(), home);
        let regarding_seen = |events: Vec<Event>| {
            events
                .into_iter()
                .filter(|e| e.involved_object.name.as_deref() == Some("seen"))
                .collect::<Vec<_>>()
        };
        while regarding_seen(at_home.list(&ListParams::default()).await?.items).is_empty() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let away: Api<Event> = Api::namespaced(kube.clone(), &elsewhere);
        let published = regarding_seen(away.list(&ListParams::default()).await?.items);
        assert_eq!(
            published.len(),
            0,
            "an event was published where the plugin may not write"
        );
        assert_eq!(plugin.refusals()[Refusal::EventDropped as usize].1, 1);

        // The same event again joins the first one's series: one Event, counted twice.
        plugin.reconcile(&ObjectKey::new(home, "seen")).await?;
        let counted = |events: &[Event]| events.iter().filter_map(|e| e.series.as_ref()).count();
        let mut seen = regarding_seen(at_home.list(&ListParams::default()).await?.items);
        while counted(&seen) == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            seen = regarding_seen(at_home.list(&ListParams::default()).await?.items);
        }
        let series: Vec<Option<i32>> = seen
            .iter()
            .map(|e| e.series.as_ref().map_or(Some(1), |s| s.count))
            .collect();
        assert_eq!(
            series,
            [Some(2)],
            "a repeat within the window is not its first event's series"
        );
        println!(
            "EVENTS: 1 published in {home}, 0 in {elsewhere} (dropped and counted); its repeat \
             counted 2 on the first Event"
        );
        let _ = plane
            .run_kubectl(&["delete", "namespace", home, "--wait=false"], None)
            .await;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_runs_only_as_its_sources_identity() -> anyhow::Result<()> {
    within(LIMIT, "identity by name", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("identity").await?;
        let plugins = tempfile::tempdir()?;
        std::fs::copy(
            common::component("guest-good"),
            plugins.path().join("evil.wasm"),
        )?;
        let mut audit = plane.audit_log();
        audit.read_new()?;
        let metrics = free_address();
        let _host = common::host(plane)
            .arg("--plugin-dir")
            .arg(plugins.path())
            .args(["--plugin-identity-namespace", &namespace])
            .args([
                "--namespaces",
                &namespace,
                "--health-probe-bind-address",
                "0",
            ])
            .args(["--metrics-bind-address", &metrics])
            .spawn()?;
        let status =
            common::scrape::plugins_until(&metrics, |body| body.contains("runs as evil")).await?;
        assert!(status.contains("declares the name guest-good"), "{status}");
        let privileged = format!("system:serviceaccount:{namespace}:wasmop-plugin-guest-good");
        let spoken = common::requests_by(&mut audit, &privileged)?;
        assert!(spoken.is_empty(), "requests as {privileged}: {spoken:?}");
        println!(
            "IDENTITY: evil.wasm declaring guest-good refused at load; 0 requests as {privileged}"
        );
        Ok(())
    })
    .await
}

/// What `tests/guests/reach` (declaring ConfigMaps, and Lease reads by a marker that names no
/// version) found each of its own client-go clients answered, through the `transport` import: its
/// declared reads and write work (a get of a Lease at v1 reaches the apiserver, which has none);
/// Secrets and Pods, a watch and an owner reference to a Secret are refused by the host.
const REACH_ANSWERS: [(&str, &str); 11] = [
    ("typed-get", "ok"),
    ("typed-get-lease", "NotFound"),
    ("api-reader-get", "ok"),
    ("discovery", "ok"),
    ("discovery-finds-apps", "ok"),
    ("typed-list-secrets", "Forbidden"),
    ("dynamic-get-secret", "Forbidden"),
    ("api-reader-list-secrets", "Forbidden"),
    ("typed-create-pod", "Forbidden"),
    ("typed-create-owned-by-secret", "Forbidden"),
    ("typed-watch", "Invalid"),
];

/// What reach's clients answered, its ConfigMap `reach-result` and the audit log's requests in
/// its namespace and elsewhere, after one reconcile of `reach` in a new namespace, loaded with
/// `options`.
struct Reached {
    namespace: String,
    answers: std::collections::BTreeMap<String, String>,
    result: ConfigMap,
    undeclared: u64,
    audit: Vec<wasmop_envtest::AuditEvent>,
}

impl Reached {
    /// Loads reach with `options(namespace)` and reconciles its ConfigMap `reach` once.
    async fn run(
        plane: &ControlPlane,
        options: impl FnOnce(&str) -> anyhow::Result<PluginOptions>,
    ) -> anyhow::Result<Reached> {
        let namespace = plane.create_namespace("reach").await?;
        let kube = plane.client().await?;
        let secrets: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(kube.clone(), &namespace);
        let token = json!({"metadata": {"name": "token"}, "stringData": {"key": "secret"}});
        secrets
            .create(&PostParams::default(), &serde_json::from_value(token)?)
            .await?;
        let (cache, informer) = configmap_cache(&kube).await?;
        configmap(&kube, &informer, (&namespace, "reach"), json!({})).await?;
        let plugin = common::load_on_cluster(
            &runtime_under(""),
            (&kube, &cache),
            "reach-go",
            options(&namespace)?,
        )
        .await?;
        let mut audit = plane.audit_log();
        audit.read_new()?;
        plugin
            .reconcile(&ObjectKey::new(&namespace, "reach"))
            .await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(kube.clone(), &namespace);
        let result = configmaps.get("reach-result").await?;
        assert!(configmaps.get_opt("forged").await?.is_none());
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok(Reached {
            answers: result.data.clone().unwrap_or_default(),
            result,
            undeclared: plugin.refusals()[Refusal::Undeclared as usize].1,
            audit: audit.read_new()?,
            namespace,
        })
    }

    /// Checks each of `expected`'s answers.
    fn answered(&self, expected: &[(&str, &str)]) {
        for (what, expected) in expected {
            let answer = self.answers.get(*what).map(String::as_str);
            assert_eq!(answer, Some(*expected), "{what}: {:?}", self.answers);
        }
    }

    /// The audit log's requests on Secrets, Pods or a watch in its namespace: none may be there.
    fn refused_that_reached(&self) -> Vec<&wasmop_envtest::AuditEvent> {
        self.audit
            .iter()
            .filter(|e| e.namespace == self.namespace)
            .filter(|e| matches!(e.resource.as_str(), "secrets" | "pods") || e.verb == "watch")
            .collect()
    }
}

/// A Go plugin's own clients — a typed clientset and a dynamic client from `ctrl.GetConfig`,
/// discovery, `mgr.GetAPIReader` — reach the apiserver through the host: what the plugin
/// declared works and is written under its field manager; what it did not is refused before it
/// leaves the host, and the apiserver's audit log holds no request on Secrets or Pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_own_clientset_reaches_only_what_it_declared() -> anyhow::Result<()> {
    within(LIMIT, "a Go plugin's own clients", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let reached = Reached::run(plane, |_| {
            let environment = Environment::new(
                vec!["--feature-gates=Reach=true".into()],
                vec![("REACH_MARK".into(), "configured".into())],
            )?;
            Ok(PluginOptions {
                environment,
                ..PluginOptions::default()
            })
        })
        .await?;
        reached.answered(&REACH_ANSWERS);
        reached.answered(&[
            ("typed-list-elsewhere", "ok"),
            ("typed-list-everywhere", "ok"),
            ("args", "--feature-gates=Reach=true"),
            ("mark", "configured"),
        ]);
        let managers: Vec<String> = (reached.result.metadata.managed_fields.clone())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|entry| entry.manager)
            .collect();
        assert_eq!(managers, ["wasmop/reach"], "reach-result's field managers");
        let undeclared = reached.undeclared;
        assert!(undeclared >= 5, "{undeclared} undeclared requests counted");
        let reached_apiserver = reached.refused_that_reached();
        assert!(
            reached_apiserver.is_empty(),
            "refused requests reached the apiserver: {reached_apiserver:?}"
        );
        let namespace = &reached.namespace;
        let in_namespace = |e: &&wasmop_envtest::AuditEvent| &e.namespace == namespace;
        let sent = (reached.audit.iter().filter(in_namespace))
            .filter(|e| e.resource == "configmaps")
            .count();
        assert!(
            sent >= 3,
            "the declared reads and write: {:?}",
            reached.audit
        );
        println!(
            "REACH: {} answers as declared ({undeclared} undeclared requests refused by the host); \
             the audit log shows {sent} ConfigMap requests and none on Secrets, Pods or watches \
             in {namespace}",
            REACH_ANSWERS.len()
        );
        Ok(())
    })
    .await
}

/// The same plugin installed by a tenant's `WasmReconciler` in its namespace: its clientset's
/// lists of ConfigMaps in `default` and across all namespaces are refused by the host as
/// outside the namespace that confines it, and the apiserver sees no ConfigMap request outside
/// it; what it may do at home works as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_clientset_stays_in_its_namespace() -> anyhow::Result<()> {
    within(LIMIT, "a tenant's Go plugin's own clients", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let reached = Reached::run(plane, |namespace| {
            Ok(PluginOptions {
                tenant: Some("reach".into()),
                home: Some(namespace.into()),
                ..PluginOptions::default()
            })
        })
        .await?;
        reached.answered(&REACH_ANSWERS);
        reached.answered(&[
            ("typed-list-elsewhere", "Forbidden"),
            ("typed-list-everywhere", "Forbidden"),
        ]);
        let outside: Vec<_> = (reached.audit.iter())
            .filter(|e| e.resource == "configmaps" && e.namespace != reached.namespace)
            .filter(|e| e.verb != "watch") // the test's own informer's
            .collect();
        assert!(
            outside.is_empty(),
            "a confined tenant's requests reached the apiserver outside {}: {outside:?}",
            reached.namespace
        );
        assert!(reached.refused_that_reached().is_empty());
        println!(
            "REACH: a tenant of {} listing ConfigMaps in default and in every namespace through \
             its clientset: both Forbidden by the host, none reached the apiserver",
            reached.namespace
        );
        Ok(())
    })
    .await
}

/// A plugin that may read a kind the apiserver does not serve (tests/guests/reach declares
/// OpenShift's routes, as operators with optional integrations do) runs under the binary: the
/// host warns that it has no informer for that kind and reconciles its ConfigMaps as before. The
/// Leases its marker grants at every version are informed at the version the apiserver prefers,
/// so its cache reads one as its clientset does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_on_a_kind_the_apiserver_does_not_serve_leaves_the_plugin_running()
-> anyhow::Result<()> {
    within(LIMIT, "a plugin that may read routes", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("unserved").await?;
        let kube = plane.client().await?;
        let probes = free_address();
        // Listed before the host starts, so its informer holds it when reach reconciles.
        let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
            Api::namespaced(kube.clone(), &namespace);
        let lease = serde_json::from_value(json!({"metadata": {"name": "reach"}}))?;
        leases.create(&PostParams::default(), &lease).await?;
        let log = plane.dir().join(format!("{namespace}-host.log"));
        let _host = common::host(plane)
            .arg("--plugin")
            .arg(common::component("reach-go"))
            .args(["--namespaces", &namespace, "--metrics-bind-address", "0"])
            .args(["--health-probe-bind-address", &probes])
            .stderr(std::fs::File::create(&log)?)
            .spawn()?;
        common::scrape::wait_ready(&probes).await;

        let configmaps: Api<ConfigMap> = Api::namespaced(kube.clone(), &namespace);
        let reach = serde_json::from_value(json!({"metadata": {"name": "reach"}}))?;
        configmaps.create(&PostParams::default(), &reach).await?;
        let result = loop {
            match configmaps.get_opt("reach-result").await? {
                Some(result) => break result.data.unwrap_or_default(),
                None => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        for read in ["typed-get-lease", "cache-get-lease"] {
            assert_eq!(
                result.get(read).map(String::as_str),
                Some("ok"),
                "{read}: {result:?}"
            );
        }
        let text = std::fs::read_to_string(&log)?;
        let warned = text
            .lines()
            .find(|line| line.contains("no informer for a kind"));
        let warned = warned.expect("the host warns of the kind it cannot inform");
        assert!(
            warned.contains("Route") && warned.contains("route.openshift.io/v1"),
            "{warned}"
        );
        println!(
            "UNSERVED: reach reconciled with its Route permission unserved ({warned}) and read \
             its Lease through its cache, informed at the apiserver's preferred version"
        );
        Ok(())
    })
    .await
}
