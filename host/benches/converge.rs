//! One wasmop host with the `webapp` plugin against a real control plane: how long N WebApps
//! created at once take to converge (each has its Deployment, Service and a status that observed
//! its generation), reconciles per second, and the process's RSS. Then what one cached object
//! costs: the RSS an informer adds when it lists ConfigMaps, beside the objects' JSON bytes.
//! Last, what compiling the plugin with an empty cache costs.
//!
//! Run with `cargo bench -p wasmop --bench converge` after building the guests;
//! `WASMOP_BENCH_WEBAPPS` (default 1000) and `WASMOP_BENCH_CONFIGMAPS` (default 10000) size it.
//! The load generator (the WebApp creates and the convergence polls) runs in the same process,
//! so the peak RSS is an upper bound for the host alone.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::core::ApiResource;
use serde_json::json;
use wasmop::cache::Cache;
use wasmop::manager::{Manager, ManagerOptions};
use wasmop::runtime::memory::MemoryHost;
use wasmop::runtime::{PluginOptions, Runtime, RuntimeConfig};
use wasmop_envtest::ControlPlane;

/// The allocator of the `wasmop` binary, so the figures are the binary's.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// How long convergence may take before the benchmark gives up.
const CONVERGE_LIMIT: Duration = Duration::from_secs(600);
/// Long enough for jemalloc's background purge (10 s decay) to return freed pages.
const SETTLE: Duration = Duration::from_secs(15);
/// Concurrent creates of the load generator.
const CREATORS: usize = 32;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn sized(variable: &str, default: usize) -> usize {
    std::env::var(variable)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// This process's resident set and its high-water mark, in MiB.
fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn webapps(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp");
    Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::from_gvk_with_plural(&gvk, "webapps"),
    )
}

fn converged(app: &DynamicObject) -> bool {
    let observed = app.data["status"]["observedGeneration"].as_i64();
    observed.is_some() && observed == app.metadata.generation
}

/// Creates `count` objects made by `object(i)`, [`CREATORS`] at a time.
async fn create_all<K>(
    api: &Api<K>,
    count: usize,
    object: impl Fn(usize) -> serde_json::Value,
) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    stream::iter(0..count)
        .map(|i| {
            let made = serde_json::from_value::<K>(object(i));
            async move {
                api.create(&PostParams::default(), &made?).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(CREATORS)
        .try_collect::<()>()
        .await
}

fn webapp_object(i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "example.wasmop.dev/v1alpha1",
        "kind": "WebApp",
        "metadata": {"name": format!("app-{i:05}")},
        "spec": {"image": "nginx:1.27", "replicas": 1 + i % 3, "port": 8080},
    })
}

fn configmap_object(i: usize) -> serde_json::Value {
    json!({
        "metadata": {"name": format!("cm-{i:06}"), "labels": {"app": "bench", "shard": format!("{}", i % 16)}},
        "data": {"config.yaml": "x".repeat(512), "index": i.to_string()},
    })
}

