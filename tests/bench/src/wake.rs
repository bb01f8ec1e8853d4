//! Waking from idle: one wasmop host runs the Rust `webapp` plugin with `--suspend-idle-after 2s`,
//! and WebApps are created one at a time, in turn while the plugin is warm (its last reconcile a
//! moment before) and once the host reports it suspended (`wasmop_plugin_suspended`). Each is
//! timed from its create until a watch sees its status observe it: the difference of the two
//! medians is what a wake adds to a reconcile after an event. The host's own
//! `wasmop_plugin_wake_seconds_total` says what mapping and linking the code took of it.
//!
//! The short idle period only makes the run short; what a wake costs does not depend on it.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use kube::runtime::watcher;
use serde::Serialize;

use crate::admission::quantile;
use crate::process::Operator;
use crate::replicas::{free_address, scrape};
use crate::scenario::Cluster;
use crate::{converged, load};

/// The idle period the host runs with here.
const SUSPEND_AFTER: &str = "2s";

/// How long a wait for one WebApp, or for the suspension, may take.
const LIMIT: Duration = Duration::from_secs(30);

/// The pause after a WebApp converged, for the reconciles its Deployment and Service cause to
/// end, before the next create: well inside the idle period.
const QUIET: Duration = Duration::from_millis(300);

/// The measured latencies, in milliseconds from a create until its status was seen.
#[derive(Debug, Default, Serialize)]
pub struct Wake {
    /// WebApps created while the plugin was warm.
    pub warm_ms: Vec<f64>,
    /// WebApps created while it was suspended.
    pub woken_ms: Vec<f64>,
    /// Wakes the host counted.
    pub wakes: f64,
    /// The host's mean time to map and link the plugin's code, in milliseconds.
    pub wake_ms: f64,
}

/// Runs `rounds` warm and `rounds` suspended creates.
pub async fn run(repo: &Path, logs: &Path, rounds: usize) -> anyhow::Result<Wake> {
    let cluster = Cluster::start(repo).await?;
    cluster
        .install_crds(&[repo.join("deploy/crds/webapp.yaml")])
        .await?;
    let namespace = cluster.namespace("wake").await?;
    let metrics = free_address()?;
    let mut command = tokio::process::Command::new(repo.join("target/release/wasmop"));
    command
        .args(["run", "--namespaces", &namespace, "--plugin"])
        .arg(repo.join("target/components/webapp.wasm"))
        .args(["--metrics-bind-address", &metrics])
        .args(["--health-probe-bind-address", "0"])
        .args(["--suspend-idle-after", SUSPEND_AFTER])
        .env("KUBECONFIG", cluster.operator_kubeconfig())
        .env(
            "WASMOP_COMPILE_CACHE",
            repo.join("target/bench/compile-cache"),
        );
    let operator = Operator::start(command, &logs.join("wake.log"), "wake")?;
    let apps = load::webapps(cluster.client(), &namespace);
    let mut wake = Wake::default();
    timed_create(&apps, "probe").await?;
    for round in 0..rounds {
        tokio::time::sleep(QUIET).await;
        wake.warm_ms
            .push(timed_create(&apps, &format!("warm-{round}")).await?);
        suspended(&metrics).await?;
        wake.woken_ms
            .push(timed_create(&apps, &format!("woken-{round}")).await?);
        eprintln!(
            "    round {round}: warm {:.1} ms, woken {:.1} ms",
            wake.warm_ms[round], wake.woken_ms[round]
        );
    }
    let plugin = ["plugin=\"webapp\""];
    wake.wakes = scrape(&metrics, "wasmop_plugin_wakes_total", &plugin)
        .await
        .unwrap_or(0.0);
    let seconds = scrape(&metrics, "wasmop_plugin_wake_seconds_total", &plugin).await;
    wake.wake_ms = seconds.unwrap_or(0.0) * 1000.0 / wake.wakes.max(1.0);
    operator.stop().await?;
    cluster.stop().await?;
    anyhow::ensure!(
        wake.wakes >= rounds as f64,
        "the host woke the plugin {} times for {rounds} creates while suspended",
        wake.wakes
    );
    Ok(wake)
}

/// Creates WebApp `name` and waits until a watch sees its status observe it; the milliseconds
/// from the create.
async fn timed_create(apps: &Api<DynamicObject>, name: &str) -> anyhow::Result<f64> {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher(apps.clone(), config);
    let mut events = std::pin::pin!(events);
    while !matches!(events.try_next().await?, Some(watcher::Event::InitDone)) {}
    let mut app = load::webapp(0);
    app["metadata"]["name"] = name.into();
    let started = Instant::now();
    apps.create(&PostParams::default(), &serde_json::from_value(app)?)
        .await?;
    let seen = async {
        while let Some(event) = events.try_next().await? {
            if let watcher::Event::Apply(app) = event
                && converged::observed(&app)
            {
                return anyhow::Ok(started.elapsed());
            }
        }
        anyhow::bail!("the watch of {name} ended")
    };
    let took = tokio::time::timeout(LIMIT, seen).await??;
    Ok(took.as_secs_f64() * 1000.0)
}

/// Waits until the host reports the plugin suspended.
async fn suspended(metrics: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    while scrape(metrics, "wasmop_plugin_suspended", &["plugin=\"webapp\""]).await != Some(1.0) {
        anyhow::ensure!(started.elapsed() < LIMIT, "the plugin was not suspended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The table: warm and woken latencies side by side, their difference and the host's wake time.
pub fn markdown(wake: &Wake) -> String {
    let row = |name: &str, values: &[f64]| {
        format!(
            "| {name} | {} | {:.1} ms | {:.1} ms | {:.1} ms |\n",
            values.len(),
            quantile(values, 0.5),
            quantile(values, 0.9),
            values.iter().copied().fold(0.0, f64::max),
        )
    };
    let added = quantile(&wake.woken_ms, 0.5) - quantile(&wake.warm_ms, 0.5);
    format!(
        "| plugin | WebApps | median, create to status | p90 | max |\n|---|---|---|---|---|\n{}{}\n\
         A wake adds {added:.1} ms to the median (woken minus warm, one run); the host's own mean \
         wake (mapping and linking the code) took {:.1} ms over {} wakes. The Rust `webapp` \
         plugin in one wasmop host with `--suspend-idle-after {SUSPEND_AFTER}`; WebApps created \
         one at a time, in turn {} ms after the last one converged and once the host reported the \
         plugin suspended; timed from the create until a watch saw the status.\n",
        row("warm", &wake.warm_ms),
        row("woken from suspension", &wake.woken_ms),
        wake.wake_ms,
        wake.wakes,
        QUIET.as_millis(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_both_medians_and_their_difference() {
        let wake = Wake {
            warm_ms: vec![10.0, 12.0, 11.0],
            woken_ms: vec![15.0, 14.0, 30.0],
            wakes: 3.0,
            wake_ms: 2.5,
        };
        let table = markdown(&wake);
        assert!(
            table.contains("| warm | 3 | 11.0 ms | 12.0 ms | 12.0 ms |"),
            "{table}"
        );
        assert!(
            table.contains("| woken from suspension | 3 | 15.0 ms | 30.0 ms | 30.0 ms |"),
            "{table}"
        );
        assert!(table.contains("adds 4.0 ms to the median"), "{table}");
        assert!(table.contains("took 2.5 ms over 3 wakes"), "{table}");
    }
}
