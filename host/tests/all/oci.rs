//! Plugins as Wasm OCI artifacts in a real registry (the CNCF Distribution registry beside the
//! real control plane): `wasmop push` prints the digest to pin and `wasmop pull` gives the same
//! bytes back; a WasmReconciler loads from `spec.module.oci`, swaps to a new digest, refuses a
//! reference whose tag has moved, and after a host restart with the registry down loads what was
//! pulled before, as `--plugin oci://` does; a private registry (TLS + htpasswd) answers only
//! with the pull secret's credentials, which appear nowhere in the status; and under a policy
//! that requires signatures, only modules signed by a trusted key load, signed by the real
//! `cosign` or by `wasmop sign` (which `cosign verify` accepts), pushed by the real ORAS CLI.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasmop::distribution::digest;
use wasmop_envtest::{ControlPlane, Registry, RegistryAuth, shared_by, within};

const LIMIT: Duration = Duration::from_secs(300);

/// Runs `wasmop ARGS` with `env`, and returns its stdout; fails with its stderr.
async fn wasmop(args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<String> {
    let program = std::path::Path::new(env!("CARGO_BIN_EXE_wasmop"));
    run(program, args, std::path::Path::new("."), env).await
}

fn component(name: &str) -> String {
    common::component(name).display().to_string()
}

fn module_digest(name: &str) -> anyhow::Result<String> {
    Ok(digest(&std::fs::read(common::component(name))?))
}

fn reconciler(name: &str, module: Value) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
        "metadata": {"name": name}, "spec": {"module": module},
    }))?)
}

/// A policy letting the host read modules (and pull secrets) from `namespace`, reach loopback
/// registries, and let the ClusterWasmReconciler `oci-webapp` convert WebApps.
fn policy(plane: &ControlPlane, namespace: &str) -> anyhow::Result<std::path::PathBuf> {
    let file = plane.dir().join(format!("{namespace}-policy.yaml"));
    let text = format!(
        "modules: {{namespaces: [{namespace}], private-addresses: true}}\n\
         conversions: {{example.wasmop.dev/WebApp: clusterwasmreconciler/oci-webapp}}\n"
    );
    std::fs::write(&file, text)?;
    Ok(file)
}

/// Both scenarios in turn: WasmReconcilers are cluster-scoped, and every host writes the status
/// of every one, so two hosts at once would each report on the other's.
#[tokio::test]
async fn modules_travel_through_registries() -> anyhow::Result<()> {
    within(LIMIT, "OCI modules", async {
        let plane = &shared_by(module_path!()).await?;
        common::reconcilers::install_crd(plane).await?;
        common::install_webapp_crd(plane).await?;
        pushed_modules_load_swap_and_survive_a_registry_outage(plane).await?;
        let (user, password) = ("alice".to_owned(), PASSWORD.to_owned());
        let basic = RegistryAuth::Htpasswd { user, password };
        a_private_registry_answers_only_with_the_pull_secret(plane, basic).await?;
        let (user, password) = ("alice".to_owned(), PASSWORD.to_owned());
        let token = RegistryAuth::Token { user, password };
        a_private_registry_answers_only_with_the_pull_secret(plane, token).await?;
        signatures_decide_what_runs(plane).await
    })
    .await
}

