//! Admission latency as a client of the apiserver sees it: server-side dry-run creates of a valid
//! WebApp, one at a time, each passing the defaulting and the validating webhook of the operator
//! under test — wasmop with the Rust and the Python `webapp` plugin, and the same webhooks
//! written with controller-runtime — beside the apiserver without any webhook, on one control
//! plane and in one run. Each operator gets warm-up requests first, then the timed ones; the
//! report gives the median and p99, their ratios to controller-runtime, and what the webhooks add
//! to the apiserver's own median.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::Api;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use serde::Serialize;
use serde_json::json;

use crate::load;
use crate::process::Operator;
use crate::scenario::Cluster;

/// Requests sent before the timed ones, so no operator pays for its first calls.
const WARM_UP: usize = 100;
/// The name of the webhook configurations written for controller-runtime.
const CONTROLLER_RUNTIME: &str = "bench-controller-runtime";

/// One row: whose webhooks answered, and the latencies of the timed requests.
#[derive(Debug, Clone, Serialize)]
pub struct Latencies {
    /// The operator, or the apiserver alone.
    pub name: String,
    /// Milliseconds of each timed request, in the order sent.
    pub millis: Vec<f64>,
}

impl Latencies {
    fn quantile(&self, q: f64) -> f64 {
        quantile(&self.millis, q)
    }
}

/// The `q` quantile of `values` (the sorted value at the rounded rank).
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(index).copied().unwrap_or(f64::NAN)
}

/// Who answers the webhooks.
#[derive(Debug, Clone, Copy)]
enum Webhooks {
    /// No webhook at all: the apiserver's own latency.
    None,
    /// The controller-runtime comparator.
    ControllerRuntime,
    /// wasmop with this component.
    Wasmop(&'static str),
}

/// Measures every row with `requests` timed requests each, on a control plane of its own.
pub async fn run(repo: &Path, logs: &Path, requests: usize) -> anyhow::Result<Vec<Latencies>> {
    let cluster = Cluster::start(repo).await?;
    let namespace = cluster.namespace("admission").await?;
    let rows = [
        ("apiserver, no webhook", Webhooks::None),
        ("controller-runtime", Webhooks::ControllerRuntime),
        ("wasmop + Rust", Webhooks::Wasmop("webapp.wasm")),
        ("wasmop + Python", Webhooks::Wasmop("webapp-python.wasm")),
    ];
    let mut measured = Vec::new();
    for (name, webhooks) in rows {
        eprintln!("[bench] admission latency, {requests} dry-run creates: {name}");
        let operator = start(repo, logs, &cluster, &namespace, webhooks).await?;
        let apps = load::webapps(cluster.client(), &namespace);
        wait_served(&apps, webhooks).await?;
        time(&apps, WARM_UP).await?;
        let millis = time(&apps, requests).await?;
        let row = Latencies {
            name: name.to_owned(),
            millis,
        };
        eprintln!(
            "    median {:.2} ms, p99 {:.2} ms",
            row.quantile(0.5),
            row.quantile(0.99)
        );
        measured.push(row);
        if let Some(operator) = operator {
            operator.stop().await?;
        }
        unconfigure(cluster.client()).await?;
    }
    cluster.stop().await?;
    Ok(measured)
}

/// Starts the operator that serves `webhooks` (none for the apiserver alone).
async fn start(
    repo: &Path,
    logs: &Path,
    cluster: &Cluster,
    namespace: &str,
    webhooks: Webhooks,
) -> anyhow::Result<Option<Operator>> {
    let address = free_address()?;
    let (mut command, name) = match webhooks {
        Webhooks::None => return Ok(None),
        Webhooks::ControllerRuntime => {
            let certs = logs.join("controller-runtime-webhook-certs");
            let ca = self_signed(&certs)?;
            configure_controller_runtime(cluster.client(), &address, &ca).await?;
            let mut command =
                tokio::process::Command::new(repo.join("target/bench/webapp-controller-runtime"));
            command
                .env("WEBAPP_WEBHOOK_CERT_DIR", &certs)
                .env("WEBAPP_WEBHOOK_PORT", address.port().to_string());
            (command, "controller-runtime".to_owned())
        }
        Webhooks::Wasmop(component) => {
            let mut command = tokio::process::Command::new(repo.join("target/release/wasmop"));
            command
                .args(["run", "--namespaces", namespace])
                .arg("--plugin")
                .arg(repo.join("target/components").join(component))
                .args([
                    "--metrics-bind-address",
                    "0",
                    "--health-probe-bind-address",
                    "0",
                ])
                .args(["--webhook-bind-address", &address.to_string()])
                .args(["--webhook-url", &format!("https://{address}")])
                .env(
                    "WASMOP_COMPILE_CACHE",
                    repo.join("target/bench/compile-cache"),
                );
            (command, format!("wasmop-{component}"))
        }
    };
    command
        .env("KUBECONFIG", cluster.kubeconfig())
        .env("WEBAPP_NAMESPACE", namespace);
    let log = logs.join(format!("admission-{name}.log"));
    Ok(Some(Operator::start(
        command,
        &log,
        &format!("admission-{name}"),
    )?))
}

/// Waits until the webhooks answer: a WebApp with too many replicas is refused (at once for the
/// apiserver alone, which refuses nothing and is not waited for).
async fn wait_served(apps: &Api<DynamicObject>, webhooks: Webhooks) -> anyhow::Result<()> {
    if matches!(webhooks, Webhooks::None) {
        return Ok(());
    }
    let mut crowded = load::webapp(0);
    crowded["spec"]["replicas"] = json!(75);
    let crowded: DynamicObject = serde_json::from_value(crowded)?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match apps.create(&dry_run(), &crowded).await {
            Err(kube::Error::Api(status)) if status.message.contains("between 0 and 50") => {
                return Ok(());
            }
            _ if Instant::now() > deadline => anyhow::bail!("the webhooks never answered"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        ..PostParams::default()
    }
}

/// The milliseconds of `count` dry-run creates of a valid WebApp, sent one at a time.
async fn time(apps: &Api<DynamicObject>, count: usize) -> anyhow::Result<Vec<f64>> {
    let app: DynamicObject = serde_json::from_value(load::webapp(1))?;
    let mut millis = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        apps.create(&dry_run(), &app).await?;
        millis.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(millis)
}

/// A loopback address with a free port.
fn free_address() -> anyhow::Result<std::net::SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// Writes a self-signed `tls.crt` and `tls.key` for 127.0.0.1 into `dir`; returns the PEM.
fn self_signed(dir: &Path) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir)?;
    let generated = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()])?;
    let pem = generated.cert.pem();
    std::fs::write(dir.join("tls.crt"), &pem)?;
    std::fs::write(dir.join("tls.key"), generated.signing_key.serialize_pem())?;
    Ok(pem)
}

