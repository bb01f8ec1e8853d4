//! Reach stays inside the grant: a webhook on the plugin's own kind stays out of `kube-system`
//! and the host's own namespace unless the operator's policy names them for it, a call from
//! there is admitted without the plugin rather than vetoed, and an index on a kind the plugin
//! may not read is refused at load without the host ever listing that kind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use wasmop_envtest::{ControlPlane, within};

use crate::common;
use crate::common::scrape::{free_address, get, parse, value};

const LIMIT: Duration = Duration::from_secs(300);

/// What guest-veto denies every write with.
const VETO: &str = "vetoed by guest-veto";

/// An operator's policy allowing reads of ConfigMaps everywhere and naming kube-system for them.
const NAMES_KUBE_SYSTEM: &str = "allow:\n  - kinds: [core/ConfigMap]\n    verbs: [get, list, watch]\n  \
                                 - kinds: [core/ConfigMap]\n    verbs: [get]\n    namespaces: [kube-system]\n";

/// A directory of plugins holding component `name`, and a policy file with `policy`.
fn plugin_dir(dir: &Path, name: &str, policy: &str) -> anyhow::Result<(PathBuf, PathBuf)> {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins)?;
    std::fs::copy(
        common::component(name),
        plugins.join(format!("{name}.wasm")),
    )?;
    let policy_file = dir.join("policy.yaml");
    std::fs::write(&policy_file, policy)?;
    Ok((plugins, policy_file))
}

/// `wasmop run` of guest-veto from `dir` under `policy`, in namespace `own`, writing the webhook
/// configuration `name`; its webhook listener's and metrics' addresses.
fn veto_host(
    plane: &ControlPlane,
    dir: &Path,
    (policy, own, name): (&str, &str, &str),
) -> anyhow::Result<(tokio::process::Child, String, String)> {
    let (plugins, policy) = plugin_dir(dir, "guest-veto", policy)?;
    let (webhooks, metrics) = (free_address(), free_address());
    let host = common::host(plane)
        .env("POD_NAMESPACE", own)
        .arg("--plugin-dir")
        .arg(&plugins)
        .arg("--policy")
        .arg(&policy)
        .args(["--health-probe-bind-address", "0"])
        .args(["--metrics-bind-address", &metrics])
        .args(["--webhook-bind-address", &webhooks])
        .args(["--webhook-url", &format!("https://{webhooks}")])
        .args(["--webhook-configuration-name", name])
        .args(["--webhook-timeout", "10s"])
        .spawn()?;
    Ok((host, webhooks, metrics))
}

