//! What the host parses, attacked on the real control plane: objects nested past the depth bound
//! (`wasmop::contract::depth::MAX_DEPTH`) — built by a plugin one JSON patch path at a time, or stored by
//! someone else in a free-form kind, a `WasmReconciler` or an object under review — and reconcile
//! errors of many MiB. Each test checks what a user would: nothing deeper than the bound reached
//! the apiserver from a plugin, one deep object never stops the others of its kind from syncing
//! and reconciling, the host keeps running, and its log lines stay bounded. Each prints what it
//! measured.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::logged::Logged;
use common::scrape::{free_address, get, parse, value, wait_ready};
use kube::api::{Api, DynamicObject, PostParams};
use serde::de::{MapAccess, Visitor};
use serde_json::{Value, json};
use wasmop::cache::Cache;
use wasmop::contract::depth::{self, Bounded, MAX_DEPTH};
use wasmop::contract::object::{GroupVersionKind, ObjectKey};
use wasmop::runtime::{DispatchError, Plugin, PluginOptions};
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(240);

/// How deep the objects stored behind the host's back nest: the depth the issue saw stored.
const POISON: usize = 302;

/// The label guest-deep sets on the Blobs it reconciles.
const SEEN: &str = "guest-deep.wasmop.dev/seen";

const WRITES: &[&str] = &["POST", "PUT", "PATCH", "APPLY"];

/// One test at a time: the apiserver's request counters are process-wide, so a test counting
/// them must not share the apiserver with another test of this file.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn blob_kind() -> GroupVersionKind {
    GroupVersionKind::gvk("hostile.wasmop.dev", "v1", "Blob")
}

async fn install_blobs(plane: &ControlPlane) -> anyhow::Result<()> {
    let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/guests/deep/blob.yaml");
    plane.install_crds(&[crd]).await?;
    Ok(())
}

fn blobs(client: kube::Client, namespace: &str) -> Api<DynamicObject> {
    let resource = kube::core::ApiResource::from_gvk_with_plural(&blob_kind(), "blobs");
    Api::namespaced_with(client, namespace, &resource)
}

/// `{"a":{"a":…{}…}}`, `depth` levels deep.
fn nested(depth: usize) -> String {
    let mut text = "{\"a\":".repeat(depth.saturating_sub(1));
    text.push_str("{}");
    text.push_str(&"}".repeat(depth.saturating_sub(1)));
    text
}

/// Posts `body` (JSON text) to `path` as cluster admin and returns the apiserver's answer as
/// text, never parsing it (the test's own client would fail on a deep one).
async fn post_text(client: &kube::Client, path: &str, body: String) -> anyhow::Result<String> {
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(body.into_bytes())?;
    Ok(client.request_text(request).await?)
}

/// `GET path` as cluster admin, as text.
async fn get_text(client: &kube::Client, path: &str) -> anyhow::Result<String> {
    let request = http::Request::get(path).body(Vec::new())?;
    Ok(client.request_text(request).await?)
}

/// Creates Blob `namespace/name` whose spec is `spec` (JSON text), as cluster admin.
async fn create_blob(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    spec: &str,
) -> anyhow::Result<()> {
    let body = format!(
        r#"{{"apiVersion":"hostile.wasmop.dev/v1","kind":"Blob","metadata":{{"name":"{name}"}},"spec":{spec}}}"#
    );
    let path = format!("/apis/hostile.wasmop.dev/v1/namespaces/{namespace}/blobs");
    post_text(client, &path, body).await?;
    Ok(())
}

fn blob_path(namespace: &str, name: &str) -> String {
    format!("/apis/hostile.wasmop.dev/v1/namespaces/{namespace}/blobs/{name}")
}

/// The top-level members of an object's JSON text, each that nests within the bound; deeper ones
/// are left out (read without recursion, however deep).
fn shallow_members(text: &str) -> anyhow::Result<serde_json::Map<String, Value>> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = serde_json::Map<String, Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut members = serde_json::Map::new();
            while let Some(key) = map.next_key::<String>()? {
                if let Some(value) = map.next_value_seed(Bounded { room: MAX_DEPTH })? {
                    members.insert(key, value);
                }
            }
            Ok(members)
        }
    }
    use serde::Deserializer;
    Ok(serde_json::Deserializer::from_str(text).deserialize_map(Members)?)
}

