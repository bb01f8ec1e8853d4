//! The `wasmop` binary's HTTP endpoints while it runs the webapp plugin on the real control
//! plane: probes answer, and `/metrics` parses as Prometheus text and carries controller-runtime's
//! names with the values the workload produced. A plugin unloaded before anyone scraped keeps
//! its counts, its state gauges leave with it, and scraping an idle host changes nothing.

use crate::common;

use common::scrape::{free_address, get, parse, value, without_process};

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(180);

#[tokio::test]
async fn metrics_and_probes_of_a_running_host() -> anyhow::Result<()> {
    within(LIMIT, "scraping a running wasmop", async {
        let plane = &shared_by(module_path!()).await?;
        common::install_webapp_crd(plane).await?;
        let namespace = plane.create_namespace("metrics").await?;
        let (metrics, probes) = (free_address(), free_address());
        let host = common::host(plane)
            .arg("--plugin")
            .arg(common::component("webapp"))
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", &probes])
            .spawn()?;

        common::scrape::wait_ready(&probes).await;
        assert_eq!(get(&probes, "/healthz").await?.0, 200);

        let webapps = common::webapps(plane.client().await?, &namespace);
        let app: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "example.wasmop.dev/v1alpha1", "kind": "WebApp",
            "metadata": {"name": "scraped"},
            "spec": {"image": "nginx:1.27", "replicas": 1, "port": 8080},
        }))?;
        webapps.create(&PostParams::default(), &app).await?;
        common::converged(&webapps, "scraped").await?;

        // The status is written before the reconcile returns and is counted; the queue records
        // the work's duration when the reconcile hands the key back, just after.
        let success = [("controller", "webapp"), ("result", "success")];
        let text = loop {
            let (status, text) = get(&metrics, "/metrics").await?;
            assert_eq!(status, 200);
            let samples = parse(&text);
            let counted = value(&samples, "controller_runtime_reconcile_total", &success);
            let worked = value(
                &samples,
                "workqueue_work_duration_seconds",
                &[("name", "webapp")],
            );
            if counted.is_some_and(|n| n > 0.0) && worked.is_some_and(|s| s > 0.0) {
                break text;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
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

        common::terminate(host).await
    })
    .await
}

#[tokio::test]
async fn an_unloaded_plugin_keeps_its_counts_and_scrapes_change_nothing() -> anyhow::Result<()> {
    within(LIMIT, "counts of an unloaded plugin", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("unloaded").await?;
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("good.wasm");
        std::fs::copy(common::component("guest-good"), &file)?;
        let metrics = free_address();
        let host = common::host(plane)
            .arg("--plugin-dir")
            .arg(dir.path())
            .args(["--namespaces", &namespace])
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", "0"])
            .spawn()?;
        common::scrape::wait_ready(&metrics).await;
        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, &namespace);
        common::seen_by_good(&configmaps, "counted").await?;

        std::fs::remove_file(&file)?;
        let configmap_informer = |text: &str| text.contains(r#"kind="ConfigMap""#);
        let text = loop {
            let plugins = get(&metrics, "/plugins").await?.1;
            let text = get(&metrics, "/metrics").await?.1;
            if plugins == "[]" && !configmap_informer(&text) {
                break text;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let samples = parse(&text);
        let at_least_one = |name: &str, labels: &[(&str, &str)]| {
            let v = value(&samples, name, labels);
            assert!(
                v.is_some_and(|v| v >= 1.0),
                "{name}{labels:?} = {v:?} in\n{text}"
            );
        };
        at_least_one(
            "wasmop_plugin_instantiations_total",
            &[("plugin", "guest-good")],
        );
        at_least_one(
            "controller_runtime_reconcile_total",
            &[("controller", "guest-good"), ("result", "success")],
        );
        at_least_one("workqueue_adds_total", &[("name", "guest-good")]);
        assert!(
            !text.contains("workqueue_depth{"),
            "the queue's gauges outlived it:\n{text}"
        );
        assert_eq!(
            without_process(&get(&metrics, "/metrics").await?.1),
            without_process(&text),
            "a scrape changed the metrics"
        );

        common::terminate(host).await
    })
    .await
}
