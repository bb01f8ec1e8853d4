//! The bytes checked are the bytes used: a plugin file whose content changes between two reads
//! runs as the signed bytes read once; a team's signed precompiled layer of the operator's
//! component never runs as the operator's plugin, also after a restart; and during a registry
//! outage the pulled store serves a private module only to its pull secret.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use p256::ecdsa::signature::Signer;
use serde_json::{Value, json};
use wasmop::distribution::oci::{Precompiled, Registries};
use wasmop::runtime::{Backend, Runtime, RuntimeConfig};
use wasmop_envtest::{ControlPlane, Registry, RegistryAuth, shared_by, within};

use crate::common;
use crate::common::logged::Logged;

const LIMIT: Duration = Duration::from_secs(300);

/// One test at a time: each starts hosts that load every WasmReconciler of the cluster.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The seed of the signing key the operator's policy trusts.
const TRUSTED_SEED: u8 = 0x3c;

/// Writes a `--policy` file `name` trusting the key in the PEM file `trusted` (as `ops`),
/// requiring signatures or not.
fn policy(
    plane: &ControlPlane,
    name: &str,
    trusted: &str,
    require: bool,
) -> anyhow::Result<std::path::PathBuf> {
    let file = plane.dir().join(format!("bytes-{name}-policy.yaml"));
    let text = format!(
        "modules: {{private-addresses: true}}\n\
         conversions: {{example.wasmop.dev/WebApp: webapp}}\n\
         signatures:\n  keys: {{ops: {trusted}}}\n  require: {require}\n"
    );
    std::fs::write(&file, text)?;
    Ok(file)
}

/// The cosign blob signature (base64 of DER) of `bytes` by the trusted key.
fn blob_signature(bytes: &[u8]) -> anyhow::Result<String> {
    let key = p256::ecdsa::SigningKey::from_slice(&[TRUSTED_SEED; 32])?;
    let signature: p256::ecdsa::Signature = key.sign(bytes);
    Ok(base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes()))
}

/// Whether a WasmReconciler's status says it is Ready or Degraded.
fn decided(status: &Value) -> bool {
    ["Ready", "Degraded"]
        .iter()
        .any(|kind| common::reconcilers::condition(status, kind)["status"] == "True")
}

/// Whether process `pid` holds `file` open.
fn held_open(pid: u32, file: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == file))
}