/// The ValidatingWebhookConfiguration `name`, once the host has written it.
async fn configuration(plane: &ControlPlane, name: &str) -> anyhow::Result<Value> {
    let args = ["get", "validatingwebhookconfiguration", name, "-o", "json"];
    loop {
        if let Ok(found) = plane.run_kubectl(&args, None).await {
            return Ok(serde_json::from_str(&found)?);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The namespaces the first webhook of `configuration` leaves out by name.
fn left_out(configuration: &Value) -> Vec<String> {
    let selector = &configuration["webhooks"][0]["namespaceSelector"];
    let expressions = selector["matchExpressions"].as_array().cloned();
    expressions
        .unwrap_or_default()
        .iter()
        .filter(|e| e["key"] == "kubernetes.io/metadata.name" && e["operator"] == "NotIn")
        .flat_map(|e| e["values"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// `kubectl create configmap name -n namespace`: whether it was stored, and what kubectl said.
async fn create(
    plane: &ControlPlane,
    namespace: &str,
    name: &str,
) -> anyhow::Result<(bool, String)> {
    let output = plane
        .kubectl()
        .args([
            "create",
            "configmap",
            name,
            "-n",
            namespace,
            "--from-literal=a=b",
        ])
        .output()
        .await?;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    Ok((output.status.success(), printed))
}

/// Creates ConfigMaps `prefix-1`, `prefix-2`, … in `namespace` until the apiserver calls the
/// webhook and guest-veto denies one; how many were tried.
async fn until_vetoed(plane: &ControlPlane, namespace: &str, prefix: &str) -> anyhow::Result<u32> {
    for attempt in 1.. {
        let (created, printed) = create(plane, namespace, &format!("{prefix}-{attempt}")).await?;
        if !created && printed.contains(VETO) {
            return Ok(attempt);
        }
        anyhow::ensure!(created, "refused for another reason: {printed}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    unreachable!("attempts are unbounded")
}

/// The AdmissionReview of a ConfigMap create in `namespace`, as the apiserver would post it.
fn review(namespace: &str) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "reach-1",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": "forged",
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "kube-admin"},
            "object": {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "forged", "namespace": namespace}},
            "dryRun": false,
        },
    })
}

/// POSTs `body` to `path` of the webhook listener at `address`, trusting the CA bundle the host
/// wrote into `configuration`; the answer's response.
async fn post(
    configuration: &Value,
    address: &str,
    path: &str,
    body: &Value,
) -> anyhow::Result<Value> {
    let bundle = configuration["webhooks"][0]["clientConfig"]["caBundle"].clone();
    let bundle: k8s_openapi::ByteString = serde_json::from_value(bundle)?;
    let connector = common::tls::connector(CertificateDer::from_pem_slice(&bundle.0)?)?;
    let address: std::net::SocketAddr = address.parse()?;
    let stream = tokio::net::TcpStream::connect(address).await?;
    let stream = connector
        .connect(ServerName::from(address.ip()), stream)
        .await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let request = http::Request::post(path)
        .header(http::header::HOST, address.to_string())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(http_body_util::Full::new(Bytes::from(body.to_string())))?;
    let response = sender.send_request(request).await?;
    let body = response.into_body().collect().await?.to_bytes();
    Ok(serde_json::from_slice::<Value>(&body)?["response"].clone())
}

/// The sum of `name`'s samples with `labels` scraped from the host at `metrics`.
async fn metric(metrics: &str, name: &str, labels: &[(&str, &str)]) -> anyhow::Result<f64> {
    let (_, body) = get(metrics, "/metrics").await?;
    Ok(value(&parse(&body), name, labels).unwrap_or(0.0))
}

/// Stops `host` and deletes the configuration it wrote, so no later write meets its webhook.
async fn stop(
    plane: &ControlPlane,
    mut host: tokio::process::Child,
    name: &str,
) -> anyhow::Result<()> {
    host.kill().await?;
    plane
        .run_kubectl(&["delete", "validatingwebhookconfiguration", name], None)
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_veto_on_its_own_kind_stays_out_of_protected_namespaces_the_policy_does_not_name()
-> anyhow::Result<()> {
    within(LIMIT, "a veto on ConfigMaps", async {
        // Its own plane: the veto denies ConfigMap writes in every namespace it reaches.
        let plane = ControlPlane::start().await?;
        let tenant = plane.create_namespace("reach-tenant").await?;
        let own = plane.create_namespace("reach-host").await?;
        let dir = tempfile::tempdir()?;

        let (host, webhooks, metrics) = veto_host(&plane, dir.path(), ("", &own, "reach-open"))?;
        let written = configuration(&plane, "reach-open").await?;
        let excluded = left_out(&written);
        assert_eq!(excluded, ["kube-system", own.as_str()], "{written}");
        let tries = until_vetoed(&plane, &tenant, "open").await?;
        for namespace in ["kube-system", own.as_str()] {
            let (created, printed) = create(&plane, namespace, "reach-open").await?;
            assert!(created, "the veto reached {namespace}: {printed}");
        }
        let answer = post(
            &written,
            &webhooks,
            "/validate/guest-veto",
            &review("kube-system"),
        )
        .await?;
        let warning = answer["warnings"][0]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(answer["allowed"], true, "a refused call vetoed: {answer}");
        assert!(
            warning.contains("admitted without its webhook")
                && warning.contains("protected namespace"),
            "{answer}"
        );
        let undeclared = [("plugin", "guest-veto"), ("reason", "undeclared")];
        let refused = metric(&metrics, "wasmop_plugin_refusals_total", &undeclared).await?;
        assert!(refused >= 1.0, "the refused call is counted: {refused}");
        stop(&plane, host, "reach-open").await?;

        let named_dir = tempfile::tempdir()?;
        let (host, _, _) = veto_host(
            &plane,
            named_dir.path(),
            (NAMES_KUBE_SYSTEM, &own, "reach-named"),
        )?;
        let named = left_out(&configuration(&plane, "reach-named").await?);
        assert_eq!(named, [own.as_str()]);
        let named_tries = until_vetoed(&plane, "kube-system", "named").await?;
        let (created, printed) = create(&plane, &own, "reach-named").await?;
        assert!(created, "the veto reached the host's namespace: {printed}");
        stop(&plane, host, "reach-named").await?;
        eprintln!(
            "REACH: guest-veto (get on ConfigMaps) left out {excluded:?} by namespaceSelector: \
             vetoed in {tenant} (after {tries} create(s) while the configuration propagated), \
             kube-system and {own} creates stored; a forged review from kube-system admitted \
             with warning {warning:?} ({refused} undeclared refusal(s) counted); with the policy \
             naming kube-system it left out {named:?} and vetoed there (after {named_tries})"
        );
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_on_secrets_it_may_not_read_is_refused_and_no_secret_is_listed()
-> anyhow::Result<()> {
    within(LIMIT, "an index on Secrets", async {
        // Its own plane: its audit log holds only this host's and this test's requests.
        let plane = ControlPlane::start().await?;
        let namespace = plane.create_namespace("reach-index").await?;
        let dir = tempfile::tempdir()?;
        let (plugins, _) = plugin_dir(dir.path(), "guest-index-secrets", "")?;
        std::fs::copy(
            common::component("guest-good"),
            plugins.join("guest-good.wasm"),
        )?;
        let mut audit = plane.audit_log();
        let metrics = free_address();
        let host = common::host(&plane)
            .arg("--plugin-dir")
            .arg(&plugins)
            .args([
                "--namespaces",
                &namespace,
                "--health-probe-bind-address",
                "0",
            ])
            .args(["--metrics-bind-address", &metrics])
            .spawn()?;
        while !get(&metrics, "/plugins").await.is_ok_and(|(code, body)| {
            code == 200 && body.contains("guest-index-secrets") && body.contains("guest-good")
        }) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // guest-good's informers have listed and watched: the host was running under audit.
        let mut configmap_reads = 0;
        while configmap_reads == 0 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let events = audit.read_new()?;
            let hosts = events.iter().filter(|e| !e.user.starts_with("system:"));
            let secrets = hosts
                .clone()
                .filter(|e| e.resource == "secrets" && matches!(e.verb.as_str(), "list" | "watch"))
                .count();
            assert_eq!(secrets, 0, "the host listed or watched Secrets");
            configmap_reads += hosts
                .filter(|e| {
                    e.resource == "configmaps" && matches!(e.verb.as_str(), "list" | "watch")
                })
                .count();
        }
        // Settle: anything the refused index would start is past its first list by now.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let late = audit
            .read_new()?
            .into_iter()
            .filter(|e| e.resource == "secrets" && matches!(e.verb.as_str(), "list" | "watch"))
            .filter(|e| !e.user.starts_with("system:"))
            .count();
        assert_eq!(late, 0, "the host listed or watched Secrets");
        let (_, status) = get(&metrics, "/plugins").await?;
        assert!(
            status.contains("list and watch Secret.v1")
                && status.contains("declared no such permission"),
            "{status}"
        );
        let failures = value(
            &parse(&get(&metrics, "/metrics").await?.1),
            "wasmop_plugin_load_failures_total",
            &[],
        )
        .unwrap_or(0.0);
        common::terminate(host).await?;
        eprintln!(
            "REACH: guest-index-secrets refused at load (\"may not have the host list and watch \
             Secret.v1 across the watched namespaces as the operator: describe() declared no such \
             permission\"), {failures} load failure(s) counted; 0 list/watch of secrets by the \
             host in the audit log beside {configmap_reads} of configmaps for guest-good"
        );
        Ok(())
    })
    .await
}
