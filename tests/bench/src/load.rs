//! The load the operators are put under, driven through the apiserver like users would: WebApps
//! created many at once, ConfigMaps filling a namespace, watching until every WebApp has
//! converged, and clearing a namespace again (there is no garbage collector or namespace
//! controller on this control plane, so everything is deleted explicitly).

use std::collections::HashSet;
use std::ops::Range;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::Api;
use kube::api::{
    DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::core::ApiResource;
use kube::runtime::watcher;
use serde_json::json;

use crate::converged;

/// Concurrent requests of the load generator.
const CONCURRENCY: usize = 32;
/// How often progress is printed while waiting.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// How long convergence may take before the run fails.
const CONVERGE_LIMIT: Duration = Duration::from_secs(900);

/// The API group of `deploy/crds/webapp.yaml`'s WebApps.
pub const GROUP: &str = "example.wasmop.dev";

/// The WebApps of `namespace`.
pub fn webapps(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    webapps_in(client, namespace, GROUP)
}

/// The WebApps of API group `group` in `namespace`.
pub fn webapps_in(client: &kube::Client, namespace: &str, group: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1alpha1", "WebApp");
    Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::from_gvk_with_plural(&gvk, "webapps"),
    )
}

/// WebApp `i` of a run.
pub fn webapp(i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "example.wasmop.dev/v1alpha1",
        "kind": "WebApp",
        "metadata": {"name": format!("app-{i:05}")},
        "spec": {"image": "nginx:1.27", "replicas": 1 + i % 3, "port": 8080},
    })
}

/// ConfigMap `i` of a pre-filled namespace: ~750 bytes of JSON.
pub fn configmap(i: usize) -> serde_json::Value {
    json!({
        "metadata": {"name": format!("cm-{i:06}"), "labels": {"app": "bench", "shard": format!("{}", i % 16)}},
        "data": {"config.yaml": "x".repeat(512), "index": i.to_string()},
    })
}

/// Creates the objects `object(i)` for every `i` of `range`, many at a time.
pub async fn create_all<K>(
    api: &Api<K>,
    range: Range<usize>,
    object: impl Fn(usize) -> serde_json::Value,
) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    stream::iter(range)
        .map(|i| {
            let made = serde_json::from_value::<K>(object(i));
            async move {
                api.create(&PostParams::default(), &made?).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect()
        .await
}

/// Watches until all `count` WebApps of `namespace` have a status that observed their
/// generation, printing progress every few seconds, then until every one controls a Deployment
/// and a Service built to its spec ([`converged`]). A watch, not repeated lists, while the
/// operator works, so the apiserver's time goes to the operator measured.
pub async fn wait_converged(
    client: &kube::Client,
    namespace: &str,
    count: usize,
) -> anyhow::Result<()> {
    wait_converged_in(&webapps(client, namespace), client, namespace, count).await
}

/// [`wait_converged`] for the WebApps `apps` of `namespace`, of any API group.
pub async fn wait_converged_in(
    apps: &Api<DynamicObject>,
    client: &kube::Client,
    namespace: &str,
    count: usize,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut last = Vec::new();
    let waited = async {
        watch_converged(apps, namespace, count, started).await?;
        loop {
            last = converged::unconverged(apps, client, namespace).await?;
            if last.is_empty() {
                return anyhow::Ok(());
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    match tokio::time::timeout(CONVERGE_LIMIT, waited).await {
        Ok(done) => done,
        Err(_) => anyhow::bail!(
            "{count} WebApps did not converge within {CONVERGE_LIMIT:?}; {} not as specified, first {:?}",
            last.len(),
            last.first()
        ),
    }
}

async fn watch_converged(
    apps: &Api<DynamicObject>,
    namespace: &str,
    count: usize,
    started: Instant,
) -> anyhow::Result<()> {
    let events = watcher(apps.clone(), watcher::Config::default());
    let mut events = std::pin::pin!(events);
    let mut done: HashSet<String> = HashSet::new();
    let mut progress =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    while done.len() < count {
        tokio::select! {
            event = events.try_next() => match event? {
                Some(event) => record(&mut done, event),
                None => anyhow::bail!("the watch of WebApps in {namespace} ended"),
            },
            _ = progress.tick() => eprintln!(
                "    {}/{count} converged after {:.0} s",
                done.len(),
                started.elapsed().as_secs_f64()
            ),
        }
    }
    Ok(())
}

/// Keeps `done` the names of the converged WebApps as watch events arrive.
fn record(done: &mut HashSet<String>, event: watcher::Event<DynamicObject>) {
    match event {
        watcher::Event::Init => done.clear(),
        watcher::Event::InitApply(app) | watcher::Event::Apply(app) => {
            let name = app.metadata.name.clone().unwrap_or_default();
            if converged::observed(&app) {
                done.insert(name);
            } else {
                done.remove(&name);
            }
        }
        watcher::Event::Delete(app) => {
            done.remove(&app.metadata.name.unwrap_or_default());
        }
        watcher::Event::InitDone => {}
    }
}

/// Deletes every WebApp (releasing its finalizer), Deployment, Service and ConfigMap that the
/// runs made in `namespace`, and waits until the WebApps are gone.
pub async fn clear(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let apps = webapps(client, namespace);
    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    let names: Vec<String> = apps
        .list_metadata(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|a| a.metadata.name)
        .collect();
    stream::iter(names)
        .map(|name| {
            let (apps, release) = (&apps, &release);
            async move {
                apps.patch(&name, &PatchParams::default(), release)
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<()>()
        .await?;
    let all = DeleteParams::default();
    let listed = ListParams::default();
    apps.delete_collection(&all, &listed).await?;
    Api::<Deployment>::namespaced(client.clone(), namespace)
        .delete_collection(&all, &listed)
        .await?;
    Api::<Service>::namespaced(client.clone(), namespace)
        .delete_collection(&all, &listed)
        .await?;
    let markers = ListParams::default().labels("example.wasmop.dev/webapp");
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .delete_collection(&all, &markers)
        .await?;
    while !apps
        .list_metadata(&ListParams::default().limit(1))
        .await?
        .items
        .is_empty()
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}
