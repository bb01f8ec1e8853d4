//! `wasmop-bench soak`: two `wasmop` replicas electing a leader run the `webapp` plugin from a
//! plugin directory over 1,000 WebApps under constant churn (replica and image changes, WebApps
//! deleted and new ones created) for half an hour; the module in the directory is swapped between
//! `webapp` 0.1.0 and 0.2.0 every five minutes and the leader is killed (SIGKILL) halfway, then
//! started again as a follower. A deleted WebApp's Deployment and Service are deleted too, as the
//! garbage collector this control plane lacks would, so the caches hold what a real cluster's
//! would. The leader's resident set is sampled every ten seconds; the run
//! prints its median over the first and the last five minutes, and, once the churn stops, how
//! many WebApps have not converged. It fails if the resident set grew by more than 10 % or any
//! WebApp did not converge.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::load;
use crate::process::Operator;
use crate::scenario::Cluster;

/// How the soak runs.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// How long the churn lasts, in minutes.
    #[arg(long, default_value_t = 30)]
    minutes: u64,
    /// WebApps kept in the namespace.
    #[arg(long, default_value_t = 1000)]
    webapps: usize,
    /// Minutes between two swaps of the plugin's module.
    #[arg(long, default_value_t = 5)]
    swap_every: u64,
    /// Changes made per second.
    #[arg(long, default_value_t = 10)]
    changes_per_second: u32,
    /// The `wasmop` binary.
    #[arg(long, default_value = "target/debug/wasmop")]
    wasmop: PathBuf,
}

/// The Lease the replicas elect with.
const LEASE: &str = "soak";
/// How often the leader's resident set is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// The window at each end whose median is compared.
const WINDOW: Duration = Duration::from_secs(300);
/// How long the WebApps may take to converge once the churn stops.
const SETTLE: Duration = Duration::from_secs(300);
/// The growth of the median resident set that fails the soak.
const GROWTH_LIMIT: f64 = 0.10;

/// One replica's process and how to start it again.
struct Replica {
    name: &'static str,
    operator: Operator,
}

/// What the run needs to start replicas.
struct Soak<'a> {
    repo: &'a Path,
    args: &'a SoakArgs,
    kubeconfig: PathBuf,
    namespace: String,
    plugins: PathBuf,
    logs: PathBuf,
}

impl Soak<'_> {
    fn start(&self, name: &'static str) -> anyhow::Result<Replica> {
        let mut command = tokio::process::Command::new(self.repo.join(&self.args.wasmop));
        command
            .env("POD_NAME", name)
            .args(["run", "--kubeconfig"])
            .arg(&self.kubeconfig)
            .arg("--plugin-dir")
            .arg(&self.plugins)
            .args(["--namespaces", &self.namespace, "--leader-elect"])
            .args(["--leader-election-namespace", &self.namespace])
            .args(["--leader-election-id", LEASE])
            .args(["--leader-election-lease-duration", "4s"])
            .args(["--leader-election-renew-deadline", "3s"])
            .args(["--leader-election-retry-period", "500ms"])
            .args([
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "0",
            ]);
        let log = self.logs.join(format!("soak-{name}.log"));
        Ok(Replica {
            name,
            operator: Operator::start(command, &log, &format!("soak-{name}"))?,
        })
    }

    /// Puts `module` in the plugin directory under the name the replicas load.
    fn install(&self, module: &str) -> anyhow::Result<()> {
        let staged = self.plugins.join(".webapp.tmp");
        std::fs::copy(self.repo.join("target/components").join(module), &staged)?;
        std::fs::rename(&staged, self.plugins.join("webapp.wasm"))?;
        Ok(())
    }
}

/// The name of the replica holding the Lease, if any.
async fn leader(leases: &Api<Lease>) -> Option<String> {
    let lease = leases.get_opt(LEASE).await.ok()??;
    let holder = lease.spec?.holder_identity?;
    holder.split('_').next().map(str::to_owned)
}

/// A cheap deterministic sequence, so a soak's changes repeat from run to run.
pub(crate) struct Sequence(pub(crate) u64);

impl Sequence {
    /// The next number below `below`.
    pub(crate) fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % below.max(1)
    }
}

/// The WebApps and the objects they own, deleted as the garbage collector this control plane
/// lacks would delete them, so the cache holds what a real cluster's would.
struct Objects {
    apps: Api<kube::api::DynamicObject>,
    deployments: Api<Deployment>,
    services: Api<Service>,
}

