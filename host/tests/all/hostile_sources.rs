//! The module sources and the recorder attacked on the real control plane, as a tenant who may
//! create `WasmReconciler`s and as a plugin that handles Secrets would: a `WasmReconciler` naming
//! another namespace's Secret with a made-up digest (an oracle for its value and its existence), a
//! URL module on a loopback service (a request forger), and a recording of a plugin that copies a
//! Secret through every kind of write. Each test prints what it measured.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::logged::Logged;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wasmop::contract::{Ceiling, ModuleSources};
use wasmop::distribution::digest;
use wasmop::distribution::module::{KeyRef, ModuleError, ModuleRef};
use wasmop::distribution::oci::Registries;
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(240);

/// What every refused or unreadable object source says, whatever is missing.
const UNREADABLE: &str = "spec.module: the module source could not be read";

/// One test at a time: they count the apiserver's requests, which are process-wide.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Creates WasmReconciler `name` with `module` as its `spec.module`.
async fn create(api: &Api<DynamicObject>, name: &str, module: Value) -> anyhow::Result<()> {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
        "metadata": {"name": name}, "spec": {"module": module},
    }))?;
    api.create(&PostParams::default(), &object).await?;
    Ok(())
}

/// The `(reason, message)` of `name`'s `Degraded` condition once it is true, or of its `Ready`
/// condition once that is.
async fn verdict(api: &Api<DynamicObject>, name: &str) -> anyhow::Result<(String, String)> {
    loop {
        let status = api.get(name).await?.data["status"].clone();
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        let decided = conditions
            .iter()
            .find(|c| (c["type"] == "Degraded" || c["type"] == "Ready") && c["status"] == "True");
        if let Some(condition) = decided {
            let text = |field: &str| condition[field].as_str().unwrap_or_default().to_owned();
            return Ok((text("reason"), text("message")));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The sha256 of `bytes` in hex, as a pin or a leaked digest would show it.
fn hex(bytes: &[u8]) -> String {
    digest(bytes).trim_start_matches("sha256:").to_owned()
}

/// Requests the apiserver has answered for `resource` with `verb` (`apiserver_request_total`).
async fn served(client: &kube::Client, resource: &str, verb: &str) -> anyhow::Result<f64> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let samples = common::scrape::parse(&text);
    let counted = samples.get("apiserver_request_total").map(|all| {
        all.iter()
            .filter(|(labels, _)| {
                labels.get("resource").map(String::as_str) == Some(resource)
                    && labels.get("verb").map(String::as_str) == Some(verb)
            })
            .map(|(_, value)| value)
            .sum()
    });
    Ok(counted.unwrap_or(0.0))
}

/// Writes a `--policy` file named `name` under the plane's directory.
fn policy(plane: &ControlPlane, name: &str, text: &str) -> anyhow::Result<std::path::PathBuf> {
    let path = plane.dir().join(format!("{name}-policy.yaml"));
    std::fs::write(&path, text)?;
    Ok(path)
}

/// A host loading WasmReconcilers under the policy in `policy`, its log kept.
fn host(plane: &ControlPlane, name: &'static str, policy: &Path) -> anyhow::Result<Logged> {
    let mut command = common::host(plane);
    command
        .args(["--wasm-reconcilers", "--policy"])
        .arg(policy)
        .args([
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ]);
    Logged::spawn(name, command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wasm_reconciler_is_no_oracle_for_secrets() -> anyhow::Result<()> {
    within(LIMIT, "the source oracle", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/clusterwasmreconciler.yaml");
        plane.install_crds(&[crd]).await?;
        let client = plane.client().await?;
        let victim = plane.create_namespace("oracle-victim").await?;
        let modules = plane.create_namespace("oracle-modules").await?;
        let password = b"correct horse battery staple";
        for namespace in [&victim, &modules] {
            let secret = Secret {
                metadata: kube::api::ObjectMeta {
                    name: Some("db".into()),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([("password".into(), ByteString(password.to_vec()))])),
                ..Default::default()
            };
            Api::<Secret>::namespaced(client.clone(), namespace)
                .create(&PostParams::default(), &secret)
                .await?;
        }
        let configmap = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("settings".into()),
                ..Default::default()
            },
            binary_data: Some(BTreeMap::from([("blob".into(), ByteString(password.to_vec()))])),
            ..Default::default()
        };
        Api::<ConfigMap>::namespaced(client.clone(), &modules)
            .create(&PostParams::default(), &configmap)
            .await?;
        let allowed = format!("modules: {{namespaces: [{modules}]}}\n");
        let host = host(plane, "oracle", &policy(plane, &modules, &allowed)?)?;
        let api = common::reconcilers::api(client.clone());
        let made_up = "0".repeat(64);
        let key = |kind: &str, namespace: &str, name: &str, key: &str| {
            json!({kind: {"namespace": namespace, "name": name, "key": key}, "sha256": made_up})
        };

        // Another namespace's Secret, there or not: refused before any read.
        let gets = served(&client, "secrets", "GET").await?;
        create(&api, "oracle-victim", key("secret", &victim, "db", "password")).await?;
        create(&api, "oracle-victim-none", key("secret", &victim, "none", "password")).await?;
        let refused = verdict(&api, "oracle-victim").await?;
        let refused_missing = verdict(&api, "oracle-victim-none").await?;
        let victim_gets = served(&client, "secrets", "GET").await? - gets;
        println!("another namespace's Secret: {refused:?}; a missing one: {refused_missing:?}; Secret GETs: {victim_gets}");
        assert_eq!(refused.0, "SourceRefused");
        assert!(refused.1.contains("modules.namespaces"), "{refused:?}");
        assert_eq!(refused, refused_missing, "the refusal tells whether the Secret exists");
        assert_eq!(victim_gets, 0.0, "a refused source was read");

        // In a namespace the policy allows: the digest of what was read is never shown, and
        // whatever is missing says the same.
        create(&api, "oracle-digest", key("secret", &modules, "db", "password")).await?;
        let mismatch = verdict(&api, "oracle-digest").await?;
        println!("a Secret's value under a made-up digest: {mismatch:?}");
        assert_eq!(
            mismatch,
            ("DigestMismatch".into(), "the module does not match spec.module.sha256".into())
        );
        let mut unreadable = Vec::new();
        for (name, module) in [
            ("oracle-no-secret", key("secret", &modules, "none", "password")),
            ("oracle-no-key", key("secret", &modules, "db", "none")),
            ("oracle-no-configmap", key("configMap", &modules, "none", "blob")),
            ("oracle-no-binary-key", key("configMap", &modules, "settings", "none")),
        ] {
            create(&api, name, module).await?;
            unreadable.push((name, verdict(&api, name).await?));
        }
        println!("missing Secret, key, ConfigMap, binaryData key: {unreadable:?}");
        for (name, said) in &unreadable {
            assert_eq!(said, &("FetchFailed".into(), UNREADABLE.into()), "{name}");
        }

        // A read the apiserver forbids (deploy/'s operator account reads no Secrets) says the
        // same as a missing one.
        let operator = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(common::account::kubeconfig(plane).await?)?,
            &Default::default(),
        )
        .await?;
        let operator = kube::Client::try_from(operator)?;
        let sources = Ceiling {
            modules: ModuleSources {
                namespaces: Some(vec![modules.clone()]),
                private_addresses: false,
            },
            ..Ceiling::default()
        };
        let forbidden = ModuleRef {
            secret: Some(KeyRef {
                namespace: modules.clone(),
                name: "db".into(),
                key: "password".into(),
            }),
            sha256: Some(made_up.clone()),
            ..ModuleRef::default()
        };
        let forbidden = forbidden.fetch(&operator, &sources, &Registries::default(), None).await.unwrap_err();
        println!("a Secret the apiserver does not let the host read: {forbidden}");
        assert!(matches!(forbidden, ModuleError::Unreadable), "{forbidden}");
        assert_eq!(forbidden.to_string(), UNREADABLE);

        let leaked = hex(password);
        let objects = api.list(&Default::default()).await?;
        let statuses = serde_json::to_string(&objects.items)?;
        let logged = host.log().join("\n");
        println!(
            "the value's digest in statuses: {}, in the host's log: {}",
            statuses.contains(&leaked),
            logged.contains(&leaked)
        );
        assert!(!statuses.contains(&leaked) && !logged.contains(&leaked));
        for object in objects.items {
            let name = object.metadata.name.unwrap_or_default();
            if name.starts_with("oracle-") {
                api.delete(&name, &Default::default()).await?;
            }
        }
        Ok(())
    })
    .await
}