/// The `plugin=` of the host's first `plugin installed` line, once it has one.
async fn installed(host: &mut Logged) -> anyhow::Result<String> {
    loop {
        host.assert_healthy()?;
        let line = host
            .log()
            .into_iter()
            .find(|line| line.contains("plugin installed"));
        if let Some(line) = line {
            let plugin = line
                .split_whitespace()
                .find_map(|field| field.strip_prefix("plugin="))
                .unwrap_or_default();
            return Ok(plugin.to_owned());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A `--plugin` file whose content differs on every read — a named pipe serving guest-good,
/// signed by a trusted key, to its first reader and webapp, unsigned, to any later one: the
/// file swapped between the signature check and the compile. Under a policy requiring
/// signatures the host reads it once and runs what it checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_file_is_read_once_so_the_bytes_signed_are_the_bytes_run() -> anyhow::Result<()> {
    within(LIMIT, "a plugin file read once", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("bytes-once").await?;
        let dir = tempfile::tempdir()?;
        let (_, trusted) = common::keys::key_pair(dir.path(), "ops", TRUSTED_SEED)?;
        let signed = std::fs::read(common::component("guest-good"))?;
        let swapped = std::fs::read(common::component("webapp"))?;
        let file = dir.path().join("good.wasm");
        let made = std::process::Command::new("mkfifo").arg(&file).status()?;
        anyhow::ensure!(made.success(), "mkfifo failed");
        std::fs::write(dir.path().join("good.wasm.sig"), blob_signature(&signed)?)?;
        let mut command = common::host(plane);
        command
            .args(["--namespaces", &namespace, "--policy"])
            .arg(policy(plane, "once", &trusted, true)?)
            .arg("--plugin")
            .arg(&file)
            .args(common::NO_PORTS);
        let mut host = Logged::spawn("bytes-once", command)?;
        let pid = host.child.id().unwrap_or_default();
        let opened = Arc::new(AtomicUsize::new(0));
        let (counted, fifo) = (opened.clone(), file.clone());
        std::thread::spawn(move || {
            loop {
                let Ok(mut pipe) = std::fs::OpenOptions::new().write(true).open(&fifo) else {
                    return;
                };
                let bytes = match counted.fetch_add(1, Ordering::SeqCst) {
                    0 => &signed,
                    _ => &swapped,
                };
                let _ = pipe.write_all(bytes);
                drop(pipe);
                // The next content goes to the next opening, not to this reader's stream.
                while held_open(pid, &fifo) {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        });
        let plugin = installed(&mut host).await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(client, &namespace);
        common::seen_by_good(&configmaps, "read-once").await?;
        let reads = opened.load(Ordering::SeqCst);
        eprintln!(
            "ONCE: the plugin file was opened {reads} time(s); the host runs plugin={plugin} \
             (signed guest-good), and guest-good annotated a ConfigMap"
        );
        assert_eq!(plugin, "guest-good");
        assert_eq!(reads, 1, "the plugin file was read again after its check");
        common::terminate(host.child).await
    })
    .await
}

/// A team trusted for its own artifacts pushes the operator's own component (webapp) with a
/// "precompiled form" that is its own code (guest-good compiled for the host's engine), signed
/// by the trusted key, and has a host adopt it through its WasmReconciler. After a restart on
/// the same compile cache, the operator's `--plugin` file of that very component runs as
/// webapp: the team's artifact is kept under the team's trust, never under the component.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teams_precompiled_layer_never_runs_as_the_operators_plugin() -> anyhow::Result<()> {
    within(LIMIT, "an adopted layer keyed by trust", async {
        let _serial = SERIAL.lock().await;
        // WasmReconcilers are cluster-scoped: a plane of its own keeps other tests' hosts off them.
        let plane = &ControlPlane::start().await?;
        common::reconcilers::install_crd(plane).await?;
        common::install_webapp_crd(plane).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("bytes-adopted").await?;
        let registry = Registry::start(RegistryAuth::Anonymous).await?;
        let address = registry.address().to_owned();
        let dir = tempfile::tempdir()?;
        let (ops, trusted) = common::keys::key_pair(dir.path(), "ops", TRUSTED_SEED)?;
        let policy = policy(plane, "adopted", &trusted, false)?;
        let operators = std::fs::read(common::component("webapp"))?;
        let teams_code = std::fs::read(common::component("guest-good"))?;
        let pinned = push_with_foreign_layer(&address, &operators, &teams_code).await?;
        sign(&pinned, &ops, &address).await?;

        let cache = tempfile::tempdir()?;
        let host = |name: &'static str, args: &[&str]| {
            let mut command = common::host(plane);
            command
                .args(["--namespaces", &namespace, "--policy"])
                .arg(&policy)
                .args(["--registry-plain-http", &address, "--compile-cache"])
                .arg(cache.path())
                .args(args)
                .args(common::NO_PORTS);
            Logged::spawn(name, command)
        };
        let team = host("bytes-team", &["--wasm-reconcilers"])?;
        let api = common::reconcilers::api(client.clone());
        let reconciler: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
            "metadata": {"name": "bytes-team"},
            "spec": {"module": {"oci": {"reference": pinned}}},
        }))?;
        api.create(&PostParams::default(), &reconciler).await?;
        let status = common::reconcilers::status_until(&api, "bytes-team", decided).await?;
        let adopted = team.count("using the module's signed precompiled layer");
        api.delete("bytes-team", &Default::default()).await?;
        common::terminate(team.child).await?;
        assert_eq!(adopted, 1, "the team's layer was not adopted: {status}");

        let operator_file = dir.path().join("webapp.wasm");
        std::fs::write(&operator_file, &operators)?;
        let file = operator_file.display().to_string();
        let mut operator = host("bytes-operator", &["--plugin", &file])?;
        let plugin = installed(&mut operator).await?;
        let artifacts: Vec<String> = std::fs::read_dir(cache.path())?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".cwasm"))
            .collect();
        eprintln!(
            "ADOPTED: the team's WasmReconciler adopted {adopted} layer; after a restart the \
             operator's webapp file runs as plugin={plugin}; compile cache: {artifacts:?}"
        );
        assert_eq!(
            plugin, "webapp",
            "the operator's plugin ran the team's code"
        );
        let prefixed = |prefix: &str| artifacts.iter().filter(|a| a.starts_with(prefix)).count();
        assert_eq!(
            (prefixed("adopted-"), prefixed("host-")),
            (1, 1),
            "{artifacts:?}"
        );
        common::terminate(operator.child).await
    })
    .await
}

