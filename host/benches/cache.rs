//! The informer cache's memory per object: an informer of ConfigMaps is started against an
//! in-process apiserver that lists N objects (as a real one sends them: managedFields, labels,
//! annotations, about 750 bytes each, in pages of 500) and then watches forever; once synced, the
//! process's RSS above what it held with an informer of an empty list (as the host with an empty
//! namespace) is divided by N and compared with the JSON bytes the cache holds per object. Everything from the response text on goes
//! through the host's own path: kube's watcher, the informer's decoding, the store and indexes.
//!
//! Each N runs in a child process of its own, with the host's allocator (jemalloc), and RSS is
//! read from /proc/self/status once it has settled (jemalloc hands freed pages back after a
//! decay of seconds). Not part of `make bench`; run with `cargo bench -p wasmop --bench cache`.

use std::convert::Infallible;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame};
use kube::client::Body;
use wasmop::cache::{Cache, Informer};
use wasmop::contract::object::GroupVersionKind;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Objects per run.
const COUNTS: [usize; 3] = [1_000, 10_000, 50_000];
/// Objects per list page, kube's watcher's default.
const PAGE: usize = 500;
/// The namespace listed.
const NAMESPACE: &str = "bench";
/// Set in a child process to the objects it measures.
const CHILD: &str = "WASMOP_CACHE_BENCH_OBJECTS";

/// Object `i` as the apiserver lists it.
fn configmap(i: usize) -> serde_json::Value {
    let time = "2026-01-02T03:04:05Z";
    serde_json::json!({
        "metadata": {
            "name": format!("cm-{i:06}"),
            "namespace": NAMESPACE,
            "uid": format!("6f0c2b7e-{:04x}-4d3a-9c1e-{:012x}", i % 0xffff, i),
            "resourceVersion": (100_000 + i).to_string(),
            "creationTimestamp": time,
            "labels": {"app": "bench", "shard": (i % 16).to_string()},
            "annotations": {"bench.wasmop.dev/index": i.to_string()},
            "managedFields": [{
                "manager": "wasmop-bench",
                "operation": "Update",
                "apiVersion": "v1",
                "time": time,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:data": {".": {}, "f:config.yaml": {}, "f:index": {}},
                    "f:metadata": {
                        "f:annotations": {".": {}, "f:bench.wasmop.dev/index": {}},
                        "f:labels": {".": {}, "f:app": {}, "f:shard": {}},
                    },
                },
            }],
        },
        "data": {"config.yaml": "x".repeat(460), "index": i.to_string()},
    })
}

/// The page of the list starting at the `continue` token in `query`.
fn page(query: &str, count: usize) -> String {
    let from: usize = query
        .split('&')
        .find_map(|p| p.strip_prefix("continue="))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let to = (from + PAGE).min(count);
    let next = if to < count {
        to.to_string()
    } else {
        String::new()
    };
    let items: Vec<_> = (from..to).map(configmap).collect();
    serde_json::json!({
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "200000", "continue": next},
        "items": items,
    })
    .to_string()
}

/// The apiserver's answer to `request`: discovery, a list page, or a watch that never ends.
fn respond(
    request: &http::Request<Body>,
    count: usize,
) -> http::Response<BoxBody<Bytes, Infallible>> {
    let query = request.uri().query().unwrap_or_default();
    let text = |text: String| Full::new(Bytes::from(text)).boxed();
    let body = if request.uri().path() == "/api/v1" {
        text(serde_json::json!({
            "kind": "APIResourceList",
            "groupVersion": "v1",
            "resources": [{"name": "configmaps", "singularName": "configmap", "namespaced": true,
                "kind": "ConfigMap", "verbs": ["get", "list", "watch"]}],
        }).to_string())
    } else if query.contains("watch=true") {
        let never = futures::stream::pending::<Result<Frame<Bytes>, Infallible>>();
        StreamBody::new(never).boxed()
    } else {
        text(page(query, count))
    };
    http::Response::new(body)
}

/// The process's resident set in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

/// RSS once it has stopped falling: past jemalloc's decay of dirty pages (1 s, set in
/// `.cargo/config.toml`), two readings a second apart within 0.5 %, or after a minute.
async fn settled_rss() -> usize {
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut last = rss();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = rss();
        if now.abs_diff(last) * 200 <= last || started.elapsed() > Duration::from_secs(60) {
            return now;
        }
        last = now;
    }
}

/// A synced informer of ConfigMaps from an apiserver that lists `count` of them.
async fn informer(count: usize) -> Arc<Informer> {
    let service = tower::service_fn(move |request: http::Request<Body>| async move {
        Ok::<_, Infallible>(respond(&request, count))
    });
    let cache = Cache::new(kube::Client::new(service, NAMESPACE));
    let informer = cache
        .informer(&GroupVersionKind::gvk("", "v1", "ConfigMap"))
        .await
        .expect("the fake apiserver's discovery");
    informer.wait_synced().await;
    informer
}

/// Measures `count` objects in this process against an informer of none; prints one line.
async fn measure(count: usize) {
    let wire_bytes = page("", 1).len() - page("", 0).len();
    let _empty = informer(0).await;
    let before = settled_rss().await;
    let started = Instant::now();
    let full = informer(count).await;
    let synced = started.elapsed();
    let after = settled_rss().await;
    let (objects, json_bytes) = full.size();
    assert_eq!(objects, count, "the informer did not cache every object");
    let per_object = after.saturating_sub(before) as f64 / count as f64;
    let json = json_bytes as f64 / count as f64;
    println!(
        "{count:>6} objects: {per_object:>6.0} B of RSS per object, {json:>4.0} B of JSON each \
         ({wire_bytes} as listed): {:.2}x the JSON; synced in {:.2} s",
        per_object / json,
        synced.as_secs_f64(),
    );
}

fn main() {
    if let Ok(count) = std::env::var(CHILD) {
        let count = count.parse().expect("a count of objects");
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        runtime.block_on(measure(count));
        return;
    }
    let me = std::env::current_exe().expect("the bench's own path");
    for count in COUNTS {
        let status = Command::new(&me)
            .env(CHILD, count.to_string())
            .status()
            .expect("running a measurement");
        assert!(status.success(), "the run of {count} objects failed");
    }
}