/// Serves `body` to every request on a loopback port, counting them; returns the port.
async fn counting_server(body: Vec<u8>) -> anyhow::Result<(u16, Arc<AtomicUsize>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request).await;
            counted.fetch_add(1, Ordering::SeqCst);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
        }
    });
    Ok((port, requests))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_module_cannot_forge_requests_to_private_addresses() -> anyhow::Result<()> {
    within(LIMIT, "the request forger", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let crd =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/clusterwasmreconciler.yaml");
        plane.install_crds(&[crd]).await?;
        let client = plane.client().await?;
        let bytes = std::fs::read(common::component("guest-good"))?;
        let (port, requests) = counting_server(bytes.clone()).await?;
        let pin = hex(&bytes);
        let api = common::reconcilers::api(client.clone());

        let closed = policy(plane, "forger-closed", "max-instances: 32\n")?;
        let refusing = host(plane, "forger-closed", &closed)?;
        let urls = [
            ("forger-ip", format!("http://127.0.0.1:{port}/admin/delete")),
            (
                "forger-name",
                format!("http://localhost:{port}/admin/delete"),
            ),
            (
                "forger-metadata",
                "http://169.254.169.254/latest/meta-data/".to_owned(),
            ),
        ];
        for (name, url) in &urls {
            create(&api, name, json!({"url": url, "sha256": pin})).await?;
        }
        for (name, url) in &urls {
            let said = verdict(&api, name).await?;
            println!("{url}: {said:?}");
            assert_eq!(said.0, "SourceRefused", "{url}");
            assert!(said.1.contains("modules.private-addresses"), "{said:?}");
        }
        let sent = requests.load(Ordering::SeqCst);
        println!("requests the loopback server got from the refusing host: {sent}");
        assert_eq!(sent, 0, "a refused URL was fetched");
        common::terminate(refusing.child).await?;
        for (name, _) in &urls {
            api.delete(name, &Default::default()).await?;
        }

        // Opted in, as the tests that serve modules on loopback are.
        let open = policy(plane, "forger-open", "modules: {private-addresses: true}\n")?;
        let _allowing = host(plane, "forger-open", &open)?;
        let url = format!("http://127.0.0.1:{port}/guest-good.wasm");
        create(&api, "forger-allowed", json!({"url": url, "sha256": pin})).await?;
        let said = verdict(&api, "forger-allowed").await?;
        let sent = requests.load(Ordering::SeqCst);
        println!("with modules.private-addresses: true: {said:?}, requests served: {sent}");
        assert_eq!(said.0, "Loaded", "{said:?}");
        assert!(sent >= 1);
        api.delete("forger-allowed", &Default::default()).await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_keeps_no_secret_value() -> anyhow::Result<()> {
    within(LIMIT, "the recording leak", async {
        let _serial = SERIAL.lock().await;
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("record-secrets").await?;
        let password = format!("pw-{namespace}-hunter2");
        let base64 = ByteString(password.clone().into_bytes());
        let base64 = serde_json::to_value(&base64)?;
        let base64 = base64.as_str().unwrap_or_default().to_owned();
        // As `kubectl apply` leaves it: the manifest, password and all, in an annotation.
        let manifest = format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: source, namespace: {namespace}}}\nstringData: {{password: {password}}}\n"
        );
        plane.run_kubectl(&["apply", "-f", "-"], Some(&manifest)).await?;

        let dir = tempfile::tempdir()?;
        let component = common::component("guest-secret-copy");
        let mut command = common::host(plane);
        command
            .arg("--plugin")
            .arg(&component)
            .args(["--namespaces", &namespace, "--record"])
            .arg(dir.path())
            .args(["--metrics-bind-address", "0", "--health-probe-bind-address", "0"]);
        let host = Logged::spawn("recorder", command)?;

        // Done once the copy carries the annotation (the last write but the refused create) and
        // the reconcile of `source`, refused create included, is recorded.
        let folder = dir.path().join("guest-secret-copy");
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        loop {
            let copy = secrets.get_opt("copy").await?;
            let annotated = copy
                .and_then(|c| c.metadata.annotations)
                .is_some_and(|a| a.contains_key("kubectl.kubernetes.io/last-applied-configuration"));
            let files = fixture_texts(&folder);
            if annotated && files.iter().any(|(_, text)| text.contains("AlreadyExists")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        common::terminate(host.child).await?;
        let recorded = fixture_texts(&folder);
        let all: String = recorded.iter().map(|(_, text)| text.as_str()).collect();
        let count = |text: &str| all.matches(text).count();
        println!(
            "{} files recorded; the password appears {} times, its base64 {} times; {} writes, \
             {} redacted, {} refused; a whole-object JSON patch: {}",
            recorded.len(),
            count(&password),
            count(&base64),
            count("verb: "),
            count("redacted: true"),
            count("reason: AlreadyExists"),
            all.contains("path: ''") || all.contains("path: \"\""),
        );
        assert_eq!((count(&password), count(&base64)), (0, 0), "{all}");
        // The source was read and kept, its last-applied annotation redacted.
        let mut read = Vec::new();
        for (name, _) in &recorded {
            read.extend(wasmop::fixture::Fixture::load(&folder.join(name))?.objects);
        }
        let source = read.iter().find(|o| o["metadata"]["name"] == "source");
        let source = source.ok_or_else(|| anyhow::anyhow!("the source's read is not recorded"))?;
        println!("the source Secret as recorded: {source}");
        let annotation = &source["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"];
        assert_eq!(annotation, "redacted");
        assert!(count("reason: AlreadyExists") >= 1, "{all}");
        assert!(all.contains("kubectl.kubernetes.io/last-applied-configuration"), "{all}");

        // The recording replays: the writes sent are redacted as the recorded ones were.
        let replay = std::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
            .args(["test", "--replay"])
            .arg(dir.path())
            .arg(&component)
            .env("RUST_LOG", "error")
            .output()?;
        let printed = String::from_utf8_lossy(&replay.stdout);
        println!("replayed: {}", printed.lines().last().unwrap_or_default());
        assert!(replay.status.success(), "{printed}\nreplaying:\n{all}");
        Ok(())
    })
    .await
}

/// Every recorded fixture under `folder`, by name, with its text.
fn fixture_texts(folder: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut texts: Vec<(String, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let text = std::fs::read_to_string(entry.path()).ok()?;
            Some((entry.file_name().to_string_lossy().into_owned(), text))
        })
        .collect();
    texts.sort();
    texts
}