/// A tenant's private module, pulled with its pull secret, is kept for a registry outage; while
/// the registry is down, another tenant naming its digest without the secret is refused, and the
/// owner still loads what was pulled before; the owner deleted, its pull leaves the disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offline_store_serves_a_private_module_only_to_its_pull_secret() -> anyhow::Result<()> {
    within(LIMIT, "an offline store keyed by access", async {
        let _serial = SERIAL.lock().await;
        // WasmReconcilers are cluster-scoped: a plane of its own keeps other tests' hosts off them.
        let plane = &ControlPlane::start().await?;
        common::reconcilers::install_crd(plane).await?;
        let client = plane.client().await?;
        let modules = plane.create_namespace("bytes-modules").await?;
        let (user, password) = ("team", "bytes-private-password");
        let auth = RegistryAuth::Htpasswd {
            user: user.into(),
            password: password.into(),
        };
        let mut registry = Registry::start(auth).await?;
        let address = registry.address().to_owned();
        // The registry's own files go with it: the host keeps trusting its CA from a copy.
        let kept = tempfile::tempdir()?;
        let ca = kept.path().join("ca.crt");
        std::fs::copy(registry.ca_file().expect("a TLS registry"), &ca)?;
        let program = Path::new(env!("CARGO_BIN_EXE_wasmop"));
        let good = common::component("guest-good");
        let pushed = tokio::process::Command::new(program)
            .arg("push")
            .arg(&good)
            .arg(format!("{address}/private/good:v1"))
            .arg("--registry-ca-file")
            .arg(&ca)
            .args(["--username", user])
            .env("WASMOP_REGISTRY_PASSWORD", password)
            .output()
            .await?;
        anyhow::ensure!(pushed.status.success(), "wasmop push failed");
        let reference = String::from_utf8(pushed.stdout)?.trim().to_owned();
        let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
            "metadata": {"name": "registry"},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": registry.dockerconfigjson().unwrap()},
        }))?;
        Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &modules)
            .create(&PostParams::default(), &secret)
            .await?;
        let policy = plane.dir().join("bytes-offline-policy.yaml");
        let text = format!("modules: {{namespaces: [{modules}], private-addresses: true}}\n");
        std::fs::write(&policy, text)?;
        let cache = tempfile::tempdir()?;
        let host = |name: &'static str| {
            let mut command = common::host(plane);
            command
                .args(["--wasm-reconcilers", "--policy"])
                .arg(&policy)
                .arg("--registry-ca-file")
                .arg(&ca)
                .arg("--compile-cache")
                .arg(cache.path())
                .args(common::NO_PORTS);
            Logged::spawn(name, command)
        };
        let api = common::reconcilers::api(client.clone());
        let create = |name: &'static str, secret: Option<&str>| {
            let pull_secret = secret.map(|name| json!({"namespace": modules, "name": name}));
            let object = json!({
                "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
                "metadata": {"name": name},
                "spec": {"module": {"oci": {"reference": reference, "pullSecret": pull_secret}}},
            });
            let api = api.clone();
            async move {
                let object: DynamicObject = serde_json::from_value(object)?;
                api.create(&PostParams::default(), &object).await?;
                anyhow::Ok(())
            }
        };
        let online = host("bytes-online")?;
        create("bytes-owner", Some("registry")).await?;
        let status = common::reconcilers::status_until(&api, "bytes-owner", decided).await?;
        let ready = |s: &Value| common::reconcilers::condition(s, "Ready")["status"] == "True";
        anyhow::ensure!(ready(&status), "the owner did not load: {status}");
        common::terminate(online.child).await?;
        let blobs = cache.path().join("pulled").join("blobs");
        let held = || std::fs::read_dir(&blobs).map_or(0, |files| files.count());
        assert_eq!(held(), 1, "the owner's pull is kept");

        registry.stop();
        let mut offline = host("bytes-offline")?;
        create("bytes-stranger", None).await?;
        let stranger = common::reconcilers::status_until(&api, "bytes-stranger", decided).await?;
        // The owner, still applied, is loaded again from what was pulled before.
        let loaded = installed(&mut offline).await?;
        let from_store = offline
            .log()
            .iter()
            .any(|line| line.contains("loading the component pulled before"));
        let reason = |s: &Value| {
            let degraded = common::reconcilers::condition(s, "Degraded");
            degraded["reason"].as_str().unwrap_or("-").to_owned()
        };
        eprintln!(
            "OFFLINE: registry down; a stranger naming the private digest without the pull \
             secret: ready={} degraded={}; the owner with it: {loaded} loaded from the store: \
             {from_store}",
            ready(&stranger),
            reason(&stranger),
        );
        assert!(
            !ready(&stranger),
            "the stranger got the private module: {stranger}"
        );
        assert_eq!(reason(&stranger), "FetchFailed", "{stranger}");
        assert!(
            from_store && loaded == "guest-good",
            "the owner lost its module"
        );
        // Its object deleted, what it pulled goes from the disk with it.
        for name in ["bytes-stranger", "bytes-owner"] {
            api.delete(name, &Default::default()).await?;
        }
        while held() > 0 {
            offline.assert_healthy()?;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        common::terminate(offline.child).await?;
        Ok(())
    })
    .await
}

