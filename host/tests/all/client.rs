//! The cache-backed client against the real control plane: a plugin reads its own writes at once,
//! before its watch has delivered them, and API errors arrive as the WIT error kinds.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};
use wasmop::cache::{Cache, Namespaces};
use wasmop::client::PluginClient;
use wasmop::contract::imports::{ApiErrorKind, ApiWriter, CacheReader, ListOptions, Write};
use wasmop::contract::object::{GroupVersionKind, ObjectRef};
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(120);

fn parsed(json: &str) -> Value {
    serde_json::from_str(json).expect("the client returns JSON")
}

#[tokio::test]
async fn a_plugin_reads_its_own_writes_immediately() -> anyhow::Result<()> {
    within(LIMIT, "read-your-writes", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("ryw").await?;
        let kube = plane.client().await?;
        let cache = Arc::new(Cache::new(kube.clone()));
        let configmaps = GroupVersionKind::gvk("", "v1", "ConfigMap");
        let informer = cache.informer(&configmaps).await?;
        informer.wait_synced().await;
        let client = PluginClient::new(kube, cache.clone(), "ryw");
        let target = ObjectRef::new(&configmaps, &namespace, "mine");

        for round in 0..20 {
            let object = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"namespace": namespace, "name": "mine"},
                "data": {"round": round.to_string()},
            });
            let write = if round == 0 {
                Write::Create(object)
            } else {
                Write::Patch {
                    patch: wasmop::contract::imports::Patch::Merge(object),
                    status: false,
                }
            };
            let stored = client
                .write(&target, write)
                .await?
                .expect("the stored object");
            let written: u64 = parsed(&stored)["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()?;
            let read = parsed(&client.get(&configmaps, &namespace, "mine")?);
            let seen: u64 = read["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()?;
            assert!(
                seen >= written,
                "round {round}: read resourceVersion {seen} older than the write {written}"
            );
            assert_eq!(read["data"]["round"], round.to_string());
        }

        client
            .write(&target, Write::Delete(Default::default()))
            .await?;
        let gone = client.get(&configmaps, &namespace, "mine").unwrap_err();
        assert_eq!(
            gone.kind,
            ApiErrorKind::NotFound,
            "a deleted object was still readable: {gone}"
        );

        let missing = ObjectRef::new(&configmaps, &namespace, "never-created");
        let error = client
            .write(&missing, Write::Delete(Default::default()))
            .await
            .unwrap_err();
        assert_eq!((error.kind, error.code), (ApiErrorKind::NotFound, 404));
        Ok(())
    })
    .await
}

/// Waits until the cache has seen every change made before now in `namespace`: a marker
/// ConfigMap created after them is in the cache (one watch delivers changes in order).
async fn cache_seen_up_to_now(
    kube: &kube::Client,
    informer: &wasmop::cache::Informer,
    namespace: &str,
    marker: &str,
) -> anyhow::Result<()> {
    let object = serde_json::from_value(json!({"metadata": {"name": marker}}))?;
    kube::Api::<ConfigMap>::namespaced(kube.clone(), namespace)
        .create(&Default::default(), &object)
        .await?;
    let key = wasmop::contract::object::ObjectKey::new(namespace, marker);
    while informer.get(&key).is_none() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::test]
async fn a_plugin_write_someone_else_undid_does_not_outlive_it() -> anyhow::Result<()> {
    within(LIMIT, "read-your-writes after someone else's change", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("ryw-undone").await?;
        let kube = plane.client().await?;
        let cache = Arc::new(Cache::new(kube.clone()));
        let kind = GroupVersionKind::gvk("", "v1", "ConfigMap");
        let informer = cache.informer(&kind).await?;
        informer.wait_synced().await;
        let client = PluginClient::new(kube.clone(), cache.clone(), "ryw-undone");
        let admin = kube::Api::<ConfigMap>::namespaced(kube.clone(), &namespace);
        let object = |name: &str| {
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"namespace": namespace, "name": name},
                "data": {"by": "plugin"},
            })
        };

        // The plugin writes; someone deletes it before the plugin reads again.
        let written = ObjectRef::new(&kind, &namespace, "written");
        client
            .write(&written, Write::Create(object("written")))
            .await?;
        admin.delete("written", &Default::default()).await?;
        cache_seen_up_to_now(&kube, &informer, &namespace, "marker-1").await?;
        let read = client.get(&kind, &namespace, "written");
        assert_eq!(
            read.as_ref().map_err(|e| e.kind),
            Err(ApiErrorKind::NotFound),
            "the cache has seen the deletion, yet the plugin still reads its own write: {read:?}"
        );

        // The plugin deletes; someone creates it again.
        let deleted = ObjectRef::new(&kind, &namespace, "deleted");
        client
            .write(&deleted, Write::Create(object("deleted")))
            .await?;
        client
            .write(&deleted, Write::Delete(Default::default()))
            .await?;
        let again = serde_json::from_value(json!({
            "metadata": {"name": "deleted"}, "data": {"by": "someone"},
        }))?;
        admin.create(&Default::default(), &again).await?;
        cache_seen_up_to_now(&kube, &informer, &namespace, "marker-2").await?;
        let read = parsed(&client.get(&kind, &namespace, "deleted")?);
        assert_eq!(read["data"]["by"], "someone", "the recreated object");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_namespace_scoped_cache_serves_its_namespaces_and_refuses_others() -> anyhow::Result<()> {
    within(LIMIT, "a namespace-scoped cache", async {
        let plane = &shared_by(module_path!()).await?;
        let kube = plane.client().await?;
        let (a, b, other) = (
            plane.create_namespace("scope-a").await?,
            plane.create_namespace("scope-b").await?,
            plane.create_namespace("scope-other").await?,
        );
        for namespace in [&a, &b, &other] {
            let object = serde_json::from_value(json!({
                "metadata": {"namespace": namespace, "name": "here"},
            }))?;
            kube::Api::<ConfigMap>::namespaced(kube.clone(), namespace)
                .create(&Default::default(), &object)
                .await?;
        }
        let scope = Namespaces::Only(vec![a.clone(), b.clone()]);
        let cache = Arc::new(Cache::scoped(kube.clone(), scope));
        let kind = GroupVersionKind::gvk("", "v1", "ConfigMap");
        let informer = cache.informer(&kind).await?;
        informer.wait_synced().await;
        let client = PluginClient::new(kube, cache.clone(), "scoped");

        let all = ListOptions::default();
        let mut listed: Vec<String> = client
            .list(&kind, &all)?
            .iter()
            .map(|json| {
                parsed(json)["metadata"]["namespace"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .filter(|namespace| [&a, &b, &other].contains(&namespace))
            .collect();
        listed.sort();
        let mut expected = vec![a.clone(), b.clone()];
        expected.sort();
        assert_eq!(listed, expected, "both watched namespaces, nothing else");
        assert!(client.get(&kind, &b, "here").is_ok());
        let refused = client.get(&kind, &other, "here").unwrap_err();
        assert_eq!(refused.kind, ApiErrorKind::Invalid);
        assert!(
            refused.message.contains(&format!("watches only {a}, {b}")),
            "{}",
            refused.message
        );
        let only_other = ListOptions {
            namespace: Some(other.clone()),
            ..ListOptions::default()
        };
        assert!(client.list(&kind, &only_other).is_err());
        Ok(())
    })
    .await
}
