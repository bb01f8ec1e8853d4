//! A namespaced `WasmReconciler` is its namespace's. A tenant of one namespace names another
//! tenant's module and registry pull secret (in a namespace the operator's policy lists for
//! modules) and loads a plugin that writes in another namespace: each is refused with the reason
//! in its status, and nothing of the other namespace is read. The same plugin applied in the
//! namespace it writes in loads from a ConfigMap there and runs; a plugin granted every
//! namespace, applied there, is given that namespace's objects only. Cluster-scoped
//! `WasmReconciler`s of a host from before the split are moved by `wasmop migrate` to
//! `ClusterWasmReconciler`s, losing none, while a host keeps their plugins loaded.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use wasmop_envtest::{ControlPlane, within};

use crate::common;
use crate::common::reconcilers::{condition, status_until};

const LIMIT: Duration = Duration::from_secs(300);

/// The namespace guest-narrow writes in.
const HOME: &str = "narrow-home";

/// The Degraded condition of `status` once it is True.
fn degraded(status: &Value) -> Option<(String, String)> {
    let degraded = condition(status, "Degraded");
    (degraded["status"] == "True").then(|| {
        let text = |key: &str| degraded[key].as_str().unwrap_or_default().to_owned();
        (text("reason"), text("message"))
    })
}

/// Creates the WasmReconciler `name` in `namespace` loading `module`.
async fn apply(api: &Api<DynamicObject>, name: &str, module: Value) -> anyhow::Result<()> {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "wasmop.dev/v1alpha1", "kind": "WasmReconciler",
        "metadata": {"name": name}, "spec": {"module": module},
    }))?;
    api.create(&PostParams::default(), &object).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespaced_tenant_reads_and_writes_only_in_its_namespace() -> anyhow::Result<()> {
    within(LIMIT, "tenants of two namespaces", async {
        let plane = &ControlPlane::start().await?;
        common::reconcilers::install_crd(plane).await?;
        let client = plane.client().await?;
        plane
            .run_kubectl(&["create", "namespace", HOME], None)
            .await?;
        let other = plane.create_namespace("team-b").await?;
        // The other tenant's module and robot account, where the operator's policy allows modules.
        let theirs = common::reconcilers::store_module(plane, &other, "guest-narrow").await?;
        let robot: Secret = serde_json::from_value(json!({
            "metadata": {"name": "robot"},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": r#"{"auths":{"127.0.0.1:5999":{"auth":"cm9ib3Q6c2VjcmV0"}}}"#},
        }))?;
        Api::<Secret>::namespaced(client.clone(), &other)
            .create(&PostParams::default(), &robot)
            .await?;
        let policy = plane.dir().join("namespaces-policy.yaml");
        std::fs::write(&policy, format!("modules: {{namespaces: [{other}]}}\n"))?;
        let mut audit = plane.audit_log();
        audit.read_new()?;
        let metrics = common::scrape::free_address();
        let _host = common::host(plane)
            .arg("--wasm-reconcilers")
            .arg("--policy")
            .arg(&policy)
            .args(["--metrics-bind-address", &metrics])
            .spawn()?;

        // In its own namespace, the tenant names the other tenant's module and pull secret.
        let home = common::reconcilers::namespaced(client.clone(), HOME);
        apply(&home, "borrowed", theirs.clone()).await?;
        let zeros = "0".repeat(64);
        let oci = json!({"oci": {
            "reference": format!("127.0.0.1:5999/team-b/app@sha256:{zeros}"),
            "pullSecret": {"namespace": other, "name": "robot"},
        }});
        apply(&home, "robbed", oci).await?;
        for name in ["borrowed", "robbed"] {
            let status = status_until(&home, name, |s| degraded(s).is_some()).await?;
            let (reason, message) = degraded(&status).unwrap_or_default();
            assert_eq!(reason, "SourceRefused", "{name}: {message}");
            assert!(
                message.contains(&format!("namespace {HOME} reads its module and pull secret only there")),
                "{name}: {message}"
            );
        }
        let read: Vec<String> = audit
            .read_new()?
            .into_iter()
            .filter(|e| e.namespace == other && e.verb == "get")
            .map(|e| format!("{} {}/{}", e.verb, e.resource, e.name))
            .collect();
        assert!(read.is_empty(), "the host read {other} for a tenant of {HOME}: {read:?}");

        // A plugin that writes in narrow-home, applied by a tenant of team-b, is refused at load.
        let team_b = common::reconcilers::namespaced(client.clone(), &other);
        let module = json!({"configMap": {"name": "guest-narrow", "key": "module.wasm"}, "sha256": theirs["sha256"]});
        apply(&team_b, "guest-narrow", module.clone()).await?;
        let status = status_until(&team_b, "guest-narrow", |s| degraded(s).is_some()).await?;
        let (reason, message) = degraded(&status).unwrap_or_default();
        assert!(
            message.contains("confines it to that namespace") && message.contains(HOME),
            "{reason}: {message}"
        );
        let confined = message;
        api_delete(&team_b, "guest-narrow").await?;

        // In narrow-home, its module stored there, it loads and runs.
        common::reconcilers::store_module(plane, HOME, "guest-narrow").await?;
        apply(&home, "guest-narrow", module).await?;
        let ready = |s: &Value| condition(s, "Ready")["status"] == "True";
        let status = status_until(&home, "guest-narrow", ready).await?;
        assert_eq!(status["name"], "guest-narrow");
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), HOME);
        let seen: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "seen"}}))?;
        configmaps.create(&PostParams::default(), &seen).await?;
        let events: Api<Event> = Api::namespaced(client.clone(), HOME);
        let params = ListParams::default().fields("involvedObject.name=seen");
        while events.list(&params).await?.items.iter().all(|e| e.reason.as_deref() != Some("Seen")) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        // A plugin granted ConfigMaps in every namespace, applied in narrow-home, sees only
        // narrow-home's: team-b's ConfigMap, there before it loaded, is never given to it.
        let theirs_map: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "theirs"}}))?;
        let their_configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &other);
        their_configmaps.create(&PostParams::default(), &theirs_map).await?;
        let good = common::reconcilers::store_module(plane, HOME, "guest-good").await?;
        apply(&home, "guest-good", good).await?;
        status_until(&home, "guest-good", ready).await?;
        common::seen_by_good(&configmaps, "ours").await?;
        let annotations = their_configmaps.get("theirs").await?.metadata.annotations;
        assert!(
            !annotations.unwrap_or_default().contains_key("guest-good.wasmop.dev/seen"),
            "a plugin of {HOME} reconciled a ConfigMap of {other}"
        );
        // Nor was it asked to: no reconcile of guest-good failed, no call of it was refused.
        let (_, text) = common::scrape::get(&metrics, "/metrics").await?;
        let samples = common::scrape::parse(&text);
        let failed = [("controller", "guest-good"), ("result", "error")];
        let failed = common::scrape::value(&samples, "controller_runtime_reconcile_total", &failed);
        let refused = samples
            .get("wasmop_plugin_refusals_total")
            .into_iter()
            .flatten()
            .filter(|(labels, _)| labels.get("plugin").is_some_and(|p| p == "guest-good"))
            .map(|(_, value)| value)
            .sum::<f64>();
        assert_eq!((failed.unwrap_or(0.0), refused), (0.0, 0.0), "guest-good met {other}'s objects");
        println!(
            "NAMESPACES: a tenant of {HOME} naming {other}'s module and pull secret: \
             SourceRefused, 0 reads in {other}; guest-narrow applied in {other}: {confined}; \
             applied in {HOME}: Ready, its event recorded there; guest-good (ConfigMaps in every \
             namespace) applied in {HOME}: annotated {HOME}'s ConfigMap, never {other}'s"
        );
        Ok(())
    })
    .await
}