async fn pushed_modules_load_swap_and_survive_a_registry_outage(
    plane: &ControlPlane,
) -> anyhow::Result<()> {
    let client = plane.client().await?;
    let work = plane.create_namespace("oci-work").await?;
    let mut registry = Registry::start(RegistryAuth::Anonymous).await?;
    let address = registry.address().to_owned();
    let plain = ["--registry-plain-http", address.as_str()];
    let push = |file: String, to: String| {
        let args = [
            vec!["push".to_owned(), file, to],
            plain.map(str::to_owned).to_vec(),
        ];
        async move {
            let args: Vec<&str> = args.iter().flatten().map(String::as_str).collect();
            wasmop(&args, &[]).await
        }
    };

    // `push` prints the reference pinned by the manifest's digest; `pull` gives the bytes back.
    let v1 = push(component("webapp"), format!("{address}/team/webapp:v1")).await?;
    println!("pushed: {v1}");
    assert!(
        v1.starts_with(&format!("{address}/team/webapp@sha256:")),
        "{v1}"
    );
    let again = push(component("webapp"), format!("{address}/team/webapp:v1")).await?;
    assert_eq!(again, v1, "the same component pushes to the same digest");
    let pulled = tempfile::tempdir()?.keep().join("webapp.wasm");
    let output = pulled.display().to_string();
    wasmop(&[&["pull", &v1, "-o", &output][..], &plain].concat(), &[]).await?;
    assert_eq!(
        std::fs::read(&pulled)?,
        std::fs::read(common::component("webapp"))?
    );
    let v2 = push(component("webapp-v2"), format!("{address}/team/webapp:v2")).await?;
    let good = push(component("guest-good"), format!("{address}/good")).await?;

    let (stalling, connections) = stalling_registry().await?;
    let plain_http = format!("{address},{stalling}");
    let start_host = || {
        common::host(plane)
            .args(["--wasm-reconcilers", "--namespaces", &work])
            .arg("--policy")
            .arg(policy(plane, &work).unwrap())
            .args(["--registry-plain-http", &plain_http])
            .args(["--plugin", &format!("oci://{good}")])
            .args(common::NO_PORTS)
            .spawn()
    };
    let host = start_host()?;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &work);
    common::seen_by_good(&configmaps, "pulled-by-the-host").await?;

    let api = common::reconcilers::api(client.clone());
    let oci = |reference: &str| json!({"oci": {"reference": reference}});
    // A registry that answers a byte at a time, never finishing, holds up no other module's
    // load: the other is Ready while this pull is still in flight.
    let stalled = format!("{stalling}/stalled@sha256:{}", "0".repeat(64));
    api.create(
        &PostParams::default(),
        &reconciler("oci-stalled", oci(&stalled))?,
    )
    .await?;
    while connections.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    api.create(&PostParams::default(), &reconciler("oci-webapp", oci(&v1))?)
        .await?;
    let ready = |s: &Value| common::reconcilers::condition(s, "Ready")["status"] == "True";
    let status = common::reconcilers::status_until(&api, "oci-webapp", ready).await?;
    assert_eq!(status["digest"], module_digest("webapp")?);
    let manifest = |reference: &str| reference.rsplit_once('@').unwrap().1.to_owned();
    assert_eq!(
        status["pinned"],
        manifest(&v1),
        "the digest the reference pinned"
    );
    let wide = ["get", "clusterwasmreconciler", "oci-webapp", "-o", "wide"];
    let table = plane.run_kubectl(&wide, None).await?;
    assert!(
        table.contains(&manifest(&v1)) && table.contains(status["digest"].as_str().unwrap()),
        "{table}"
    );
    let held = api.get("oci-stalled").await?.data["status"].clone();
    assert!(held["conditions"].is_null(), "still in flight: {held}");
    api.delete("oci-stalled", &Default::default()).await?;
    // The policy's conversion grant is oci-webapp's: another object loading the same plugin,
    // whatever it declares, does not get it.
    api.create(
        &PostParams::default(),
        &reconciler("oci-impostor", oci(&v1))?,
    )
    .await?;
    let refused = |s: &Value| common::reconcilers::condition(s, "Degraded")["status"] == "True";
    let status = common::reconcilers::status_until(&api, "oci-impostor", refused).await?;
    let message = common::reconcilers::condition(&status, "Degraded")["message"].to_string();
    assert!(
        message.contains("asks to convert") && message.contains("operator's policy"),
        "{message}"
    );
    api.delete("oci-impostor", &Default::default()).await?;
    let apps = common::webapps(client.clone(), &work);
    apps.create(&PostParams::default(), &common::webapp("shop"))
        .await?;
    common::converged(&apps, "shop").await?;

    // A new digest swaps the plugin.
    let swap = json!({"spec": {"module": oci(&v2)}});
    api.patch("oci-webapp", &PatchParams::default(), &Patch::Merge(&swap))
        .await?;
    let v2_digest = module_digest("webapp-v2")?;
    let swapped = common::reconcilers::status_until(&api, "oci-webapp", |s| {
        ready(s) && s["digest"] == v2_digest.as_str()
    })
    .await?;
    println!("swapped: {swapped}");

    // The tag `v2` moves to another manifest: a reference naming it with the old digest is
    // refused, and the running version stays.
    let moved = push(component("webapp"), format!("{address}/team/webapp:v2")).await?;
    assert_eq!(moved, v1);
    let pinned_digest = v2.rsplit_once('@').unwrap().1;
    let tagged = format!("{address}/team/webapp:v2@{pinned_digest}");
    let stale = json!({"spec": {"module": oci(&tagged)}});
    api.patch("oci-webapp", &PatchParams::default(), &Patch::Merge(&stale))
        .await?;
    let degraded = |s: &Value| common::reconcilers::condition(s, "Degraded")["status"] == "True";
    let status = common::reconcilers::status_until(&api, "oci-webapp", degraded).await?;
    println!("tag moved: {status}");
    assert_eq!(
        common::reconcilers::condition(&status, "Degraded")["reason"],
        "TagMoved"
    );
    assert_eq!(status["digest"], v2_digest, "the running version stays");
    assert_eq!(
        status["pinned"],
        manifest(&v2),
        "and the digest that pinned it"
    );

    // The registry goes down and the host restarts: both plugins load from what it pulled.
    api.patch("oci-webapp", &PatchParams::default(), &Patch::Merge(&swap))
        .await?;
    common::reconcilers::status_until(&api, "oci-webapp", ready).await?;
    common::terminate(host).await?;
    registry.stop();
    let host = start_host()?;
    common::seen_by_good(&configmaps, "while-the-registry-is-down").await?;
    apps.patch(
        "shop",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await?;
    common::converged(&apps, "shop").await?;
    let from_the_store = |s: &Value| {
        let message = common::reconcilers::condition(s, "Ready")["message"].as_str();
        ready(s) && message.is_some_and(|m| m.contains("pulled before"))
    };
    let status = common::reconcilers::status_until(&api, "oci-webapp", from_the_store).await?;
    println!("registry down: {status}");
    assert_eq!(status["digest"], v2_digest);
    api.delete("oci-webapp", &Default::default()).await?;
    common::terminate(host).await
}

