//! The two measurements taken of every operator, each in its own process started for it:
//! converging N WebApps created at once, and starting against a namespace whose cache it must
//! fill with many ConfigMaps.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde::Serialize;
use wasmop_envtest::ControlPlane;

use crate::comparator::Comparator;
use crate::load;
use crate::process::Operator;

/// How long an operator's memory is left to settle before its idle size is read.
const SETTLE: Duration = Duration::from_secs(3);

/// One convergence run.
#[derive(Debug, Clone, Serialize)]
pub struct Converge {
    /// The operator.
    pub comparator: String,
    /// WebApps created at once.
    pub webapps: usize,
    /// Seconds from the first create until every WebApp converged.
    pub seconds: f64,
    /// CPU seconds the operator spent meanwhile.
    pub cpu_seconds: f64,
    /// Its resident set before the WebApps came, in MiB.
    pub idle_rss: f64,
    /// Its resident set's high-water mark at the end, in MiB.
    pub peak_rss: f64,
}

/// One start against a pre-filled namespace.
#[derive(Debug, Clone, Serialize)]
pub struct Startup {
    /// The operator.
    pub comparator: String,
    /// Seconds from the process start until a WebApp waiting for it converged.
    pub ready_seconds: f64,
    /// Resident set after settling, in MiB.
    pub rss: f64,
}

/// What every scenario needs: the cluster, where the operators' logs go, and the checkout.
pub struct Bench<'a> {
    /// The control plane.
    pub plane: &'a ControlPlane,
    /// The admin client.
    pub client: kube::Client,
    /// The checkout, for the operators' programs.
    pub repo: &'a Path,
    /// Where operator logs are written.
    pub logs: &'a Path,
}

impl Bench<'_> {
    /// Starts `comparator` watching `namespace` and waits until the WebApp `probe` (created
    /// before) has converged; returns it and how long that took.
    async fn start(
        &self,
        comparator: Comparator,
        namespace: &str,
    ) -> anyhow::Result<(Operator, Duration)> {
        let command = comparator.command(self.repo, self.plane.kubeconfig_path(), namespace)?;
        let log = self
            .logs
            .join(format!("{}-{namespace}.log", comparator.key()));
        let started = Instant::now();
        let operator = Operator::start(command, &log)?;
        load::wait_converged(&self.client, namespace, 1)
            .await
            .map_err(|e| {
                e.context(format!(
                    "{} did not become ready (log: {})",
                    comparator.name,
                    log.display()
                ))
            })?;
        Ok((operator, started.elapsed()))
    }

    async fn create_probe(&self, namespace: &str) -> anyhow::Result<()> {
        let apps = load::webapps(&self.client, namespace);
        let mut probe = load::webapp(0);
        probe["metadata"]["name"] = "probe".into();
        apps.create(&Default::default(), &serde_json::from_value(probe)?)
            .await?;
        Ok(())
    }

    /// Converges `count` WebApps created at once in a fresh namespace.
    pub async fn converge(&self, comparator: Comparator, count: usize) -> anyhow::Result<Converge> {
        let namespace = self
            .plane
            .create_namespace(&format!("{}-{count}", comparator.key()))
            .await?;
        self.create_probe(&namespace).await?;
        let (mut operator, _) = self.start(comparator, &namespace).await?;
        tokio::time::sleep(SETTLE).await;
        let idle = operator.sample()?;
        let started = Instant::now();
        load::create_all(&load::webapps(&self.client, &namespace), count, |i| {
            load::webapp(i + 1)
        })
        .await?;
        load::wait_converged(&self.client, &namespace, count + 1).await?;
        let seconds = started.elapsed().as_secs_f64();
        let end = operator.sample()?;
        operator.stop().await?;
        load::clear(&self.client, &namespace).await?;
        Ok(Converge {
            comparator: comparator.name.to_owned(),
            webapps: count,
            seconds,
            cpu_seconds: (end.cpu - idle.cpu).as_secs_f64(),
            idle_rss: idle.rss,
            peak_rss: end.peak,
        })
    }

    /// Fills a namespace with `count` ConfigMaps the operators will cache; returns its name.
    pub async fn prefill(&self, count: usize) -> anyhow::Result<String> {
        let namespace = self.plane.create_namespace("prefilled").await?;
        let started = Instant::now();
        load::create_all(
            &Api::<ConfigMap>::namespaced(self.client.clone(), &namespace),
            count,
            load::configmap,
        )
        .await?;
        eprintln!(
            "  created {count} ConfigMaps in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(namespace)
    }

    /// Starts `comparator` against the pre-filled `namespace` with one WebApp waiting.
    pub async fn startup(
        &self,
        comparator: Comparator,
        namespace: &str,
    ) -> anyhow::Result<Startup> {
        self.create_probe(namespace).await?;
        let (mut operator, ready) = self.start(comparator, namespace).await?;
        tokio::time::sleep(SETTLE).await;
        let settled = operator.sample()?;
        operator.stop().await?;
        load::clear(&self.client, namespace).await?;
        Ok(Startup {
            comparator: comparator.name.to_owned(),
            ready_seconds: ready.as_secs_f64(),
            rss: settled.rss,
        })
    }
}
