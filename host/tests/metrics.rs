//! The `wasmop` binary's HTTP endpoints while it runs the webapp plugin on the real control
//! plane: probes answer, and `/metrics` parses as Prometheus text and carries controller-runtime's
//! names with the values the workload produced.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use kube::api::{Api, DynamicObject, GroupVersionKind, PostParams};
use kube::core::ApiResource;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wasmop_envtest::{shared, within};

const LIMIT: Duration = Duration::from_secs(180);

/// Status code and body of `GET path` on `address`.
async fn get(address: &str, path: &str) -> anyhow::Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response.split_once("\r\n\r\n").context("no header end")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .context("no status")?
        .parse()?;
    Ok((status, body.to_owned()))
}

/// A loopback address nothing listens on right now.
fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("bound").to_string()
}

/// Sample values by metric name, each with its labels.
type Samples = HashMap<String, Vec<(HashMap<String, String>, f64)>>;

fn parse(text: &str) -> Samples {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text format");
    let mut samples = Samples::new();
    for sample in scrape.samples {
        let value = match sample.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
            prometheus_parse::Value::Summary(_) => continue,
        };
        let labels = sample
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        samples
            .entry(sample.metric)
            .or_default()
            .push((labels, value));
    }
    samples
}

/// The value of `name` whose labels include `want`.
fn value(samples: &Samples, name: &str, want: &[(&str, &str)]) -> Option<f64> {
    samples.get(name)?.iter().find_map(|(labels, v)| {
        want.iter()
            .all(|(k, w)| labels.get(*k).map(String::as_str) == Some(*w))
            .then_some(*v)
    })
}

#[tokio::test]
async fn metrics_and_probes_of_a_running_host() -> anyhow::Result<()> {
    within(LIMIT, "scraping a running wasmop", async {
        let plane = shared().await?;
        plane
            .install_crds(&[
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/webapp.yaml")
            ])
            .await?;
        let namespace = plane.create_namespace("metrics").await?;
        let (metrics, probes) = (free_address(), free_address());
        let mut host = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
            .args(["run", "--kubeconfig"])
            .arg(plane.kubeconfig_path())
            .arg("--plugin")
            .arg(common::component("webapp"))
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", &probes])
            .env("WASMOP_COMPILE_CACHE", plane.dir().join("compiled"))
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;

        loop {
            if let Ok((200, _)) = get(&probes, "/readyz").await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(get(&probes, "/healthz").await?.0, 200);

        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp"),
            "webapps",
        );
        let webapps: Api<DynamicObject> =
            Api::namespaced_with(plane.client().await?, &namespace, &resource);
        let app: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "example.wasmop.dev/v1alpha1", "kind": "WebApp",
            "metadata": {"name": "scraped"},
            "spec": {"image": "nginx:1.27", "replicas": 1, "port": 8080},
        }))?;
        webapps.create(&PostParams::default(), &app).await?;
        loop {
            let app = webapps.get("scraped").await?;
            if app.data["status"]["observedGeneration"].as_i64() == app.metadata.generation {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        let (status, text) = get(&metrics, "/metrics").await?;
        assert_eq!(status, 200);
        let samples = parse(&text);
        let webapp = [("controller", "webapp")];
        let queue = [("name", "webapp")];
        let positive = |name: &str, labels: &[(&str, &str)]| {
            let v = value(&samples, name, labels);
            assert!(
                v.is_some_and(|v| v > 0.0),
                "{name}{labels:?} = {v:?} in\n{text}"
            );
        };
        positive(
            "controller_runtime_reconcile_total",
            &[("controller", "webapp"), ("result", "success")],
        );
        positive("controller_runtime_reconcile_time_seconds", &webapp);
        positive("controller_runtime_max_concurrent_reconciles", &webapp);
        positive("workqueue_adds_total", &queue);
        positive("workqueue_queue_duration_seconds", &queue);
        positive("workqueue_work_duration_seconds", &queue);
        positive("wasmop_plugin_info", &[("plugin", "webapp")]);
        positive(
            "wasmop_plugin_memory_high_water_bytes",
            &[("plugin", "webapp")],
        );
        positive("wasmop_cache_objects", &[("kind", "WebApp")]);
        positive("wasmop_cache_json_bytes", &[("kind", "Deployment")]);
        for present in [
            "controller_runtime_reconcile_errors_total",
            "controller_runtime_active_workers",
            "workqueue_depth",
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
        ] {
            assert!(
                samples.contains_key(present),
                "{present} missing in\n{text}"
            );
        }

        let pid = host.id().context("running")?;
        std::process::Command::new("kill")
            .arg(pid.to_string())
            .status()?;
        let exit = host.wait().await?;
        assert!(exit.success(), "SIGTERM ended wasmop with {exit}");
        Ok(())
    })
    .await
}