/// The ClusterWasmReconciler of the signatures scenario, the one its policy lets convert.
const SIGNED: &str = "signed-webapp";

/// The password of the private registries, which must appear in no WasmReconciler.
const PASSWORD: &str = "pw-that-must-not-leak";

/// A TLS registry that asks for `auth` — HTTP basic auth, or bearer tokens its token service
/// grants for the same credentials — answers `wasmop push` and a WasmReconciler only with the
/// credentials, which come from a dockerconfigjson Secret in a namespace the policy lists and
/// appear nowhere in the object; a bearer token in the Secret (`registrytoken`) works too.
async fn a_private_registry_answers_only_with_the_pull_secret(
    plane: &ControlPlane,
    auth: RegistryAuth,
) -> anyhow::Result<()> {
    let client = plane.client().await?;
    let modules = plane.create_namespace("oci-modules").await?;
    let work = plane.create_namespace("oci-private").await?;
    let password = PASSWORD;
    let registry = Registry::start(auth).await?;
    let address = registry.address();
    let ca = registry
        .ca_file()
        .expect("a TLS registry")
        .display()
        .to_string();
    let to = format!("{address}/private/good:v1");
    let args = [
        "push",
        &component("guest-good"),
        &to,
        "--registry-ca-file",
        &ca,
    ];
    let anonymous = wasmop(&args, &[]).await.unwrap_err().to_string();
    assert!(anonymous.contains("refused"), "{anonymous}");
    let with_user = [&args[..], &["--username", "alice"]].concat();
    let reference = wasmop(&with_user, &[("WASMOP_REGISTRY_PASSWORD", password)]).await?;

    let log = plane.dir().join(format!("{work}-host.log"));
    let host = common::host(plane)
        .args(["--wasm-reconcilers", "--namespaces", &work])
        .arg("--policy")
        .arg(policy(plane, &modules)?)
        .args(["--registry-ca-file", &ca])
        .args(common::NO_PORTS)
        .stderr(std::fs::File::create(&log)?)
        .spawn()?;
    let api = common::reconcilers::api(client.clone());
    let module = |secret: Option<(&str, &str)>| {
        let pull_secret =
            secret.map(|(namespace, name)| json!({"namespace": namespace, "name": name}));
        json!({"oci": {"reference": reference, "pullSecret": pull_secret}})
    };
    api.create(
        &PostParams::default(),
        &reconciler("oci-private", module(None))?,
    )
    .await?;
    let degraded = |s: &Value| common::reconcilers::condition(s, "Degraded")["status"] == "True";
    let status = common::reconcilers::status_until(&api, "oci-private", degraded).await?;
    println!("without credentials: {status}");
    assert_eq!(
        common::reconcilers::condition(&status, "Degraded")["reason"],
        "FetchFailed"
    );

    let secret = pull_secret("registry", &registry.dockerconfigjson().unwrap())?;
    for namespace in [&modules, &work] {
        Api::<Secret>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &secret)
            .await?;
    }
    // A pull secret in a namespace the policy does not list is never read.
    let point_at = |namespace: &str, secret: &str| {
        let spec = json!({"spec": {"module": module(Some((namespace, secret)))}});
        let api = api.clone();
        async move {
            api.patch("oci-private", &PatchParams::default(), &Patch::Merge(&spec))
                .await
        }
    };
    point_at(&work, "registry").await?;
    let refused =
        |s: &Value| common::reconcilers::condition(s, "Degraded")["reason"] == "SourceRefused";
    let status = common::reconcilers::status_until(&api, "oci-private", refused).await?;
    println!("secret elsewhere: {status}");

    point_at(&modules, "registry").await?;
    let ready = |s: &Value| common::reconcilers::condition(s, "Ready")["status"] == "True";
    let status = common::reconcilers::status_until(&api, "oci-private", ready).await?;
    assert_eq!(status["digest"], module_digest("guest-good")?);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &work);
    common::seen_by_good(&configmaps, "from-a-private-registry").await?;
    let object = serde_json::to_string(&api.get("oci-private").await?)?;
    assert!(!object.contains(password), "{object}");
    if let Some(token) = registry.bearer_token("private/good", &["pull"]) {
        let config = json!({"auths": {address: {"registrytoken": token}}}).to_string();
        Api::<Secret>::namespaced(client.clone(), &modules)
            .create(
                &PostParams::default(),
                &pull_secret("registry-token", &config)?,
            )
            .await?;
        point_at(&modules, "registry-token").await?;
        let current = |s: &Value| ready(s) && s["observedGeneration"] == 4;
        let status = common::reconcilers::status_until(&api, "oci-private", current).await?;
        println!("with a registry token: {status}");
    }
    api.delete("oci-private", &Default::default()).await?;
    common::terminate(host).await?;
    // Neither the host's log nor any Event repeats the password.
    let logged = std::fs::read_to_string(&log)?;
    assert!(
        logged.contains("oci-private"),
        "the host logged nothing of it"
    );
    assert!(!logged.contains(password), "the host logged the password");
    let events = plane
        .run_kubectl(&["get", "events", "--all-namespaces", "-o", "json"], None)
        .await?;
    assert!(!events.contains(password), "an Event holds the password");
    Ok(())
}