/// The webhook configurations a controller-runtime user writes (or kubebuilder generates) for
/// its webhooks at `address`, trusted with `ca`.
async fn configure_controller_runtime(
    client: &kube::Client,
    address: &std::net::SocketAddr,
    ca: &str,
) -> anyhow::Result<()> {
    let webhook = |hook: &str, path: &str| {
        json!({
            "name": format!("{hook}.webapp.example.wasmop.dev"),
            "clientConfig": {
                "url": format!("https://{address}{path}"),
                "caBundle": k8s_openapi::ByteString(ca.as_bytes().to_vec()),
            },
            "rules": [{
                "apiGroups": ["example.wasmop.dev"], "apiVersions": ["v1alpha1"],
                "resources": ["webapps"], "operations": ["CREATE", "UPDATE"],
            }],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })
    };
    let validating: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": CONTROLLER_RUNTIME},
        "webhooks": [webhook("validate", "/validate-example-wasmop-dev-v1alpha1-webapp")],
    }))?;
    let mutating: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": CONTROLLER_RUNTIME},
        "webhooks": [webhook("default", "/mutate-example-wasmop-dev-v1alpha1-webapp")],
    }))?;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &validating)
        .await?;
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &mutating)
        .await?;
    Ok(())
}

/// Deletes every webhook configuration, so the next row meets only its own.
async fn unconfigure(client: &kube::Client) -> anyhow::Result<()> {
    let params = DeleteParams::default();
    let lists = Default::default();
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .delete_collection(&params, &lists)
        .await?;
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .delete_collection(&params, &lists)
        .await?;
    Ok(())
}

/// The table of `rows`, the first being the apiserver alone and the second controller-runtime.
pub fn markdown(rows: &[Latencies]) -> String {
    let mut out = String::new();
    let requests = rows.first().map_or(0, |r| r.millis.len());
    let _ = writeln!(
        out,
        "**Admission latency** (server-side dry-run creates of a valid WebApp through the defaulting and validating webhooks, one at a time, as a client of the apiserver sees them: {requests} timed after {WARM_UP} warm-up requests; ratios to controller-runtime)\n"
    );
    let _ = writeln!(
        out,
        "| webhooks | median | ratio | p99 | ratio | median added to the apiserver's |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let base = rows.first().map_or(f64::NAN, |r| r.quantile(0.5));
    let reference = rows.get(1);
    for row in rows {
        let (median, p99) = (row.quantile(0.5), row.quantile(0.99));
        let ratio = |value: f64, q: f64| {
            reference.map_or(String::new(), |r| format!("{:.2}x", value / r.quantile(q)))
        };
        let _ = writeln!(
            out,
            "| {} | {median:.2} ms | {} | {p99:.2} ms | {} | {:+.2} ms |",
            row.name,
            ratio(median, 0.5),
            ratio(p99, 0.99),
            median - base
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_read_the_sorted_latencies() {
        let row = Latencies {
            name: "x".into(),
            millis: (1..=100).rev().map(f64::from).collect(),
        };
        assert_eq!(row.quantile(0.5), 51.0);
        assert_eq!(row.quantile(0.99), 99.0);
        let table = markdown(&[row.clone(), row]);
        assert!(
            table.contains("| x | 51.00 ms | 1.00x | 99.00 ms | 1.00x | +0.00 ms |"),
            "{table}"
        );
    }
}