/// Polls until every WebApp has converged and owns its Deployment and Service.
async fn wait_converged(
    client: &kube::Client,
    namespace: &str,
    count: usize,
) -> anyhow::Result<()> {
    let apps = webapps(client, namespace);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let mut last = usize::MAX;
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        anyhow::ensure!(
            Instant::now() < deadline,
            "only {last} of {count} WebApps converged within {CONVERGE_LIMIT:?}"
        );
        let done = apps
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|a| converged(a))
            .count();
        if done != last {
            eprintln!("  {done}/{count} converged");
            last = done;
        }
        if done == count {
            let owned = |n: usize| n == count;
            let d = deployments.list(&ListParams::default()).await?.items.len();
            let s = services.list(&ListParams::default()).await?.items.len();
            anyhow::ensure!(owned(d) && owned(s), "{d} Deployments, {s} Services");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn converge(plane: &ControlPlane, count: usize) -> anyhow::Result<()> {
    let client = plane.client().await?;
    plane
        .install_crds(&[repo().join("deploy/crds/webapp.yaml")])
        .await?;
    let namespace = plane.create_namespace("bench").await?;
    let (before, _) = rss();
    let mut manager = Manager::new(client.clone(), ManagerOptions::default())?;
    let webapp = repo().join("target/components/webapp.wasm");
    manager
        .add_plugin(&webapp, PluginOptions::default())
        .await?;
    let (loaded, _) = rss();
    let compiled = manager.runtime().cache_misses() > 0;
    let started = Instant::now();
    create_all(&webapps(&client, &namespace), count, webapp_object).await?;
    let created = started.elapsed();
    wait_converged(&client, &namespace, count).await?;
    let took = started.elapsed();
    let reconciles = manager.controller("webapp").unwrap().stats().total();
    let (now, peak) = rss();
    println!();
    println!("| {count} WebApps, one host | |");
    println!("|---|---|");
    let source = if compiled {
        "compiled"
    } else {
        "from the cache"
    };
    println!("| plugin loaded | {source} |");
    println!("| created in | {:.2} s |", created.as_secs_f64());
    println!("| converged in | {:.2} s |", took.as_secs_f64());
    println!(
        "| reconciles | {reconciles} ({:.2} per WebApp) |",
        reconciles as f64 / count as f64
    );
    println!(
        "| reconciles/s | {:.0} |",
        reconciles as f64 / took.as_secs_f64()
    );
    println!(
        "| RSS before the manager / plugin loaded / converged / peak | {before:.1} / {loaded:.1} / {now:.1} / {peak:.1} MiB |"
    );
    manager.stop().await?;
    Ok(())
}

async fn cache_cost(plane: &ControlPlane, count: usize) -> anyhow::Result<()> {
    let namespace = plane.create_namespace("cache-cost").await?;
    let client = plane.client().await?;
    eprintln!("creating {count} ConfigMaps");
    let configmaps = Api::namespaced(client.clone(), &namespace);
    create_all::<ConfigMap>(&configmaps, count, configmap_object).await?;
    let cache = Cache::new(client);
    let (before, _) = rss();
    let informer = cache
        .informer(&GroupVersionKind::gvk("", "v1", "ConfigMap"))
        .await?;
    informer.wait_synced().await;
    let (after, _) = rss();
    let (objects, json_bytes) = informer.size();
    let per_object = (after - before) * 1024.0 * 1024.0 / objects as f64;
    println!();
    println!("| cache cost, {objects} ConfigMaps | |");
    println!("|---|---|");
    println!(
        "| JSON per object | {:.0} B |",
        json_bytes as f64 / objects as f64
    );
    println!("| RSS per object | {per_object:.0} B |");
    println!(
        "| RSS / JSON | {:.2}x |",
        per_object * objects as f64 / json_bytes as f64
    );
    drop((informer, cache));
    configmaps
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    Ok(())
}

/// Waits for the allocator to hand freed memory back, so the next phase's RSS growth is its own.
async fn settle() {
    tokio::time::sleep(SETTLE).await;
}

/// Compiles the plugin with an empty cache: the cost a first start pays once per plugin version.
async fn cold_compile() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: dir.path().to_owned(),
        ..RuntimeConfig::default()
    })?;
    let (before, _) = rss();
    let started = Instant::now();
    let host = MemoryHost::new();
    let webapp = repo().join("target/components/webapp.wasm");
    runtime
        .load(&webapp, PluginOptions::default(), |_| host.services())
        .await?;
    let took = started.elapsed();
    let (loaded, peak) = rss();
    settle().await;
    let (settled, _) = rss();
    println!();
    println!(
        "| cold compile of webapp.wasm ({} KiB) | |",
        std::fs::metadata(&webapp)?.len() / 1024
    );
    println!("|---|---|");
    println!("| took | {:.2} s |", took.as_secs_f64());
    println!(
        "| RSS before / loaded / 15 s later / peak | {before:.1} / {loaded:.1} / {settled:.1} / {peak:.1} MiB |"
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let plane = ControlPlane::start().await?;
    converge(&plane, sized("WASMOP_BENCH_WEBAPPS", 1000)).await?;
    settle().await;
    cache_cost(&plane, sized("WASMOP_BENCH_CONFIGMAPS", 10_000)).await?;
    settle().await;
    cold_compile().await
}