/// Requests the apiserver has answered for `resource` with one of `verbs`, from its own metrics.
async fn served(client: &kube::Client, resource: &str, verbs: &[&str]) -> anyhow::Result<f64> {
    let samples = parse(&get_text(client, "/metrics").await?);
    let all = samples.get("apiserver_request_total").into_iter().flatten();
    let of = |labels: &std::collections::HashMap<String, String>, key: &str| {
        labels.get(key).cloned().unwrap_or_default()
    };
    Ok(all
        .filter(|(labels, _)| of(labels, "resource") == resource)
        .filter(|(labels, _)| verbs.contains(&of(labels, "verb").as_str()))
        .map(|(_, count)| count)
        .sum())
}

/// This file's turn on the shared control plane, with the Blob kind installed: the plane and a
/// cluster-admin client.
async fn blob_plane() -> anyhow::Result<(
    tokio::sync::MutexGuard<'static, ()>,
    Arc<ControlPlane>,
    kube::Client,
)> {
    let serial = SERIAL.lock().await;
    let plane = shared_by(module_path!()).await?;
    install_blobs(&plane).await?;
    let client = plane.client().await?;
    Ok((serial, plane, client))
}

/// Loads guest-deep in this process with the production client and event recorder.
async fn load_deep(kube: kube::Client) -> anyhow::Result<Plugin> {
    let cache = Arc::new(Cache::new(kube.clone()));
    let services = common::production_services(kube, cache);
    let runtime = common::runtime();
    let options = PluginOptions {
        memory_limit: 128 << 20,
        reconcile_timeout: Some(Duration::from_secs(60)),
        ..PluginOptions::default()
    };
    Ok(runtime
        .load(&common::component("guest-deep"), options, services)
        .await?)
}

/// A directory holding guest-deep, for `--plugin-dir`.
fn plugin_dir() -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    std::fs::copy(
        common::component("guest-deep"),
        dir.path().join("deep.wasm"),
    )?;
    Ok(dir)
}

/// The `wasmop` binary running guest-deep over `namespaces`, its log kept; its metrics address.
async fn host(
    plane: &ControlPlane,
    dir: &Path,
    namespaces: &[&str],
) -> anyhow::Result<(Logged, String)> {
    let (metrics, probes) = (free_address(), free_address());
    let mut command = common::host(plane);
    command
        .arg("--plugin-dir")
        .arg(dir)
        .args(["--namespaces", &namespaces.join(",")])
        .args(["--metrics-bind-address", &metrics])
        .args(["--health-probe-bind-address", &probes])
        .env("RUST_LOG", "info");
    let logged = Logged::spawn("host", command)?;
    wait_ready(&probes).await;
    Ok((logged, metrics))
}

