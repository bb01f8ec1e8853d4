//! Shared helpers of the runtime tests: the components built from `plugins/` and `tests/guests/`,
//! and loading them against an in-memory host.

#![allow(dead_code)]

pub mod account;
pub mod keys;
pub mod logged;
pub mod pods;
pub mod reconcilers;
pub mod scrape;
pub mod tls;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wasmop::runtime::{Plugin, PluginOptions, Runtime, RuntimeConfig};
use wasmop::testing::MemoryHost;

/// Bounds every async test.
pub const LIMIT: Duration = Duration::from_secs(120);

/// The component `name` built by `wasmop build`.
pub fn component(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/components")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: build the guests first with `make guests`",
        path.display()
    );
    path
}

/// A runtime with default settings.
pub fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig::default()).expect("the runtime starts")
}

/// Loads component `name` against a fresh in-memory host.
pub async fn load(
    runtime: &Runtime,
    name: &str,
    options: PluginOptions,
) -> (Plugin, Arc<MemoryHost>) {
    let host = MemoryHost::new();
    let plugin = runtime
        .load(&component(name), options, |_| host.services())
        .await
        .expect("the plugin loads");
    (plugin, host)
}

/// A ConfigMap in `namespace`.
pub fn configmap(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "name": name},
        "data": {"key": "value"},
    })
}

/// Installs the WebApp CRD on `plane` (idempotent).
pub async fn install_webapp_crd(plane: &wasmop_envtest::ControlPlane) -> anyhow::Result<()> {
    let crd = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/webapp.yaml");
    plane.install_crds(&[crd]).await?;
    Ok(())
}

/// The WebApps of `namespace`, as dynamic objects.
pub fn webapps(client: kube::Client, namespace: &str) -> kube::Api<kube::api::DynamicObject> {
    let kind = kube::api::GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp");
    let resource = kube::core::ApiResource::from_gvk_with_plural(&kind, "webapps");
    kube::Api::namespaced_with(client, namespace, &resource)
}

/// A WebApp named `name` with one replica.
pub fn webapp(name: &str) -> kube::api::DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.wasmop.dev/v1alpha1", "kind": "WebApp",
        "metadata": {"name": name},
        "spec": {"image": "nginx:1.27", "replicas": 1, "port": 8080},
    }))
    .expect("a valid WebApp")
}

