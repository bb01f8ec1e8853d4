//! The real apiserver calling a plugin's webhooks through the `wasmop` binary: the host writes
//! the webhook configurations and the CRD's conversion stanza pointing at its own HTTPS
//! listener, and then `kubectl apply` meets `webapp`'s validation, defaulting and conversion; a
//! hot-swapped version changes the verdict, an unloaded plugin takes its webhooks with it, a
//! guest that loops in `validate` gets the answer of its failure policy, counted in metrics, and
//! a follower serves the webhooks its leader configured, with a certificate both share.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::scrape::{free_address, get, parse, value};
use serde_json::{Value, json};
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(240);
const CRD: &str = "webapps.example.wasmop.dev";

/// Held by each test whose host converts WebApps: the CRD's conversion stanza is one for the
/// whole control plane.
static WEBAPP_CRD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `kubectl args` with `stdin`: whether it succeeded, and stdout and stderr together.
async fn kubectl(
    plane: &ControlPlane,
    args: &[&str],
    stdin: &str,
) -> anyhow::Result<(bool, String)> {
    use tokio::io::AsyncWriteExt;
    let mut child = plane
        .kubectl()
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).await?;
    }
    let output = child.wait_with_output().await?;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    Ok((output.status.success(), printed))
}

/// A WebApp manifest of `version` named `name` with `spec`.
fn webapp(version: &str, name: &str, spec: Value) -> String {
    json!({
        "apiVersion": format!("example.wasmop.dev/{version}"),
        "kind": "WebApp",
        "metadata": {"name": name},
        "spec": spec,
    })
    .to_string()
}

/// The module's control plane with the WebApp CRD, held by this test alone (the tests here change
/// its conversion), and a new namespace named after `prefix`.
async fn webapp_plane(
    prefix: &str,
) -> anyhow::Result<(
    tokio::sync::MutexGuard<'static, ()>,
    std::sync::Arc<ControlPlane>,
    String,
)> {
    let crd = WEBAPP_CRD.lock().await;
    let plane = shared_by(module_path!()).await?;
    common::install_webapp_crd(&plane).await?;
    let namespace = plane.create_namespace(prefix).await?;
    Ok((crd, plane, namespace))
}