/// A `kubernetes.io/dockerconfigjson` Secret `name` holding `config`.
fn pull_secret(name: &str, config: &str) -> anyhow::Result<Secret> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": config},
    }))?)
}

/// A plain-HTTP server that answers every request with a header line every few seconds and
/// never ends the headers; its address and how many connections it took.
async fn stalling_registry()
-> anyhow::Result<(String, std::sync::Arc<std::sync::atomic::AtomicUsize>)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?.to_string();
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tokio::spawn(async move {
                let _ = stream.read(&mut [0u8; 4096]).await;
                let mut line: &[u8] = b"HTTP/1.1 200 OK\r\n";
                while stream.write_all(line).await.is_ok() {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    line = b"x-still-thinking: yes\r\n";
                }
            });
        }
    });
    Ok((address, connections))
}

/// Runs `program ARGS` in `dir` with `env`, and returns its stdout; fails with its stderr.
async fn run(
    program: &std::path::Path,
    args: &[&str],
    dir: &std::path::Path,
    env: &[(&str, &str)],
) -> anyhow::Result<String> {
    let output = tokio::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .await?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    anyhow::ensure!(output.status.success(), "{program:?} {args:?}: {stderr}");
    Ok(String::from_utf8(output.stdout)?.trim().to_owned())
}

