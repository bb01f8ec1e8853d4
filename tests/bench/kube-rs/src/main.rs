//! `webapp-kube-rs`: the `webapp` operator written natively against kube-runtime, the Rust
//! baseline the benchmarks compare wasmop with. Each WebApp (`example.wasmop.dev/v1alpha1`) gets a
//! finalizer, an external marker ConfigMap, a Deployment and a ClusterIP Service it controls, and
//! a status — the behaviour of the `webapp` plugin (`plugins/webapp`).
//!
//! It reads the kubeconfig from `KUBECONFIG` (or the in-cluster config) and watches the namespace
//! `WEBAPP_NAMESPACE`, or all namespaces when that is unset; `WEBAPP_GROUP` serves WebApps from
//! another API group. It has no leader election and no HTTP ports, logs to stderr, and stops on
//! SIGTERM or SIGINT once running reconciles finish.

mod desired;
mod reconcile;
mod resource;

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::Context as _;
use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::runtime::controller::{self, Controller};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client, Resource};
use tracing_subscriber::EnvFilter;

use crate::reconcile::Context;
use crate::resource::WebApp;

/// jemalloc, as the wasmop binary uses, so that the two processes' RSS compare fairly.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The environment variable naming the one namespace to watch.
const NAMESPACE_ENV: &str = "WEBAPP_NAMESPACE";
/// How many WebApps are reconciled at once (the plugin's `max_concurrent_reconciles`).
const CONCURRENCY: u16 = 4;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let namespace = std::env::var(NAMESPACE_ENV)
        .ok()
        .filter(|ns| !ns.is_empty());
    let client = Client::try_default()
        .await
        .context("loading the kubeconfig")?;
    run(client, namespace.as_deref()).await;
    Ok(())
}

/// The Api of `K` in `namespace`, or across all namespaces.
fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Drops the managedFields of an object before it is cached.
fn strip_managed_fields<K: Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// Runs the controller until a shutdown signal.
async fn run(client: Client, namespace: Option<&str>) {
    let config = watcher::Config::default();

    // Every watched stream drops managedFields before its store caches the object, as wasmop's
    // cache and controller-runtime's `TransformStripManagedFields` do: all operators of the
    // benchmark cache the same objects.

    // WebApps: watched as `Controller::new` does, through a reflector whose store the controller
    // reads.
    let (webapps, writer) = reflector::store();
    let webapp_events = reflector(
        writer,
        watcher(api::<WebApp>(&client, namespace), config.clone()).modify(strip_managed_fields),
    )
    .applied_objects();

    // Owned objects: one watch each, cached in a store the reconciler reads, and triggering the
    // WebApp that controls the changed object.
    let (deployments, writer) = reflector::store();
    let deployment_events = watcher(api::<Deployment>(&client, namespace), config.clone())
        .default_backoff()
        .modify(strip_managed_fields)
        .reflect(writer)
        .touched_objects();
    let (services, writer) = reflector::store();
    let service_events = watcher(api::<Service>(&client, namespace), config.clone())
        .default_backoff()
        .modify(strip_managed_fields)
        .reflect(writer)
        .touched_objects();

    // ConfigMaps: cached whole but for managedFields, as controller-runtime and wasmop do, so that
    // a converged WebApp reads its marker without a request and every operator of the benchmark
    // holds the same objects.
    let (markers, writer) = reflector::store();
    let marker_cache = watcher(
        api::<ConfigMap>(&client, namespace),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(strip_managed_fields)
    .reflect(writer)
    .for_each(|event| {
        if let Err(error) = event {
            tracing::warn!("watching marker ConfigMaps: {error}");
        }
        std::future::ready(())
    });
    let marker_cache = tokio::spawn(marker_cache);

    let ctx = Arc::new(Context::new(client.clone(), deployments, services, markers));
    tracing::info!(
        namespace = namespace.unwrap_or("<all>"),
        concurrency = CONCURRENCY,
        "webapp-kube-rs starting"
    );
    Controller::for_stream(webapp_events, webapps)
        .owns_stream(deployment_events)
        .owns_stream(service_events)
        .with_config(controller::Config::default().concurrency(CONCURRENCY))
        .shutdown_on_signal()
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| {
            match result {
                // error_policy has logged it.
                Ok(_) | Err(controller::Error::ReconcilerFailed(..)) => {}
                Err(controller::Error::ObjectNotFound(key)) => {
                    tracing::debug!("WebApp {key} is gone");
                }
                Err(error) => tracing::warn!("controller: {error}"),
            }
            std::future::ready(())
        })
        .await;
    marker_cache.abort();
    tracing::info!("webapp-kube-rs stopped");
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};

    use super::*;

    #[test]
    fn cached_objects_lose_their_managed_fields_only() {
        let mut marker = ConfigMap {
            metadata: ObjectMeta {
                name: Some("webapp-marker-shop".into()),
                labels: Some([("example.wasmop.dev/webapp".into(), "shop".into())].into()),
                managed_fields: Some(vec![ManagedFieldsEntry {
                    manager: Some("webapp-kube-rs".into()),
                    ..ManagedFieldsEntry::default()
                }]),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let mut expected = marker.clone();
        expected.metadata.managed_fields = None;
        strip_managed_fields(&mut marker);
        assert_eq!(marker, expected);
    }
}
