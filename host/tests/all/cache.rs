//! The shared informer cache against the real control plane: one watch per kind shared by its
//! users and stopped after the last, objects and changes as the apiserver has them (with their
//! `apiVersion` and `kind`, also those of a first list, whose items the apiserver sends without),
//! CRDs found through discovery.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use wasmop::cache::{Cache, Change};
use wasmop::contract::object::{GroupVersionKind, ObjectKey};
use wasmop::contract::selector::LabelSelector;
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(120);

fn configmaps() -> GroupVersionKind {
    GroupVersionKind::gvk("", "v1", "ConfigMap")
}

async fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    within(Duration::from_secs(30), what, async {
        loop {
            if let Some(value) = probe() {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

#[tokio::test]
async fn users_of_a_kind_share_one_watch_that_stops_after_the_last() -> anyhow::Result<()> {
    within(LIMIT, "sharing informers", async {
        let plane = &shared_by(module_path!()).await?;
        let cache = Cache::new(plane.client().await?);
        let first = cache.informer(&configmaps()).await?;
        let second = cache.informer(&configmaps()).await?;
        assert!(Arc::ptr_eq(&first, &second), "two users got two watches");
        assert_eq!(cache.kinds(), [configmaps()]);
        first.wait_synced().await;
        drop((first, second));
        assert!(cache.kinds().is_empty(), "the watch outlived its last user");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_cache_follows_creates_updates_and_deletes() -> anyhow::Result<()> {
    within(LIMIT, "following ConfigMaps", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("cache").await?;
        let client = plane.client().await?;
        let cache = Cache::new(client.clone());
        let informer = cache.informer(&configmaps()).await?;
        let changes = Arc::new(Mutex::new(Vec::<Change>::new()));
        let _subscription = informer.subscribe({
            let changes = changes.clone();
            Arc::new(move |change: &Change| changes.lock().unwrap().push(change.clone()))
        });
        informer.wait_synced().await;
        assert!(informer.is_synced());

        let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
        let created = serde_json::from_value(json!({"metadata": {"name": "settings", "labels": {"tier": "web"}}, "data": {"a": "1"}}))?;
        api.create(&PostParams::default(), &created).await?;
        let key = ObjectKey::new(&namespace, "settings");
        let cached = eventually("the created ConfigMap", || informer.get(&key)).await;
        assert!(!cached.json.contains("managedFields"), "managedFields reached the cache");
        assert_eq!(cached.value()["data"]["a"], "1");

        let web = LabelSelector::parse("tier=web").map_err(anyhow::Error::msg)?;
        assert_eq!(informer.list(Some(&namespace), &web).len(), 1);
        let relabel = json!({"metadata": {"labels": {"tier": "db"}}});
        api.patch("settings", &PatchParams::default(), &Patch::Merge(&relabel)).await?;
        eventually("the relabelled ConfigMap", || informer.list(Some(&namespace), &web).is_empty().then_some(())).await;

        api.delete("settings", &DeleteParams::default()).await?;
        eventually("the deleted ConfigMap to leave", || informer.get(&key).is_none().then_some(())).await;

        let ours: Vec<_> = changes.lock().unwrap().iter().filter(|c| {
            c.new.as_ref().or(c.old.as_ref()).is_some_and(|o| o.key == key)
        }).map(|c| (c.old.is_some(), c.new.is_some())).collect();
        assert_eq!(ours, [(false, true), (true, true), (true, false)], "add, update, delete in order");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn objects_listed_before_the_watch_carry_their_api_version_and_kind() -> anyhow::Result<()> {
    within(LIMIT, "typed objects from a first list", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("typed").await?;
        let client = plane.client().await?;
        let configmap = serde_json::from_value(json!({"metadata": {"name": "before"}}))?;
        Api::<ConfigMap>::namespaced(client.clone(), &namespace)
            .create(&PostParams::default(), &configmap)
            .await?;
        let deployment = serde_json::from_value(json!({
            "metadata": {"name": "before"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {
                "metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "a", "image": "nginx"}]}}},
        }))?;
        Api::<Deployment>::namespaced(client.clone(), &namespace)
            .create(&PostParams::default(), &deployment)
            .await?;

        let cache = Cache::new(client);
        let deployments = GroupVersionKind::gvk("apps", "v1", "Deployment");
        for (kind, api_version) in [(configmaps(), "v1"), (deployments, "apps/v1")] {
            let informer = cache.informer(&kind).await?;
            informer.wait_synced().await;
            let listed = informer.list(None, &LabelSelector::default());
            let ours = informer.get(&ObjectKey::new(&namespace, "before"));
            anyhow::ensure!(ours.is_some(), "{} before is not cached", kind.kind);
            let untyped: Vec<String> = listed
                .iter()
                .filter(|o| {
                    let value = o.value();
                    value["apiVersion"] != api_version || value["kind"] != kind.kind.as_str()
                })
                .map(|o| o.key.to_string())
                .collect();
            println!(
                "{} {}s listed, {} without apiVersion {api_version} and kind",
                listed.len(),
                kind.kind,
                untyped.len()
            );
            assert!(
                untyped.is_empty(),
                "{} listed without apiVersion or kind: {untyped:?}",
                kind.kind
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn custom_resources_are_found_through_discovery() -> anyhow::Result<()> {
    within(LIMIT, "watching a CRD", async {
        let plane = &shared_by(module_path!()).await?;
        let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/webapp.yaml");
        plane.install_crds(&[crd]).await?;
        let cache = Cache::new(plane.client().await?);
        let webapps = GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp");
        let informer = cache.informer(&webapps).await?;
        assert!(informer.namespaced());
        assert_eq!(informer.resource().plural, "webapps");
        informer.wait_synced().await;

        let missing = GroupVersionKind::gvk("nowhere.wasmop.dev", "v1", "Ghost");
        let error = cache
            .informer(&missing)
            .await
            .err()
            .context("a kind nobody serves was found")?;
        assert!(
            error.to_string().contains("Ghost in nowhere.wasmop.dev/v1"),
            "{error}"
        );
        Ok(())
    })
    .await
}
