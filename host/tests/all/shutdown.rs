//! Stopping the `wasmop` binary with SIGTERM on the real control plane: a reconcile in flight
//! finishes (its write lands) and the process exits cleanly; a reconcile longer than the grace
//! period is abandoned, and the process says so and exits with an error.

use crate::common;

use common::scrape::{free_address, get, parse, value};

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio::process::Child;
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(180);
const FINISHED: &str = "guest-slow.wasmop.dev/finished";

/// A host running guest-slow on `namespace` only, once ready.
async fn start(
    plane: &ControlPlane,
    namespace: &str,
    grace: &str,
) -> anyhow::Result<(Child, String)> {
    let metrics = free_address();
    let host = common::host(plane)
        .arg("--plugin")
        .arg(common::component("guest-slow"))
        .args([
            "--namespaces",
            namespace,
            "--graceful-shutdown-timeout",
            grace,
        ])
        .args([
            "--metrics-bind-address",
            &metrics,
            "--health-probe-bind-address",
            "0",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    while !matches!(get(&metrics, "/metrics").await, Ok((200, _))) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok((host, metrics))
}

/// Creates a ConfigMap whose reconcile takes `sleep`, and waits until that reconcile is running.
async fn reconcile_in_flight(
    configmaps: &Api<ConfigMap>,
    metrics: &str,
    sleep: Duration,
) -> anyhow::Result<()> {
    let configmap = serde_json::from_value(json!({
        "metadata": {"name": "long"},
        "data": {"sleep-ms": sleep.as_millis().to_string()},
    }))?;
    configmaps
        .create(&PostParams::default(), &configmap)
        .await?;
    let busy = [("controller", "guest-slow")];
    loop {
        let (_, text) = get(metrics, "/metrics").await?;
        if value(&parse(&text), "controller_runtime_active_workers", &busy) == Some(1.0) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn terminate(host: &Child) -> anyhow::Result<()> {
    let pid = host
        .id()
        .ok_or_else(|| anyhow::anyhow!("the host has exited"))?;
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    anyhow::ensure!(status.success(), "kill -TERM {pid} failed");
    Ok(())
}

async fn finished(configmaps: &Api<ConfigMap>) -> anyhow::Result<bool> {
    let configmap = configmaps.get("long").await?;
    Ok(configmap
        .metadata
        .annotations
        .is_some_and(|a| a.contains_key(FINISHED)))
}

#[tokio::test]
async fn sigterm_lets_the_reconcile_in_flight_finish() -> anyhow::Result<()> {
    within(LIMIT, "a graceful stop", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("graceful").await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, &namespace);
        let (host, metrics) = start(plane, &namespace, "20s").await?;
        reconcile_in_flight(&configmaps, &metrics, Duration::from_secs(3)).await?;

        let signalled = Instant::now();
        terminate(&host)?;
        let output = host.wait_with_output().await?;
        println!(
            "SIGTERM to exit with a 3 s reconcile in flight: {:?}",
            signalled.elapsed()
        );
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "the host exited with {}:\n{log}",
            output.status
        );
        assert!(
            finished(&configmaps).await?,
            "the reconcile in flight did not finish its write"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_reconcile_longer_than_the_grace_period_is_abandoned() -> anyhow::Result<()> {
    within(LIMIT, "a stop past the grace period", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("impatient").await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, &namespace);
        let (host, metrics) = start(plane, &namespace, "500ms").await?;
        let reconcile = Duration::from_secs(20);
        reconcile_in_flight(&configmaps, &metrics, reconcile).await?;

        let signalled = Instant::now();
        terminate(&host)?;
        let output = host.wait_with_output().await?;
        let took = signalled.elapsed();
        println!(
            "SIGTERM to exit with a {reconcile:?} reconcile and a 500 ms grace period: {took:?}"
        );
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success(),
            "abandoning work must not look like a clean exit"
        );
        assert!(
            log.contains("after the 500ms grace period were abandoned"),
            "{log}"
        );
        // A host that waited for the reconcile could exit only after its write; once the
        // process is gone, nothing can write any more.
        assert!(
            !finished(&configmaps).await?,
            "the host waited for the reconcile to write before exiting"
        );
        assert!(
            took < reconcile / 2,
            "the host took {took:?} to exit instead of abandoning the {reconcile:?} reconcile"
        );
        Ok(())
    })
    .await
}