/// Waits until WebApp `name`'s status has observed its generation.
pub async fn converged(
    apps: &kube::Api<kube::api::DynamicObject>,
    name: &str,
) -> anyhow::Result<()> {
    loop {
        let app = apps.get(name).await?;
        if app.data["status"]["observedGeneration"].as_i64() == app.metadata.generation {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The compile cache of every host the tests start: an artifact is keyed by its component and the
/// engine's settings, so each component compiles once for the checkout's target folder, not once
/// per control plane. Tests of the cache itself give their hosts a folder of their own.
pub fn compile_cache() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compiled")
}

/// `wasmop run` against `plane`, with the shared compile cache, logging to the test's stderr and
/// killed when dropped; callers add plugins and settings.
pub fn host(plane: &wasmop_envtest::ControlPlane) -> tokio::process::Command {
    host_as(plane.kubeconfig_path())
}

/// `wasmop run` options that serve metrics and probes on no port, for hosts that run beside
/// others.
pub const NO_PORTS: [&str; 4] = [
    "--metrics-bind-address",
    "0",
    "--health-probe-bind-address",
    "0",
];

/// [`host`] speaking to the apiserver with the identity in `kubeconfig`.
pub fn host_as(kubeconfig: &std::path::Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"));
    command
        .args(["run", "--kubeconfig"])
        .arg(kubeconfig)
        .env("WASMOP_COMPILE_CACHE", compile_cache())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true);
    command
}

/// `wasmop rbac` for component `name`, its account in `namespace`, looked up on `plane`: the
/// manifests of the plugin's identity.
pub async fn rbac(
    plane: &wasmop_envtest::ControlPlane,
    name: &str,
    namespace: &str,
) -> anyhow::Result<String> {
    rbac_with(plane, name, namespace, &[]).await
}

/// [`rbac`] with more of `wasmop rbac`'s options (`--wasm-reconciler`).
pub async fn rbac_with(
    plane: &wasmop_envtest::ControlPlane,
    name: &str,
    namespace: &str,
    options: &[&str],
) -> anyhow::Result<String> {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .arg("rbac")
        .arg(component(name))
        .args(options)
        .args(["--namespace", namespace, "--kubeconfig"])
        .arg(plane.kubeconfig_path())
        .env("WASMOP_COMPILE_CACHE", compile_cache())
        .stderr(std::process::Stdio::inherit())
        .output()
        .await?;
    anyhow::ensure!(output.status.success(), "wasmop rbac failed");
    Ok(String::from_utf8(output.stdout)?)
}

/// `wasmop migrate` on `plane`: what it printed.
pub async fn migrate(plane: &wasmop_envtest::ControlPlane) -> anyhow::Result<String> {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .args(["migrate", "--kubeconfig"])
        .arg(plane.kubeconfig_path())
        .stderr(std::process::Stdio::inherit())
        .output()
        .await?;
    let printed = String::from_utf8(output.stdout)?;
    anyhow::ensure!(output.status.success(), "wasmop migrate failed: {printed}");
    Ok(printed)
}

/// The audited requests of `user` since `log`'s last read, as `verb resource/name`.
pub fn requests_by(log: &mut wasmop_envtest::AuditLog, user: &str) -> anyhow::Result<Vec<String>> {
    Ok(log
        .read_new()?
        .into_iter()
        .filter(|e| e.user == user || e.impersonated == user)
        .map(|e| format!("{} {}/{}", e.verb, e.resource, e.name))
        .collect())
}

/// Like [`requests_by`], waiting up to a minute for a request `wanted` accepts: the apiserver
/// writes a request's audit event after it has answered it, so a client can see a write's effect
/// before its event is in the file.
pub async fn requests_by_until(
    log: &mut wasmop_envtest::AuditLog,
    user: &str,
    wanted: impl Fn(&str) -> bool,
) -> anyhow::Result<Vec<String>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut requests = Vec::new();
    loop {
        requests.extend(requests_by(log, user)?);
        if requests.iter().any(|r| wanted(r)) || tokio::time::Instant::now() > deadline {
            return Ok(requests);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sends SIGTERM to `host` and checks that it exits cleanly.
pub async fn terminate(mut host: tokio::process::Child) -> anyhow::Result<()> {
    let pid = host
        .id()
        .ok_or_else(|| anyhow::anyhow!("the host is not running"))?;
    std::process::Command::new("kill")
        .arg(pid.to_string())
        .status()?;
    let exit = host.wait().await?;
    anyhow::ensure!(exit.success(), "SIGTERM ended wasmop with {exit}");
    Ok(())
}

/// Creates ConfigMap `name` and waits until guest-good has annotated it.
pub async fn seen_by_good(
    configmaps: &kube::Api<k8s_openapi::api::core::v1::ConfigMap>,
    name: &str,
) -> anyhow::Result<()> {
    let object = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    configmaps.create(&Default::default(), &object).await?;
    loop {
        let annotations = configmaps.get(name).await?.metadata.annotations;
        if annotations.is_some_and(|a| a.contains_key("guest-good.wasmop.dev/seen")) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A create of `object` (a JSON object of `kind`) at `key`, by `alice`, as the apiserver asks
/// a webhook about it.
pub fn admission_create(
    kind: wasmop::contract::object::GroupVersionKind,
    key: wasmop::contract::object::ObjectKey,
    object: Value,
) -> wasmop::contract::AdmissionRequest {
    wasmop::contract::AdmissionRequest {
        uid: "705ab4f5-6393-11e8-b7cc-42010a800002".into(),
        kind,
        key,
        operation: wasmop::contract::Operation::Create,
        object: Some(object.to_string()),
        old_object: None,
        user: wasmop::contract::UserInfo {
            username: "alice".into(),
            uid: "1".into(),
            groups: vec!["system:authenticated".into()],
        },
        dry_run: false,
    }
}

/// Loads component `name` into `runtime` with the production services over `cache` and `kube`.
pub async fn load_on_cluster(
    runtime: &Runtime,
    (kube, cache): (&kube::Client, &Arc<wasmop::cache::Cache>),
    name: &str,
    options: PluginOptions,
) -> Result<Plugin, wasmop::runtime::RuntimeError> {
    let services = production_services(kube.clone(), cache.clone());
    runtime.load(&component(name), options, services).await
}

/// The services a plugin gets in production, on `kube`: the plugin client (reads from `cache`,
/// writes to the apiserver) and the event recorder.
pub fn production_services(
    kube: kube::Client,
    cache: Arc<wasmop::cache::Cache>,
) -> impl FnOnce(&wasmop::contract::Registration) -> wasmop::contract::Services {
    move |registration| {
        let client = wasmop::client::PluginClient::new(kube.clone(), cache, &registration.name);
        wasmop::contract::Services {
            cache: Arc::new(client.clone()),
            writer: Arc::new(client.clone()),
            transport: Arc::new(client),
            events: Arc::new(wasmop::events::Events::new(kube, &registration.name)),
            observer: Arc::new(()),
            rights: None,
        }
    }
}

/// `helm args…` run from `binary`, talking to the cluster in `kubeconfig` when given: whether it
/// succeeded, and its stdout and stderr together.
pub fn helm(
    binary: &std::path::Path,
    kubeconfig: Option<&std::path::Path>,
    args: &[&str],
) -> (bool, String) {
    let mut command = std::process::Command::new(binary);
    command.args(args);
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    let output = command.output().expect("helm runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), printed)
}

/// Copies a component into `dir` under `name` the safe way: a dot-file, then a rename.
pub fn publish(component: &str, dir: &std::path::Path, name: &str) -> anyhow::Result<()> {
    let staging = dir.join(format!(".{name}.tmp"));
    std::fs::copy(self::component(component), &staging)?;
    std::fs::rename(staging, dir.join(name))?;
    Ok(())
}