/// Pushes `module` to a repository of the registry at `address` with, as its precompiled
/// layer, `other` compiled for the host's engine; the reference pinned by digest.
async fn push_with_foreign_layer(
    address: &str,
    module: &[u8],
    other: &[u8],
) -> anyhow::Result<String> {
    let cache = tempfile::tempdir()?;
    let config = RuntimeConfig {
        cache_dir: cache.path().to_owned(),
        backend: Backend::Winch,
        ..RuntimeConfig::default()
    };
    let runtime = Runtime::new(config)?;
    let engine = runtime.engine_fingerprint();
    let other = other.to_vec();
    let artifact = tokio::task::spawn_blocking(move || runtime.precompile(&other)).await?;
    let precompiled = Precompiled {
        engine,
        artifact: artifact.map_err(|e| anyhow::anyhow!("{e:#}"))?,
    };
    let registries = Registries {
        plain_http: vec![address.to_owned()],
        ..Registries::default()
    };
    let reference: oci_client::Reference = format!("{address}/team/webapp:v1").parse()?;
    let anonymous = oci_client::secrets::RegistryAuth::Anonymous;
    let digest = registries
        .push(&reference, module.to_vec(), Some(precompiled), &anonymous)
        .await?;
    Ok(format!("{address}/team/webapp@{digest}"))
}

/// `wasmop sign --key KEY REFERENCE` against the plain-HTTP registry at `address`.
async fn sign(reference: &str, key: &str, address: &str) -> anyhow::Result<()> {
    let program = Path::new(env!("CARGO_BIN_EXE_wasmop"));
    let output = tokio::process::Command::new(program)
        .args([
            "sign",
            "--key",
            key,
            reference,
            "--registry-plain-http",
            address,
        ])
        .output()
        .await?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    anyhow::ensure!(output.status.success(), "wasmop sign: {stderr}");
    Ok(())
}
