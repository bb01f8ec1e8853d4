//! The two measurements taken of every operator, each in its own process started for it:
//! converging N WebApps created at once (on a control plane of the run's own), and starting
//! against a namespace whose cache it must fill with many ConfigMaps.

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

/// A control plane of its own with the WebApp CRD installed, and its admin client.
pub struct Cluster {
    plane: ControlPlane,
    client: kube::Client,
}

impl Cluster {
    /// Starts a control plane and installs the CRD of the checkout at `repo`.
    pub async fn start(repo: &Path) -> anyhow::Result<Cluster> {
        let plane = ControlPlane::start().await?;
        plane
            .install_crds(&[repo.join("deploy/crds/webapp.yaml")])
            .await?;
        let client = plane.client().await?;
        Ok(Cluster { plane, client })
    }

    /// Stops the control plane and removes its files.
    pub async fn stop(self) -> anyhow::Result<()> {
        tokio::task::spawn_blocking(move || drop(self.plane)).await?;
        Ok(())
    }

    async fn create_probe(&self, namespace: &str) -> anyhow::Result<()> {
        let apps = load::webapps(&self.client, namespace);
        let mut probe = load::webapp(0);
        probe["metadata"]["name"] = "probe".into();
        apps.create(&Default::default(), &serde_json::from_value(probe)?)
            .await?;
        Ok(())
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

    /// Its admin client.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// Its admin kubeconfig.
    pub fn kubeconfig(&self) -> &Path {
        self.plane.kubeconfig_path()
    }

    /// A new namespace named after `prefix`.
    pub async fn namespace(&self, prefix: &str) -> anyhow::Result<String> {
        Ok(self.plane.create_namespace(prefix).await?)
    }
}

/// Where the operators come from and where their logs go.
pub struct Bench<'a> {
    /// The checkout, for the operators' programs and the CRD.
    pub repo: &'a Path,
    /// Where operator logs are written.
    pub logs: &'a Path,
}

impl Bench<'_> {
    /// Starts `comparator` watching `namespace` of `cluster` and waits until the WebApp `probe`
    /// (created before) has converged; returns it and how long that took.
    async fn start(
        &self,
        cluster: &Cluster,
        comparator: Comparator,
        namespace: &str,
    ) -> anyhow::Result<(Operator, Duration)> {
        let kubeconfig = cluster.plane.kubeconfig_path();
        let command = comparator.command(self.repo, kubeconfig, namespace)?;
        let log = self
            .logs
            .join(format!("{}-{namespace}.log", comparator.key()));
        let started = Instant::now();
        let operator = Operator::start(command, &log)?;
        load::wait_converged(&cluster.client, namespace, 1)
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

    /// Converges `count` WebApps created at once, on a control plane started for this run alone
    /// so that every run meets the same empty apiserver.
    pub async fn converge(&self, comparator: Comparator, count: usize) -> anyhow::Result<Converge> {
        let cluster = Cluster::start(self.repo).await?;
        let namespace = cluster
            .namespace(&format!("{}-{count}", comparator.key()))
            .await?;
        cluster.create_probe(&namespace).await?;
        let (mut operator, _) = self.start(&cluster, comparator, &namespace).await?;
        tokio::time::sleep(SETTLE).await;
        let idle = operator.sample()?;
        let started = Instant::now();
        load::create_all(&load::webapps(&cluster.client, &namespace), count, |i| {
            load::webapp(i + 1)
        })
        .await?;
        load::wait_converged(&cluster.client, &namespace, count + 1).await?;
        let seconds = started.elapsed().as_secs_f64();
        let end = operator.sample()?;
        operator.stop().await?;
        cluster.stop().await?;
        Ok(Converge {
            comparator: comparator.name.to_owned(),
            webapps: count,
            seconds,
            cpu_seconds: (end.cpu - idle.cpu).as_secs_f64(),
            idle_rss: idle.rss,
            peak_rss: end.peak,
        })
    }

    /// Starts `comparator` against the pre-filled `namespace` of `cluster` with one WebApp
    /// waiting.
    pub async fn startup(
        &self,
        cluster: &Cluster,
        comparator: Comparator,
        namespace: &str,
    ) -> anyhow::Result<Startup> {
        cluster.create_probe(namespace).await?;
        let (mut operator, ready) = self.start(cluster, comparator, namespace).await?;
        tokio::time::sleep(SETTLE).await;
        let settled = operator.sample()?;
        operator.stop().await?;
        load::clear(&cluster.client, namespace).await?;
        Ok(Startup {
            comparator: comparator.name.to_owned(),
            ready_seconds: ready.as_secs_f64(),
            rss: settled.rss,
        })
    }
}