/// Server-side dry runs of `manifest` until the apiserver refuses it with `message` (the
/// webhook it awaits is called); returns what kubectl printed.
async fn until_refused(
    plane: &ControlPlane,
    namespace: &str,
    manifest: &str,
    message: &str,
) -> anyhow::Result<String> {
    let args = ["apply", "--dry-run=server", "-n", namespace, "-f", "-"];
    loop {
        let (applied, printed) = kubectl(plane, &args, manifest).await?;
        if !applied && printed.contains(message) {
            return Ok(printed);
        }
        anyhow::ensure!(
            applied || printed.contains("denied") || printed.contains("failed calling webhook"),
            "unexpected: {printed}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `kubectl get` of `resource` `name` as JSON, polled until `check` holds.
async fn until_read(
    plane: &ControlPlane,
    args: &[&str],
    check: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    loop {
        let (read, printed) = kubectl(plane, &args, "").await?;
        if read {
            let object: Value = serde_json::from_str(&printed)?;
            if check(&object) {
                return Ok(object);
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Whether kubectl finds `resource` `name` (cluster-scoped).
async fn exists(plane: &ControlPlane, resource: &str, name: &str) -> anyhow::Result<bool> {
    let (found, printed) = kubectl(plane, &["get", resource, name], "").await?;
    anyhow::ensure!(found || printed.contains("NotFound"), "{printed}");
    Ok(found)
}

/// The sample of `name` with `labels` scraped from the host at `metrics`.
async fn metric(metrics: &str, name: &str, labels: &[(&str, &str)]) -> anyhow::Result<f64> {
    let (_, body) = get(metrics, "/metrics").await?;
    Ok(value(&parse(&body), name, labels).unwrap_or(0.0))
}

#[tokio::test]
async fn webapps_are_validated_defaulted_and_converted_by_the_plugin_and_its_swap()
-> anyhow::Result<()> {
    within(LIMIT, "webapp's webhooks on the apiserver", async {
        let (_crd, plane, namespace) = webapp_plane("admission").await?;
        let plane = &plane;
        let ns = namespace.as_str();
        let dir = tempfile::tempdir()?;
        common::publish("webapp", dir.path(), "webapp.wasm")?;
        let (webhooks, metrics) = (free_address(), free_address());
        let _host = common::host(plane)
            .arg("--plugin-dir")
            .arg(dir.path())
            .args(["--namespaces", ns, "--health-probe-bind-address", "0"])
            .args(["--metrics-bind-address", &metrics])
            .args(["--webhook-bind-address", &webhooks])
            .args(["--webhook-url", &format!("https://{webhooks}")])
            .args(["--webhook-configuration-name", "admission-webapp"])
            // Room for a debug build's first calls on a busy machine: a timeout here is a
            // refusal, which would read as the plugin's verdict.
            .args(["--webhook-timeout", "10s"])
            .spawn()?;

        let crowded = webapp(
            "v1alpha1",
            "crowded",
            json!({"image": "nginx:1.27", "replicas": 75}),
        );
        let refused = until_refused(plane, ns, &crowded, "between 0 and 50").await?;
        assert!(
            refused.contains("spec.replicas must be between 0 and 50, not 75"),
            "{refused}"
        );
        let (applied, printed) = kubectl(plane, &["apply", "-n", ns, "-f", "-"], &crowded).await?;
        assert!(
            !applied,
            "the invalid WebApp is refused for real too: {printed}"
        );
        let (found, _) = kubectl(plane, &["get", "webapp", "crowded", "-n", ns], "").await?;
        assert!(!found, "nothing was stored");
        let bad_image = webapp("v1alpha1", "bad-image", json!({"image": "Not An Image!"}));
        let (applied, printed) =
            kubectl(plane, &["apply", "-n", ns, "-f", "-"], &bad_image).await?;
        assert!(
            !applied && printed.contains("not a well-formed image reference"),
            "{printed}"
        );

        let portless = webapp("v1alpha1", "portless", json!({"image": "nginx:1.27"}));
        let (applied, printed) = kubectl(plane, &["apply", "-n", ns, "-f", "-"], &portless).await?;
        assert!(applied, "{printed}");
        let stored = until_read(plane, &["get", "webapp", "portless", "-n", ns], |_| true).await?;
        assert_eq!(
            stored["spec"]["port"], 8080,
            "defaulted by the plugin: {stored}"
        );

        let beta = webapp(
            "v1beta1",
            "beta",
            json!({"image": "nginx:1.27", "instances": 3}),
        );
        let (applied, printed) = kubectl(plane, &["apply", "-n", ns, "-f", "-"], &beta).await?;
        assert!(applied, "{printed}");
        let alpha_view = [
            "get",
            "webapps.v1alpha1.example.wasmop.dev",
            "beta",
            "-n",
            ns,
        ];
        let alpha = until_read(plane, &alpha_view, |o| o["spec"]["replicas"] == 3).await?;
        assert!(alpha["spec"].get("instances").is_none(), "{alpha}");
        assert_eq!(
            alpha["spec"]["port"], 8080,
            "defaulted through conversion too"
        );
        let beta_view = [
            "get",
            "webapps.v1beta1.example.wasmop.dev",
            "portless",
            "-n",
            ns,
        ];
        let beta = until_read(plane, &beta_view, |o| o["spec"]["instances"] == 1).await?;
        assert!(beta["spec"].get("replicas").is_none(), "{beta}");
        let crowded_beta = webapp(
            "v1beta1",
            "crowded-beta",
            json!({"image": "nginx", "instances": 75}),
        );
        let (applied, printed) =
            kubectl(plane, &["apply", "-n", ns, "-f", "-"], &crowded_beta).await?;
        assert!(
            !applied && printed.contains("between 0 and 50"),
            "{printed}"
        );

        for hook in ["/validate/webapp", "/default/webapp", "/convert/webapp"] {
            let labels = [("webhook", hook), ("code", "200")];
            let answered = metric(
                &metrics,
                "controller_runtime_webhook_requests_total",
                &labels,
            )
            .await?;
            assert!(answered >= 1.0, "{hook} answered {answered} times");
        }
        // crowded (twice), bad-image and crowded in v1beta1 were refused by the plugin's verdict.
        let name = "wasmop_webhook_denials_total";
        let denied = metric(&metrics, name, &[("webhook", "/validate/webapp")]).await?;
        assert!(denied >= 4.0, "4 refusals counted as {denied}");
        let defaulted = metric(&metrics, name, &[("webhook", "/default/webapp")]).await?;
        assert_eq!(defaulted, 0.0, "defaulting refused nothing");

        common::publish("webapp-v2", dir.path(), "webapp.wasm")?;
        let args = ["apply", "--dry-run=server", "-n", ns, "-f", "-"];
        let swapped = Instant::now();
        loop {
            let (applied, printed) = kubectl(plane, &args, &crowded).await?;
            if applied {
                break;
            }
            assert!(printed.contains("between 0 and 50"), "{printed}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        println!(
            "webapp 0.2.0 admitted 75 replicas {:?} after the swap",
            swapped.elapsed()
        );
        let too_many = webapp(
            "v1alpha1",
            "crowded",
            json!({"image": "nginx", "replicas": 175}),
        );
        let (applied, printed) = kubectl(plane, &args, &too_many).await?;
        assert!(
            !applied && printed.contains("between 0 and 100"),
            "{printed}"
        );

        std::fs::remove_file(dir.path().join("webapp.wasm"))?;
        loop {
            let validating = exists(plane, "validatingwebhookconfiguration", "admission-webapp");
            let mutating = exists(plane, "mutatingwebhookconfiguration", "admission-webapp");
            if !validating.await? && !mutating.await? {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let crd = until_read(plane, &["get", "crd", CRD], |crd| {
            crd["spec"]["conversion"]["strategy"] == "None"
        })
        .await?;
        let annotations = &crd["metadata"]["annotations"];
        assert!(
            annotations.get("wasmop.dev/converted-by").is_none(),
            "{crd}"
        );
        Ok(())
    })
    .await
}

/// Runs `guest-spin`, which loops in `validate` for ConfigMap creates, with `policy`; creates
/// ConfigMaps until one is answered by the host for the looping guest; returns what kubectl
/// printed for it and how long it took.
async fn spin_with(
    plane: &ControlPlane,
    policy: &str,
    answered: &str,
) -> anyhow::Result<(bool, String, Duration)> {
    let namespace = plane
        .create_namespace(&format!("spin-{}", policy.to_lowercase()))
        .await?;
    let (webhooks, metrics) = (free_address(), free_address());
    let name = format!("spin-{}", policy.to_lowercase());
    let mut host = common::host(plane)
        .args([
            "--plugin",
            &common::component("guest-spin").display().to_string(),
        ])
        .args([
            "--namespaces",
            &namespace,
            "--health-probe-bind-address",
            "0",
        ])
        .args(["--metrics-bind-address", &metrics])
        .args(["--webhook-bind-address", &webhooks])
        .args(["--webhook-url", &format!("https://{webhooks}")])
        .args(["--webhook-configuration-name", &name])
        .args([
            "--webhook-timeout",
            "500ms",
            "--webhook-failure-policy",
            policy,
        ])
        .spawn()?;
    let mut attempt = 0;
    let found = loop {
        attempt += 1;
        let configmap = format!("attempt-{attempt}");
        let args = [
            "create",
            "configmap",
            &configmap,
            "-n",
            &namespace,
            "--from-literal=a=b",
        ];
        let started = Instant::now();
        let (created, printed) = kubectl(plane, &args, "").await?;
        let took = started.elapsed();
        if printed.contains(answered) {
            break (created, printed, took);
        }
        anyhow::ensure!(created, "refused for another reason: {printed}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let labels = [
        ("webhook", "/validate/guest-spin"),
        ("failure_policy", policy),
    ];
    let failures = metric(&metrics, "wasmop_webhook_plugin_failures_total", &labels).await?;
    assert!(
        failures >= 1.0,
        "the failure is counted under {policy}: {failures}"
    );
    let labels = [("webhook", "/validate/guest-spin")];
    let denials = metric(&metrics, "wasmop_webhook_denials_total", &labels).await?;
    assert_eq!(denials, 0.0, "a failure policy's answer is no denial");
    host.kill().await?;
    plane
        .run_kubectl(&["delete", "validatingwebhookconfiguration", &name], None)
        .await?;
    Ok(found)
}

#[tokio::test]
async fn a_looping_guest_gets_the_answer_of_its_failure_policy_within_the_timeout()
-> anyhow::Result<()> {
    within(LIMIT, "failure policies on the apiserver", async {
        let plane = &shared_by(module_path!()).await?;
        let (created, printed, took) = spin_with(
            plane,
            "Ignore",
            "admitted without its webhook (failurePolicy Ignore)",
        )
        .await?;
        assert!(created, "Ignore lets the request through: {printed}");
        assert!(printed.contains("guest-spin"), "{printed}");
        println!("Ignore answered in {took:?}");
        let (created, printed, took) =
            spin_with(plane, "Fail", "interrupted at its timeout").await?;
        assert!(!created, "Fail refuses the request: {printed}");
        assert!(
            printed.contains("guest-spin"),
            "the refusal names the plugin: {printed}"
        );
        println!("Fail answered in {took:?}");
        assert!(
            took < Duration::from_secs(30),
            "answered by the host, not left to the apiserver's own timeout: {took:?}"
        );
        Ok(())
    })
    .await
}

/// A CA and a serving certificate for 127.0.0.1 it signed, written into `dir` as cert-manager
/// writes a Secret: `ca.crt`, `tls.crt`, `tls.key`.
fn shared_certificate(dir: &Path) -> anyhow::Result<()> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate()?;
    let cert =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?.signed_by(&key, &issuer)?;
    std::fs::write(dir.join("ca.crt"), ca.pem())?;
    std::fs::write(dir.join("tls.crt"), cert.pem())?;
    std::fs::write(dir.join("tls.key"), key.serialize_pem())?;
    Ok(())
}

#[tokio::test]
async fn a_follower_serves_the_webhooks_its_leader_configured() -> anyhow::Result<()> {
    within(LIMIT, "webhooks on a follower", async {
        let (_crd, plane, namespace) = webapp_plane("follower").await?;
        let plane = &plane;
        let ns = namespace.as_str();
        let certs = tempfile::tempdir()?;
        shared_certificate(certs.path())?;
        let follower_webhooks = free_address();
        let replica = |webhooks: &str, metrics: &str| {
            let mut command = common::host(plane);
            command
                .args(["--plugin", &common::component("webapp").display().to_string()])
                .args(["--namespaces", ns, "--health-probe-bind-address", "0"])
                .args(["--metrics-bind-address", metrics])
                .args(["--leader-elect", "--leader-election-namespace", ns])
                .args(["--webhook-bind-address", webhooks])
                .args(["--webhook-url", &format!("https://{follower_webhooks}")])
                .args(["--webhook-configuration-name", "admission-follower"])
                .args(["--webhook-timeout", "10s"])
                .arg("--webhook-cert-dir")
                .arg(certs.path());
            command
        };
        let leader_metrics = free_address();
        let _leader = replica(&free_address(), &leader_metrics).spawn()?;
        let leading = [("name", "wasmop-leader")];
        // Not listening yet reads as not leading yet.
        while metric(&leader_metrics, "leader_election_master_status", &leading)
            .await
            .unwrap_or(0.0)
            < 1.0
        {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let follower_metrics = free_address();
        let _follower = replica(&follower_webhooks, &follower_metrics).spawn()?;

        let crowded = webapp("v1alpha1", "crowded", json!({"image": "nginx", "replicas": 75}));
        let refused = until_refused(plane, ns, &crowded, "between 0 and 50").await?;
        assert!(refused.contains("spec.replicas must be between 0 and 50"), "{refused}");
        let labels = [("webhook", "/validate/webapp"), ("code", "200")];
        let by_follower = metric(&follower_metrics, "controller_runtime_webhook_requests_total", &labels);
        assert!(by_follower.await? >= 1.0, "the follower answered");
        let follower_leads =
            metric(&follower_metrics, "leader_election_master_status", &leading).await?;
        assert_eq!(follower_leads, 0.0, "it answered as a follower");
        let config = until_read(
            plane,
            &["get", "validatingwebhookconfiguration", "admission-follower"],
            |_| true,
        )
        .await?;
        let bundle = &config["webhooks"][0]["clientConfig"]["caBundle"];
        let ca = std::fs::read_to_string(certs.path().join("ca.crt"))?;
        let expected = serde_json::to_value(k8s_openapi::ByteString(ca.into_bytes()))?;
        assert_eq!(*bundle, expected, "the bundle is the directory's ca.crt");
        let configurations = "validatingwebhookconfiguration,mutatingwebhookconfiguration";
        plane
            .run_kubectl(&["delete", configurations, "admission-follower"], None)
            .await?;
        let unconverted = r#"{"metadata":{"annotations":{"wasmop.dev/converted-by":null}},"spec":{"conversion":{"strategy":"None","webhook":null}}}"#;
        plane
            .run_kubectl(&["patch", "crd", CRD, "--type=merge", "-p", unconverted], None)
            .await?;
        Ok(())
    })
    .await
}

/// `wasmop run --webhook-url` serving webapp's webhooks, on `webhooks`, for `namespace`.
fn url_host(
    plane: &ControlPlane,
    namespace: &str,
    webhooks: &str,
    name: &str,
) -> std::io::Result<tokio::process::Child> {
    common::host(plane)
        .arg("--plugin")
        .arg(common::component("webapp"))
        .args(["--namespaces", namespace])
        .args(common::NO_PORTS)
        .args(["--webhook-bind-address", webhooks])
        .args(["--webhook-url", &format!("https://{webhooks}")])
        .args(["--webhook-configuration-name", name])
        .args(["--webhook-timeout", "10s"])
        .spawn()
}

#[tokio::test]
async fn a_host_called_at_its_own_url_removes_its_webhooks_when_it_stops() -> anyhow::Result<()> {
    within(LIMIT, "webhooks removed by a stopping host", async {
        let (_crd, plane, namespace) = webapp_plane("disarmed").await?;
        let plane = &plane;
        let (ns, name, webhooks) = (namespace.as_str(), "disarmed", free_address());
        let crowded = webapp(
            "v1alpha1",
            "crowded",
            json!({"image": "nginx", "replicas": 75}),
        );
        let host = url_host(plane, ns, &webhooks, name)?;
        until_refused(plane, ns, &crowded, "between 0 and 50").await?;

        common::terminate(host).await?;
        for kind in [
            "validatingwebhookconfiguration",
            "mutatingwebhookconfiguration",
        ] {
            assert!(!exists(plane, kind, name).await?, "{kind} {name} is left");
        }
        let (_, crd) = kubectl(plane, &["get", "crd", CRD, "-o", "json"], "").await?;
        let crd: Value = serde_json::from_str(&crd)?;
        assert_eq!(crd["spec"]["conversion"]["strategy"], "None", "{crd}");
        let fine = webapp("v1alpha1", "fine", json!({"image": "nginx", "replicas": 1}));
        let (applied, printed) = kubectl(plane, &["apply", "-n", ns, "-f", "-"], &fine).await?;
        assert!(applied, "a write with no host up is not refused: {printed}");

        // At once on the same port, a new host serves and writes them again.
        let host = url_host(plane, ns, &webhooks, name)?;
        until_refused(plane, ns, &crowded, "between 0 and 50").await?;
        common::terminate(host).await
    })
    .await
}

#[tokio::test]
async fn webhook_calls_are_recorded_and_replayed_against_the_next_version() -> anyhow::Result<()> {
    within(LIMIT, "webhook calls recorded and replayed", async {
        let (_crd, plane, namespace) = webapp_plane("recorded").await?;
        let plane = &plane;
        let (ns, webhooks) = (namespace.as_str(), free_address());
        let recorded = tempfile::tempdir()?;
        let host = common::host(plane)
            .arg("--plugin")
            .arg(common::component("webapp"))
            .args(["--namespaces", ns])
            .args(common::NO_PORTS)
            .args(["--webhook-bind-address", &webhooks])
            .args(["--webhook-url", &format!("https://{webhooks}")])
            .args(["--webhook-configuration-name", "recorded"])
            .args(["--webhook-timeout", "10s"])
            .arg("--record")
            .arg(recorded.path())
            .spawn()?;
        let crowded = webapp(
            "v1alpha1",
            "crowded",
            json!({"image": "nginx", "replicas": 75}),
        );
        until_refused(plane, ns, &crowded, "between 0 and 50").await?;
        let fine = webapp("v1alpha1", "fine", json!({"image": "nginx", "replicas": 1}));
        let (applied, printed) = kubectl(plane, &["apply", "-n", ns, "-f", "-"], &fine).await?;
        assert!(applied, "{printed}");
        let as_v1beta1 = [
            "get",
            "-n",
            ns,
            "webapps.v1beta1.example.wasmop.dev",
            "fine",
        ];
        until_read(plane, &as_v1beta1, |o| o["spec"]["instances"] == 1).await?;
        common::terminate(host).await?;

        let folder = recorded.path().join("webapp");
        let files: Vec<String> = std::fs::read_dir(&folder)?
            .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()?;
        for hook in ["-validating-", "-defaulting-", "-converting-"] {
            assert!(
                files.iter().any(|f| f.contains(hook)),
                "no {hook} call in {files:?}"
            );
        }
        let refused = files
            .iter()
            .find(|f| f.contains("-validating-") && f.ends_with("-crowded.yaml"));
        let refused = std::fs::read_to_string(folder.join(refused.expect("the refusal")))?;
        assert!(refused.contains("allowed: false"), "{refused}");
        assert!(
            refused.contains("spec.replicas must be between 0 and 50, not 75"),
            "{refused}"
        );

        let replay = |plugin: &str| {
            std::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
                .args(["test", "--replay"])
                .arg(recorded.path())
                .arg(common::component(plugin))
                .env("RUST_LOG", "error")
                .output()
        };
        let same = replay("webapp")?;
        let text = String::from_utf8_lossy(&same.stdout);
        assert!(
            same.status.success(),
            "0.1.0 answers its own calls alike:\n{text}"
        );
        let next = replay("webapp-v2")?;
        let text = String::from_utf8_lossy(&next.stdout);
        assert_eq!(next.status.code(), Some(1), "{text}");
        let failed: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert!(!failed.is_empty(), "{text}");
        for line in failed {
            let webhook = line.contains("answering validate") && line.contains("crowded");
            let reconcile = line.contains("reconciling");
            assert!(
                webhook || reconcile,
                "only the refusal of 75 replicas and the stamp differ: {text}"
            );
        }
        assert!(
            text.contains("allowed: expected false, answered true"),
            "{text}"
        );
        Ok(())
    })
    .await
}
