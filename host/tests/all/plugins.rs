//! The example plugins driven through the runtime against the in-memory host: the writes a
//! first reconcile issues, and none on a second reconcile of converged state.

use crate::common;

use common::{LIMIT, configmap, load, runtime};
use serde_json::json;
use wasmop::contract::imports::{Patch, Write};
use wasmop::contract::object::{GroupVersionKind, ObjectKey};
use wasmop::fixture::RecordedWrite;
use wasmop::runtime::{Outcome, PluginOptions};
use wasmop_envtest::within;

fn kinds(writes: &[RecordedWrite]) -> Vec<String> {
    writes
        .iter()
        .map(|w| {
            let verb = match &w.write {
                Write::Create(_) => "create",
                Write::Update(_) => "update",
                Write::UpdateStatus(_) | Write::Patch { status: true, .. } => "status",
                Write::Patch {
                    patch: Patch::Apply { .. },
                    ..
                } => "apply",
                Write::Patch { .. } => "patch",
                Write::Delete(_) => "delete",
            };
            format!("{verb} {}", w.target.kind.kind)
        })
        .collect()
}

#[tokio::test]
async fn webapp_creates_its_objects_once_and_then_issues_no_writes() {
    within(LIMIT, "webapp reconciles", async {
        let runtime = runtime();
        let (webapp, host) = load(&runtime, "webapp", PluginOptions::default()).await;
        host.insert(json!({
            "apiVersion": "example.wasmop.dev/v1alpha1",
            "kind": "WebApp",
            "metadata": {"namespace": "shop", "name": "web"},
            "spec": {"image": "nginx:1.27", "replicas": 2, "port": 8080},
        }));
        let key = ObjectKey::new("shop", "web");
        assert_eq!(
            webapp.reconcile(&key).await.expect("first reconcile"),
            Outcome::Done
        );
        let first = kinds(&host.take_writes());
        for expected in ["Deployment", "Service", "WebApp", "ConfigMap"] {
            assert!(
                first.iter().any(|w| w.ends_with(expected)),
                "no write of {expected}: {first:?}"
            );
        }

        let deployment = host
            .get(&GroupVersionKind::gvk("apps", "v1", "Deployment"), &key)
            .expect("a Deployment");
        assert_eq!(deployment["spec"]["replicas"], 2);
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1.27"
        );
        let owner = &deployment["metadata"]["ownerReferences"][0];
        assert_eq!(
            (owner["kind"].as_str(), owner["controller"].as_bool()),
            (Some("WebApp"), Some(true))
        );
        let webapp_kind = GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp");
        let stored = host.get(&webapp_kind, &key).unwrap();
        assert_eq!(stored["status"]["observedGeneration"], 1);
        assert!(
            stored["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
        );
        assert!(!host.events().is_empty(), "no event recorded");

        assert_eq!(
            webapp.reconcile(&key).await.expect("second reconcile"),
            Outcome::Done
        );
        assert_eq!(
            kinds(&host.take_writes()),
            Vec::<String>::new(),
            "a converged WebApp was written again"
        );
    })
    .await
}

#[tokio::test]
async fn configmap_sync_copies_into_target_namespaces_once() {
    within(LIMIT, "configmap-sync reconciles", async {
        let runtime = runtime();
        let (sync, host) = load(&runtime, "configmap-sync", PluginOptions::default()).await;
        let mut source = configmap("config", "shared");
        source["metadata"]["labels"] = json!({"configmap-sync.wasmop.dev/source": "true"});
        host.insert(source);
        for (name, target) in [("team-a", true), ("team-b", true), ("elsewhere", false)] {
            let labels = if target { json!({"configmap-sync.wasmop.dev/target": "true"}) } else { json!({}) };
            host.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}));
        }
        let key = ObjectKey::new("config", "shared");
        assert_eq!(sync.reconcile(&key).await.expect("first reconcile"), Outcome::Done);
        let configmaps = GroupVersionKind::gvk("", "v1", "ConfigMap");
        for namespace in ["team-a", "team-b"] {
            let copy = host.get(&configmaps, &ObjectKey::new(namespace, "shared")).expect("a copy");
            assert_eq!(copy["data"]["key"], "value");
        }
        assert!(host.get(&configmaps, &ObjectKey::new("elsewhere", "shared")).is_none());
        assert_eq!(host.take_writes().len(), 2);

        assert_eq!(sync.reconcile(&key).await.expect("second reconcile"), Outcome::Done);
        assert_eq!(kinds(&host.take_writes()), Vec::<String>::new(), "converged copies were written again");

        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-c"}});
        let mapped = sync.map(&GroupVersionKind::gvk("", "v1", "Namespace"), &namespace.to_string(), &ObjectKey::new("", "team-c")).await;
        assert_eq!(mapped.expect("map answers"), vec![key]);
    })
    .await
}