/// Makes one change: mostly a new replica count or image, sometimes a WebApp deleted (with its
/// Deployment and Service) and a new one (named `next`) created in its place; `names` follows.
async fn churn(
    objects: &Objects,
    names: &mut Vec<String>,
    next: &mut usize,
    sequence: &mut Sequence,
) -> anyhow::Result<()> {
    let apps = &objects.apps;
    let index = sequence.next(names.len());
    if sequence.next(20) == 0 {
        let gone = names.swap_remove(index);
        let delete = DeleteParams::default();
        apps.delete(&gone, &delete).await?;
        let _ = objects.deployments.delete(&gone, &delete).await;
        let _ = objects.services.delete(&gone, &delete).await;
        let app = load::webapp(*next);
        *next += 1;
        names.push(
            app["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        apps.create(&PostParams::default(), &serde_json::from_value(app)?)
            .await?;
        return Ok(());
    }
    let image = ["nginx:1.27", "nginx:1.28"][sequence.next(2)];
    let spec = json!({"spec": {"replicas": 1 + sequence.next(3), "image": image}});
    apps.patch(&names[index], &PatchParams::default(), &Patch::Merge(&spec))
        .await?;
    Ok(())
}

/// WebApps whose status has not observed their generation, or that are still being deleted.
async fn unconverged(apps: &Api<kube::api::DynamicObject>) -> anyhow::Result<usize> {
    let list = apps.list(&Default::default()).await?;
    Ok(list
        .items
        .iter()
        .filter(|app| {
            let observed = app.data["status"]["observedGeneration"].as_i64();
            app.metadata.deletion_timestamp.is_some() || observed != app.metadata.generation
        })
        .count())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs the soak and prints its figures; fails when memory grew or WebApps did not converge.
pub async fn run(repo: &Path, logs: &Path, args: &SoakArgs) -> anyhow::Result<()> {
    let cluster = Cluster::start(repo).await?;
    let namespace = cluster.namespace("soak").await?;
    let client = cluster.client();
    let plugins = logs.join("soak-plugins");
    let _ = std::fs::remove_dir_all(&plugins);
    std::fs::create_dir_all(&plugins)?;
    let soak = Soak {
        repo,
        args,
        kubeconfig: cluster.kubeconfig().to_owned(),
        namespace: namespace.clone(),
        plugins,
        logs: logs.to_owned(),
    };
    let modules = ["webapp.wasm", "webapp-v2.wasm"];
    soak.install(modules[0])?;
    let mut replicas = [soak.start("replica-a")?, soak.start("replica-b")?];
    let apps = load::webapps(client, &namespace);
    load::create_all(&apps, 0..args.webapps, load::webapp).await?;
    let mut names: Vec<String> = (0..args.webapps)
        .map(|i| {
            load::webapp(i)["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    load::wait_converged(client, &namespace, args.webapps).await?;
    eprintln!(
        "[soak] {} WebApps converged; churning for {} minutes",
        args.webapps, args.minutes
    );

    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    let objects = Objects {
        apps: apps.clone(),
        deployments: Api::namespaced(client.clone(), &namespace),
        services: Api::namespaced(client.clone(), &namespace),
    };
    let total = Duration::from_secs(args.minutes * 60);
    let swap_every = Duration::from_secs(args.swap_every * 60);
    let tick = Duration::from_secs(1) / args.changes_per_second.max(1);
    let (mut sequence, mut next) = (Sequence(7), args.webapps);
    let (mut samples, mut changes, mut swaps) = (Vec::new(), 0u64, 0usize);
    let (mut failed_over, started) = (None, Instant::now());
    let (mut next_sample, mut next_swap) = (Duration::ZERO, swap_every);
    while started.elapsed() < total {
        let now = started.elapsed();
        if now >= next_sample {
            next_sample += SAMPLE_EVERY;
            if let Some(name) = leader(&leases).await
                && let Some(replica) = replicas.iter_mut().find(|r| r.name == name)
            {
                samples.push((now, replica.operator.sample()?.rss));
            }
        }
        if now >= next_swap {
            next_swap += swap_every;
            swaps += 1;
            soak.install(modules[swaps % 2])?;
            eprintln!(
                "[soak] {:.0} min: swapped to {}",
                now.as_secs_f64() / 60.0,
                modules[swaps % 2]
            );
        }
        if failed_over.is_none() && now >= total / 2 {
            let name = leader(&leases).await.unwrap_or_default();
            if let Some(index) = replicas.iter().position(|r| r.name == name) {
                replicas[index].operator.kill().await?;
                replicas[index] = soak.start(replicas[index].name)?;
                failed_over = Some((now, name));
                eprintln!(
                    "[soak] {:.0} min: killed the leader {}",
                    now.as_secs_f64() / 60.0,
                    replicas[index].name
                );
            }
        }
        match churn(&objects, &mut names, &mut next, &mut sequence).await {
            Ok(()) => changes += 1,
            Err(error) => eprintln!("[soak] a change failed: {error}"),
        }
        tokio::time::sleep(tick).await;
    }

    let settled = Instant::now();
    let mut left = unconverged(&apps).await?;
    while left > 0 && settled.elapsed() < SETTLE {
        tokio::time::sleep(Duration::from_secs(2)).await;
        left = unconverged(&apps).await?;
    }
    let window = |from: Duration, to: Duration| {
        let mut rss: Vec<f64> = samples
            .iter()
            .filter(|(at, _)| *at >= from && *at < to)
            .map(|(_, rss)| *rss)
            .collect();
        median(&mut rss)
    };
    let first = window(Duration::ZERO, WINDOW.min(total));
    let last = window(total.saturating_sub(WINDOW), total);
    let growth = last / first - 1.0;
    let failover = failed_over.map_or("none".to_owned(), |(at, name)| {
        format!("{name} killed at {:.1} min", at.as_secs_f64() / 60.0)
    });
    println!(
        "soak: {} min, {} WebApps, {changes} changes, {swaps} hot swaps, failover: {failover}",
        args.minutes, args.webapps
    );
    println!(
        "leader RSS median: first 5 min {first:.1} MiB, last 5 min {last:.1} MiB ({:+.1} %), {} samples",
        growth * 100.0,
        samples.len()
    );
    println!(
        "unconverged WebApps {:.0} s after the churn stopped: {left}",
        settled.elapsed().as_secs_f64()
    );
    for replica in replicas {
        replica.operator.stop().await?;
    }
    cluster.stop().await?;
    anyhow::ensure!(left == 0, "{left} WebApps did not converge");
    anyhow::ensure!(
        growth <= GROWTH_LIMIT,
        "the leader's resident set grew by {:.1} %",
        growth * 100.0
    );
    Ok(())
}