/// Deletes `name` and waits until it is gone.
async fn api_delete(api: &Api<DynamicObject>, name: &str) -> anyhow::Result<()> {
    api.delete(name, &Default::default()).await?;
    while api.get_opt(name).await?.is_some() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_moves_cluster_scoped_wasmreconcilers_losing_none() -> anyhow::Result<()> {
    within(LIMIT, "migrating WasmReconcilers", async {
        let plane = &ControlPlane::start().await?;
        // The CRD before the split: WasmReconciler, cluster-scoped.
        let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
        let before = std::fs::read_to_string(crds.join("clusterwasmreconciler.yaml"))?
            .replace("clusterwasmreconciler", "wasmreconciler")
            .replace("ClusterWasmReconciler", "WasmReconciler")
            .replace("shortNames: [cwr]", "shortNames: [wr]");
        let old = plane.dir().join("old-wasmreconciler.yaml");
        std::fs::write(&old, before)?;
        plane.install_crds(&[old]).await?;
        let client = plane.client().await?;
        let modules = plane.create_namespace("migrate-modules").await?;
        let module = common::reconcilers::store_module(plane, &modules, "guest-good").await?;
        let policy = plane.dir().join("migrate-policy.yaml");
        std::fs::write(&policy, format!("modules: {{namespaces: [{modules}]}}\n"))?;
        let kind = kube::api::GroupVersionKind::gvk("wasmop.dev", "v1alpha1", "WasmReconciler");
        let resource = kube::core::ApiResource::from_gvk_with_plural(&kind, "wasmreconcilers");
        let olds: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        for (name, paused) in [("guest-good", false), ("kept-paused", true)] {
            let object: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "wasmop.dev/v1alpha1", "kind": "WasmReconciler",
                "metadata": {"name": name, "labels": {"team": "platform"}},
                "spec": {"module": module, "paused": paused},
            }))?;
            olds.create(&PostParams::default(), &object).await?;
        }
        let work = plane.create_namespace("migrate-work").await?;
        let _host = common::host(plane)
            .args(["--wasm-reconcilers", "--namespaces", &work])
            .arg("--policy")
            .arg(&policy)
            .spawn()?;
        let ready = |s: &Value| condition(s, "Ready")["status"] == "True";
        status_until(&olds, "guest-good", ready).await?;

        let printed = common::migrate(plane).await?;
        assert!(printed.contains("copied 2 WasmReconcilers"), "{printed}");
        let clusters = common::reconcilers::api(client.clone());
        for name in ["guest-good", "kept-paused"] {
            let copy = clusters.get(name).await?;
            assert_eq!(copy.metadata.labels.unwrap_or_default()["team"], "platform");
            assert_eq!(copy.data["spec"]["module"], module, "{name}");
        }
        assert_eq!(clusters.get("kept-paused").await?.data["spec"]["paused"], true);
        let crd = plane
            .run_kubectl(&["get", "crd", "wasmreconcilers.wasmop.dev", "-o", "jsonpath={.spec.scope}"], None)
            .await?;
        assert_eq!(crd.trim(), "Namespaced");
        // The host loads the moved object under its new kind, and its plugin runs.
        status_until(&clusters, "guest-good", ready).await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &work);
        common::seen_by_good(&configmaps, "after-the-move").await?;
        let again = common::migrate(plane).await?;
        assert!(again.contains("nothing to migrate"), "{again}");
        println!("MIGRATE: 2 cluster-scoped WasmReconcilers moved with their labels and specs; guest-good Ready again as a ClusterWasmReconciler and reconciling");
        Ok(())
    })
    .await
}