/// Whether guest-deep has labelled Blob `namespace/name`.
async fn seen(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<bool> {
    let blob = blobs(client.clone(), namespace).get(name).await?;
    Ok(blob.metadata.labels.is_some_and(|l| l.contains_key(SEEN)))
}

async fn until_seen(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<()> {
    while !seen(client, namespace, name).await? {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The host's count of skipped Blobs.
async fn skipped(metrics: &str) -> anyhow::Result<f64> {
    let (_, text) = get(metrics, "/metrics").await?;
    let want = [("kind", "Blob"), ("group", "hostile.wasmop.dev")];
    Ok(value(&parse(&text), "wasmop_cache_objects_skipped_total", &want).unwrap_or(0.0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_cannot_build_depth_through_json_patch_paths() -> anyhow::Result<()> {
    within(LIMIT, "the depth attack", async {
        let (_serial, plane, kube) = blob_plane().await?;
        let namespace = plane.create_namespace("deep-patch").await?;
        create_blob(&kube, &namespace, "deep-300", "{}").await?;
        let plugin = load_deep(kube.clone()).await?;
        let before = served(&kube, "blobs", WRITES).await?;

        let result = plugin
            .reconcile(&ObjectKey::new(&namespace, "deep-300"))
            .await;
        let Err(DispatchError::Failed { message, .. }) = result else {
            panic!("expected guest-deep's report, got {result:?}");
        };
        let report: Value = serde_json::from_str(&message)?;
        let sent = served(&kube, "blobs", WRITES).await? - before;
        let stored = get_text(&kube, &blob_path(&namespace, "deep-300")).await?;
        let with_managed_fields = depth::of_text(stored.as_bytes());
        let mut stored: Value = serde_json::from_str(&stored)?;
        stored["metadata"]
            .as_object_mut()
            .map(|m| m.remove("managedFields"));
        let depth = depth::of_value(&stored);
        println!("depth attack: {report}");
        println!(
            "depth attack: {sent} writes reached the apiserver; the stored Blob nests {depth} \
             levels (bound {MAX_DEPTH}), {with_managed_fields} with the apiserver's managedFields"
        );

        // The object and its spec are two levels; each accepted patch adds one.
        let accepted = MAX_DEPTH - 2;
        assert_eq!(report["accepted"], accepted, "{report}");
        assert_eq!(report["first_refused"], accepted + 1, "{report}");
        assert_eq!(report["refused"], json!({"invalid": 300 - accepted}));
        for call in ["merge", "apply", "update", "json-value", "copy-deeper"] {
            assert_eq!(report["calls"][call], "invalid", "{call}: {report}");
        }
        assert_eq!(report["calls"]["merge-at-bound"], "ok", "{report}");
        assert_eq!(
            sent,
            (accepted + 1) as f64,
            "only the accepted patches were sent"
        );
        assert_eq!(
            depth, MAX_DEPTH,
            "the stored object is at the bound, not past it"
        );

        let only = wasmop::cache::Namespaces::Only(vec![namespace.clone()]);
        let cache = Cache::scoped(kube.clone(), only);
        let informer = cache.informer(&blob_kind()).await?;
        informer.wait_synced().await;
        assert!(
            informer
                .get(&ObjectKey::new(&namespace, "deep-300"))
                .is_some()
        );
        assert_eq!(
            informer.skipped(),
            0,
            "what a plugin can build, the cache holds"
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_object_is_skipped_and_its_kind_keeps_syncing_and_reconciling() -> anyhow::Result<()>
{
    within(LIMIT, "a poisoned kind", async {
        let (_serial, plane, kube) = blob_plane().await?;
        let mut namespaces = Vec::new();
        for prefix in ["poison-a", "poison-b", "poison-c"] {
            namespaces.push(plane.create_namespace(prefix).await?);
        }
        let [a, b, c] = [&namespaces[0], &namespaces[1], &namespaces[2]];
        create_blob(&kube, a, "poison", &nested(POISON - 1)).await?;
        let stored = get_text(&kube, &blob_path(a, "poison")).await?;
        let stored_depth = depth::of_text(stored.as_bytes());
        println!(
            "the apiserver stored a Blob nesting {POISON} levels; its JSON, managedFields \
             included, nests {stored_depth}"
        );
        assert!(stored_depth > 128, "past serde_json's recursion limit");
        for namespace in [a, b, c] {
            create_blob(&kube, namespace, "fine", "{}").await?;
        }

        let dir = plugin_dir()?;
        let names: Vec<&str> = namespaces.iter().map(String::as_str).collect();
        let (mut host, metrics) = host(&plane, dir.path(), &names).await?;
        for namespace in [a, b, c] {
            until_seen(&kube, namespace, "fine").await?;
        }
        let listed = skipped(&metrics).await?;
        println!("after the list: every fine Blob reconciled, {listed} skipped");
        assert!(listed >= 1.0, "the deep Blob is counted");

        // Through the watch: another deep one, then a fine one after it.
        create_blob(&kube, b, "poison", &nested(POISON - 1)).await?;
        create_blob(&kube, c, "late", "{}").await?;
        until_seen(&kube, c, "late").await?;
        while skipped(&metrics).await? < listed + 1.0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let watched = skipped(&metrics).await?;
        let reported = host
            .log()
            .iter()
            .filter(|l| l.contains("skips an object") && l.contains("poison"))
            .cloned()
            .collect::<Vec<_>>();
        println!("after the watch: {watched} skipped; the log says:");
        for line in &reported {
            println!("  {line}");
        }
        for namespace in [a, b] {
            assert!(
                reported.iter().any(|l| l.contains(namespace.as_str())),
                "the skip in {namespace} is logged with its namespace"
            );
            let poison = get_text(&kube, &blob_path(namespace, "poison")).await?;
            assert!(!poison.contains(SEEN), "a skipped object is not reconciled");
        }
        assert_eq!(
            host.count("recursion limit"),
            0,
            "no list or watch failed on depth"
        );
        host.assert_healthy()?;
        common::terminate(host.child).await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_reconcile_errors_leave_bounded_log_lines() -> anyhow::Result<()> {
    within(LIMIT, "huge reconcile errors", async {
        let (_serial, plane, kube) = blob_plane().await?;
        let namespace = plane.create_namespace("huge-error").await?;
        create_blob(&kube, &namespace, "huge-error-7", "{}").await?;
        let dir = plugin_dir()?;
        let (mut host, _) = host(&plane, dir.path(), &[&namespace]).await?;
        let errors = |host: &Logged| {
            let lines = host.log();
            let failed: Vec<usize> = lines
                .iter()
                .filter(|l| l.contains("huge-error-7 failed"))
                .map(String::len)
                .collect();
            let total: usize = lines.iter().map(|l| l.len() + 1).sum();
            (failed, total)
        };
        const ERRORS: usize = 8;
        while errors(&host).0.len() < ERRORS {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        create_blob(&kube, &namespace, "fine", "{}").await?;
        until_seen(&kube, &namespace, "fine").await?;
        let (failed, total) = errors(&host);
        let longest = failed.iter().copied().max().unwrap_or_default();
        println!(
            "{} reconcile errors of 7 MiB each: the longest log line is {longest} bytes, the \
             whole log {total} bytes ({} bytes per error)",
            failed.len(),
            total / failed.len()
        );
        let bound = wasmop::contract::GuestLimits::default().log_bytes + 1024;
        assert!(longest <= bound, "a log line of {longest} bytes");
        assert!(
            total <= failed.len() * bound + (256 << 10),
            "{total} bytes of log"
        );
        host.assert_healthy()?;
        common::terminate(host.child).await?;
        Ok(())
    })
    .await
}

/// The status of WasmReconciler `name`, read as text (the object may nest past what a parser
/// reads) and only its shallow members parsed.
async fn reconciler_status(client: &kube::Client, name: &str) -> anyhow::Result<Value> {
    let path = format!("/apis/wasmop.dev/v1alpha1/clusterwasmreconcilers/{name}");
    let text = get_text(client, &path).await?;
    Ok(shallow_members(&text)?.remove("status").unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_wasm_reconciler_fails_alone() -> anyhow::Result<()> {
    within(LIMIT, "a deep WasmReconciler", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let crd = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/clusterwasmreconciler.yaml");
        plane.install_crds(&[crd]).await?;
        let kube = plane.client().await?;
        let modules = plane.create_namespace("deep-modules").await?;
        let work = plane.create_namespace("deep-work").await?;
        let bytes = std::fs::read(common::component("guest-good"))?;
        let sha256 = wasmop::distribution::digest(&bytes)
            .trim_start_matches("sha256:")
            .to_owned();
        let configmap = json!({
            "metadata": {"name": "guest-good"},
            "binaryData": {"module.wasm": k8s_openapi::ByteString(bytes)},
        });
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(kube.clone(), &modules)
            .create(&PostParams::default(), &serde_json::from_value(configmap)?)
            .await?;
        let module = json!({
            "configMap": {"namespace": modules, "name": "guest-good", "key": "module.wasm"},
            "sha256": sha256,
        });
        let spec = |policy: &str| {
            format!(r#"{{"module":{module},"policy":{policy}}}"#)
        };
        let object = |name: &str, spec: String| {
            format!(
                r#"{{"apiVersion":"wasmop.dev/v1alpha1","kind":"ClusterWasmReconciler","metadata":{{"name":"{name}"}},"spec":{spec}}}"#
            )
        };
        let path = "/apis/wasmop.dev/v1alpha1/clusterwasmreconcilers";
        post_text(&kube, path, object("deep", spec(&nested(POISON - 3)))).await?;
        let metrics = free_address();
        // The module comes from the test's namespace, which the host reads only when its
        // policy names it.
        let policy = plane.dir().join(format!("{modules}-policy.yaml"));
        std::fs::write(&policy, format!("modules: {{namespaces: [{modules}]}}\n"))?;
        let mut command = common::host(plane);
        command
            .args(["--wasm-reconcilers", "--namespaces", &work])
            .arg("--policy")
            .arg(&policy)
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", "0"])
            .env("RUST_LOG", "info");
        let mut host = Logged::spawn("host", command)?;
        post_text(&kube, path, object("good", format!(r#"{{"module":{module}}}"#))).await?;

        let api = common::reconcilers::api(kube.clone());
        loop {
            let status = api.get("good").await?.data["status"].clone();
            if common::reconcilers::condition(&status, "Ready")["status"] == "True" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let configmaps = Api::namespaced(kube.clone(), &work);
        common::seen_by_good(&configmaps, "beside-a-deep-one").await?;
        let status = loop {
            let status = reconciler_status(&kube, "deep").await?;
            if common::reconcilers::condition(&status, "Degraded")["status"] == "True" {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let degraded = common::reconcilers::condition(&status, "Degraded");
        println!("the deep WasmReconciler: {degraded}");
        assert_eq!(degraded["reason"], "InvalidSpec");
        let message = degraded["message"].as_str().unwrap_or_default();
        assert!(message.contains("nested deeper than 64 levels"), "{message}");
        assert_eq!(host.count("recursion limit"), 0, "the watch never failed");
        host.assert_healthy()?;
        common::terminate(host.child).await?;
        Ok(())
    })
    .await
}

/// A review of a create of ConfigMap `name` whose `data` is `data` (JSON text), as the apiserver
/// posts it.
fn admission_review(name: &str, data: &str) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u-{name}",
        "kind":{{"group":"","version":"v1","kind":"ConfigMap"}},"resource":{{"group":"","version":"v1","resource":"configmaps"}},
        "name":"{name}","namespace":"default","operation":"CREATE","userInfo":{{"username":"alice"}},
        "object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"default"}},"data":{data}}},
        "oldObject":null,"dryRun":false}}}}"#
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_object_under_review_is_refused_without_the_plugin() -> anyhow::Result<()> {
    use wasmop::webhook::{FailurePolicy, Hook, admission, conversion};
    within(LIMIT, "deep reviews", async {
        let runtime = common::runtime();
        let (plugin, _host) = common::load(&runtime, "guest-hostile", PluginOptions::default()).await;
        let deep = admission_review("deep", &nested(POISON));
        for (hook, policy) in [
            (Hook::Validate, FailurePolicy::Ignore),
            (Hook::Default, FailurePolicy::Fail),
        ] {
            let answer = admission(&plugin, hook, policy, &deep).await?;
            let review: Value = serde_json::from_slice(&answer.json)?;
            let response = &review["response"];
            println!("a {POISON}-deep object under review ({hook:?}, {policy:?}): {response}");
            assert_eq!(response["uid"], "u-deep");
            assert_eq!(response["allowed"], false, "depth is no way around a webhook");
            let message = response["status"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(&format!("nested {} levels deep, over the limit of 64", POISON + 1)),
                "{message}"
            );
            assert!(!answer.outcome.plugin_failed);
        }
        let shallow = admission_review("shallow", r#"{"a":"b"}"#);
        let answer = admission(&plugin, Hook::Default, FailurePolicy::Fail, &shallow).await?;
        let review: Value = serde_json::from_slice(&answer.json)?;
        assert_eq!(review["response"]["allowed"], true, "{review}");

        let objects = format!(
            r#"[{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"data":{}}}]"#,
            nested(POISON)
        );
        let body = format!(
            r#"{{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{{"uid":"c-deep","desiredAPIVersion":"v1","objects":{objects}}}}}"#
        );
        let answer = conversion(&plugin, body.as_bytes()).await?;
        let review: Value = serde_json::from_slice(&answer.json)?;
        let response = &review["response"];
        println!("a {POISON}-deep object to convert: {response}");
        assert_eq!(response["uid"], "c-deep");
        assert_eq!(response["result"]["status"], "Failure");
        assert!(
            response["result"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("over the limit of 64")),
            "{response}"
        );
        Ok(())
    })
    .await
}