/// Under a policy that requires signatures by `release` (a cosign key) or `ops` (a key of
/// wasmop's): a plugin file loads only once `cosign sign-blob` signed it; a module pushed by the ORAS CLI is refused unsigned, refused when signed by an
/// untrusted key, and loads once `cosign sign` signed it; a module `wasmop sign` signed with
/// `ops` passes `cosign verify`, is refused where `spec.module.oci.verify` allows only
/// `release`, and — pushed with its precompiled form — loads on a host that cannot compile, also
/// where the policy trusts the keys without requiring signatures.
async fn signatures_decide_what_runs(plane: &ControlPlane) -> anyhow::Result<()> {
    let client = plane.client().await?;
    let work = plane.create_namespace("oci-signed").await?;
    let tools = wasmop_envtest::Binaries::locate_registry().await?;
    let registry = Registry::start(RegistryAuth::Anonymous).await?;
    let address = registry.address().to_owned();
    let plain = ["--registry-plain-http", address.as_str()];
    let dir = tempfile::tempdir()?;
    let keys = dir.path();
    let cosign_env = [("COSIGN_PASSWORD", "")];
    let cosign_http = ["--allow-http-registry", "--allow-insecure-registry"];
    let cosign = tools.cosign();
    run(
        &cosign,
        &["generate-key-pair", "--output-key-prefix", "release"],
        keys,
        &cosign_env,
    )
    .await?;
    let (_, ops_pub) = common::keys::key_pair(keys, "ops", 0x0b)?;
    let (stranger, _) = common::keys::key_pair(keys, "stranger", 0x5e)?;
    let ops = keys.join("ops.pem").display().to_string();
    let release_pub = keys.join("release.pub").display().to_string();
    let signatures_policy = |require: bool| {
        let file = plane
            .dir()
            .join(format!("signatures-required-{require}.yaml"));
        let text = format!(
            "modules: {{private-addresses: true}}\n\
             conversions: {{example.wasmop.dev/WebApp: clusterwasmreconciler/{SIGNED}}}\n\
             signatures:\n  keys: {{release: {release_pub}, ops: {ops_pub}}}\n  require: {require}\n"
        );
        std::fs::write(&file, text).map(|()| file)
    };
    let file = signatures_policy(true)?;

    // The ORAS CLI pushes the component in the Wasm artifact layout.
    let components = common::component("webapp");
    let components = components.parent().unwrap();
    std::fs::write(keys.join("config.json"), "{}")?;
    let oras = tools.oras();
    let tagged = format!("{address}/oras/webapp:v1");
    let config = format!(
        "{}:application/vnd.wasm.config.v0+json",
        keys.join("config.json").display()
    );
    run(
        &oras,
        &[
            "push",
            "--plain-http",
            "--config",
            &config,
            &tagged,
            "webapp.wasm:application/wasm",
        ],
        components,
        &[],
    )
    .await?;
    let digest = run(
        &oras,
        &["resolve", "--plain-http", &tagged],
        components,
        &[],
    )
    .await?;
    let pushed = format!("{address}/oras/webapp@{digest}");

    // A plugin file needs a trusted cosign blob signature beside it.
    let good = keys.join("good.wasm");
    std::fs::copy(common::component("guest-good"), &good)?;
    let start_host_with = |policy: &std::path::Path| {
        let mut host = common::host(plane);
        host.args(["--wasm-reconcilers", "--namespaces", &work, "--policy"])
            .arg(policy)
            .args(plain)
            .args(common::NO_PORTS);
        host
    };
    let start_host = || start_host_with(&file);
    let with_good = || {
        let mut host = start_host();
        host.arg("--plugin").arg(&good);
        host
    };
    let refused = with_good()
        .stderr(std::process::Stdio::piped())
        .output()
        .await?;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("no trusted key signed"), "{stderr}");
    let signature = format!("{}.sig", good.display());
    let good_file = good.display().to_string();
    let sign_blob = [
        "sign-blob",
        "--key",
        "release.key",
        "--tlog-upload=false",
        "-y",
        "--output-signature",
        &signature,
        &good_file,
    ];
    run(&cosign, &sign_blob, keys, &cosign_env).await?;
    let host = with_good().spawn()?;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &work);
    common::seen_by_good(&configmaps, "signed-file").await?;
    let api = common::reconcilers::api(client.clone());
    let degraded = |s: &Value| common::reconcilers::condition(s, "Degraded")["status"] == "True";
    let ready = |s: &Value| common::reconcilers::condition(s, "Ready")["status"] == "True";
    // Each attempt is the ClusterWasmReconciler the policy lets convert WebApps, in turn.
    let attempt = |label: &'static str, module: Value| {
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &reconciler(SIGNED, module)?)
                .await?;
            let done = |s: &Value| degraded(s) || ready(s);
            let status = common::reconcilers::status_until(&api, SIGNED, done).await?;
            api.delete(SIGNED, &Default::default()).await?;
            while api.get_opt(SIGNED).await?.is_some() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            println!("{label}: {status}");
            anyhow::Ok(status)
        }
    };
    let degraded_by = |status: &Value| {
        let condition = common::reconcilers::condition(status, "Degraded");
        (
            condition["reason"].as_str().unwrap_or_default().to_owned(),
            condition["message"].as_str().unwrap_or_default().to_owned(),
        )
    };

    let status = attempt("unsigned", json!({"oci": {"reference": pushed}})).await?;
    let (reason, message) = degraded_by(&status);
    assert_eq!(reason, "Unsigned");
    assert!(
        message.contains(&digest) && message.contains("ops, release"),
        "{message}"
    );

    wasmop(
        &[&["sign", "--key", &stranger, &pushed][..], &plain].concat(),
        &[],
    )
    .await?;
    let status = attempt("stranger-signed", json!({"oci": {"reference": pushed}})).await?;
    let (reason, message) = degraded_by(&status);
    assert_eq!(reason, "UntrustedSignature");
    assert!(
        message.contains(&digest) && message.contains("ops, release"),
        "{message}"
    );

    let sign = [
        &["sign", "--key", "release.key", "--tlog-upload=false", "-y"][..],
        &cosign_http,
        &[&pushed],
    ]
    .concat();
    run(&cosign, &sign, keys, &cosign_env).await?;
    let status = attempt("cosign-signed", json!({"oci": {"reference": pushed}})).await?;
    assert!(ready(&status), "{status}");
    assert_eq!(status["digest"], module_digest("webapp")?);

    // `wasmop push --precompile` adds the compiled component; `wasmop sign` with ops: cosign
    // verifies it, `wasmop pull --key` too, and a WasmReconciler narrowed to release refuses it.
    let to = format!("{address}/team/webapp-v2:v2");
    let v2_file = component("webapp-v2");
    let push = [&["push", "--precompile", &v2_file, &to][..], &plain].concat();
    let v2 = wasmop(&push, &[]).await?;
    wasmop(&[&["sign", "--key", &ops, &v2][..], &plain].concat(), &[]).await?;
    let verify = [
        &["verify", "--key", &ops_pub, "--insecure-ignore-tlog=true"][..],
        &cosign_http,
        &[&v2],
    ]
    .concat();
    let verified = run(&cosign, &verify, keys, &cosign_env).await?;
    assert!(
        verified.contains(v2.rsplit_once('@').unwrap().1),
        "{verified}"
    );
    let pulled = keys.join("v2.wasm").display().to_string();
    let pull = |key| [&["pull", &v2, "-o", &pulled, "--key", key][..], &plain].concat();
    let refused = wasmop(&pull(&release_pub), &[]).await.unwrap_err();
    assert!(refused.to_string().contains("none of the"), "{refused}");
    wasmop(&pull(&ops_pub), &[]).await?;
    let only_release = json!({"oci": {"reference": v2, "verify": {"keys": ["release"]}}});
    let status = attempt("narrowed", only_release).await?;
    assert_eq!(degraded_by(&status).0, "UntrustedSignature");
    common::terminate(host).await?;

    // A tenant's own precompiled layer, signed with a key the operator does not trust.
    let to = format!("{address}/team/stranger:v1");
    let webapp = component("webapp");
    let push = [&["push", "--precompile", &webapp, &to][..], &plain].concat();
    let strangers = wasmop(&push, &[]).await?;
    wasmop(
        &[&["sign", "--key", &stranger, &strangers][..], &plain].concat(),
        &[],
    )
    .await?;

    // A host that cannot compile — an empty compile cache and a compile memory limit no compile
    // fits — under a policy that trusts the keys without requiring signatures: it loads the
    // module whose artifact carries it precompiled and signed by a trusted key, whether the
    // WasmReconciler asks for that key or not, and no other: not the stranger-signed one.
    let cache = tempfile::tempdir()?;
    let host = start_host_with(&signatures_policy(false)?)
        .arg("--compile-cache")
        .arg(cache.path())
        .args(["--compile-memory-limit", "4Mi"])
        .spawn()?;
    let ops_allowed = json!({"oci": {"reference": v2, "verify": {"keys": ["ops"]}}});
    let status = attempt("precompiled", ops_allowed).await?;
    assert!(ready(&status), "{status}");
    let status = attempt("precompiled-trusted", json!({"oci": {"reference": v2}})).await?;
    assert!(ready(&status), "{status}");
    let status = attempt("stranger-layer", json!({"oci": {"reference": strangers}})).await?;
    assert_eq!(degraded_by(&status).0, "CompileKilled", "{status}");
    let status = attempt("compiled-here", json!({"oci": {"reference": pushed}})).await?;
    let (reason, message) = degraded_by(&status);
    assert_eq!(reason, "CompileKilled");
    assert!(message.contains("compile"), "{message}");
    common::terminate(host).await
}
