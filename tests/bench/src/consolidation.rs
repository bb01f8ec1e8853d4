//! Consolidation: N distinct operators, each the `webapp` behaviour over a CRD of its own API group
//! in a namespace of its own, run as N controller-runtime processes, as N kube-rs processes, or as
//! N plugins in one wasmop host, with 100 WebApps each; for N = 1, 5, 10, 20, 50 and 100, the
//! summed resident memory after the WebApps converged and again once every operator idled past
//! wasmop's `--suspend-idle-after` (30 s, its default: its idle plugins are suspended by then),
//! CPU and the time until every WebApp of every operator converged.
//!
//! wasmop's operators are builds of `plugins/webapp` that differ only in the API group they serve
//! and their name (`WEBAPP_GROUP`, `WEBAPP_PLUGIN`); the native operators read the group from
//! `WEBAPP_GROUP` when they start. The wasmop builds are made without cross-crate optimisation,
//! seconds each instead of a minute (their files are ~15 % larger than `webapp.wasm`), kept under
//! `target/bench/variants` and rebuilt when the plugin or the SDK changes. Every N starts on a
//! control plane of its own, with wasmop's compile cache warm (one unmeasured start compiles the
//! builds first), and each process in a memory cgroup of its own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use futures::future::try_join_all;
use serde::Serialize;

use crate::comparator::{self, Comparator};
use crate::process::{Operator, Sample};
use crate::scenario::Cluster;
use crate::{cgroup, load};

/// How long the operators' memory is left to settle after converging before it is read.
const SETTLE: Duration = Duration::from_secs(3);

/// How long the operators idle after that before their idle memory is read: wasmop's default
/// `--suspend-idle-after` (30 s), the longest its suspender waits between two looks (7.5 s),
/// and a margin.
const IDLE: Duration = Duration::from_secs(40);

/// Options of `wasmop-bench consolidation`.
#[derive(Debug, clap::Args)]
pub struct ConsolidationArgs {
    /// The numbers of operators to run side by side.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,20,50,100")]
    operators: Vec<usize>,
    /// WebApps created for each operator.
    #[arg(long, default_value_t = 100)]
    webapps: usize,
}

/// How N operators are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Host {
    /// One process per operator, of this comparator.
    Processes(Comparator),
    /// N plugins in one wasmop host.
    Wasmop,
}

impl Host {
    fn name(self) -> &'static str {
        match self {
            Host::Processes(comparator) => comparator.name,
            Host::Wasmop => "wasmop + Rust",
        }
    }
}

/// The ways of running N operators, the baseline first.
const HOSTS: [Host; 3] = [
    Host::Processes(comparator::ALL[0]),
    Host::Processes(comparator::ALL[1]),
    Host::Wasmop,
];

/// One run: N operators converging their WebApps.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// How they ran (`controller-runtime`, `kube-rs` or `wasmop + Rust`).
    pub comparator: String,
    /// Operators, each with its own CRD and namespace.
    pub operators: usize,
    /// Processes that ran them.
    pub processes: usize,
    /// WebApps created for each operator.
    pub webapps_each: usize,
    /// Seconds from the first create until every WebApp of every operator converged.
    pub seconds: f64,
    /// CPU seconds of all processes meanwhile (with their reaped children).
    pub cpu_seconds: f64,
    /// Summed resident sets after converging and settling, in MiB; pages the processes share
    /// (their program's text) count once per process.
    pub rss: f64,
    /// Summed proportional set sizes at the same moment, in MiB: shared pages count once, as
    /// they take memory once on a node.
    pub pss: f64,
    /// Summed resident-set high-water marks, in MiB (each process's own; they need not coincide).
    pub peak_rss: f64,
    /// Summed memory of the processes' cgroups at the same moment as `rss` (children and page
    /// cache included), in MiB, where cgroups could be made.
    pub pod: Option<f64>,
    /// Summed proportional set sizes after idling for [`IDLE`] more, in MiB.
    pub idle_pss: f64,
    /// Summed resident sets at the same moment, in MiB.
    pub idle_rss: f64,
    /// Summed cgroup memory at the same moment, in MiB, where cgroups could be made.
    pub idle_pod: Option<f64>,
}

/// The API group of operator `i`.
fn group(i: usize) -> String {
    format!("webapp{i:02}.example.wasmop.dev")
}

/// The name of wasmop's plugin `i`.
fn plugin(i: usize) -> String {
    format!("webapp-{i:02}")
}

/// Runs every N for every host.
pub async fn run(repo: &Path, logs: &Path, args: &ConsolidationArgs) -> anyhow::Result<Vec<Run>> {
    let most = args.operators.iter().copied().max().unwrap_or(0);
    let variants = build_variants(repo, most).await?;
    let crds = write_crds(repo, logs, most)?;
    let compile_cache = repo.join("target/bench/compile-cache");
    let setup = Setup {
        repo,
        logs,
        crds: &crds,
        variants: &variants,
        compile_cache: &compile_cache,
    };
    eprintln!("[consolidation] compiling the {most} plugins into the compile cache (unmeasured)");
    setup.once(Host::Wasmop, most, 0).await?;
    let mut runs = Vec::new();
    for &n in &args.operators {
        for host in HOSTS {
            eprintln!("[consolidation] {n} operators, {}", host.name());
            let run = setup.once(host, n, args.webapps).await?;
            eprintln!(
                "    {} processes: converged in {:.1} s, {:.1} CPU s, PSS {:.0} MiB, RSS {:.0} (peaks {:.0}); idle PSS {:.0} MiB",
                run.processes,
                run.seconds,
                run.cpu_seconds,
                run.pss,
                run.rss,
                run.peak_rss,
                run.idle_pss
            );
            runs.push(run);
        }
    }
    Ok(runs)
}

/// What every run needs: programs, CRDs, plugin builds and wasmop's compile cache.
struct Setup<'a> {
    repo: &'a Path,
    logs: &'a Path,
    crds: &'a [PathBuf],
    variants: &'a [PathBuf],
    compile_cache: &'a Path,
}

impl Setup<'_> {
    /// Runs `n` operators on a control plane of their own until each has converged a probe, then
    /// `webapps` more each; measured from the first create.
    async fn once(&self, host: Host, n: usize, webapps: usize) -> anyhow::Result<Run> {
        let cluster = Cluster::start(self.repo).await?;
        cluster.install_crds(&self.crds[..n]).await?;
        let mut namespaces = Vec::new();
        for i in 1..=n {
            namespaces.push(cluster.namespace(&format!("op{i:02}")).await?);
        }
        let apps: Vec<_> = (1..=n)
            .map(|i| load::webapps_in(cluster.client(), &namespaces[i - 1], &group(i)))
            .collect();
        for (i, api) in apps.iter().enumerate() {
            create(api, i + 1, 0..1).await?;
        }
        let mut operators = self.start(host, &cluster, &namespaces)?;
        self.converged(&cluster, &apps, &namespaces, 1).await?;
        tokio::time::sleep(SETTLE).await;
        let before = sample_all(&mut operators)?;
        let started = Instant::now();
        try_join_all(
            apps.iter()
                .enumerate()
                .map(|(i, api)| create(api, i + 1, 1..webapps + 1)),
        )
        .await?;
        self.converged(&cluster, &apps, &namespaces, webapps + 1)
            .await?;
        let seconds = started.elapsed().as_secs_f64();
        tokio::time::sleep(SETTLE).await;
        let after = sample_all(&mut operators)?;
        tokio::time::sleep(IDLE).await;
        let idle = sample_all(&mut operators)?;
        let processes = operators.len();
        for operator in operators {
            operator.stop().await?;
        }
        cluster.stop().await?;
        let cpu: Duration = after.iter().map(|s| s.cpu).sum::<Duration>()
            - before.iter().map(|s| s.cpu).sum::<Duration>();
        Ok(Run {
            comparator: host.name().to_owned(),
            operators: n,
            processes,
            webapps_each: webapps,
            seconds,
            cpu_seconds: cpu.as_secs_f64(),
            rss: after.iter().map(|s| s.rss).sum(),
            pss: after.iter().map(|s| s.pss).sum(),
            peak_rss: after.iter().map(|s| s.peak).sum(),
            pod: pod(&after),
            idle_pss: idle.iter().map(|s| s.pss).sum(),
            idle_rss: idle.iter().map(|s| s.rss).sum(),
            idle_pod: pod(&idle),
        })
    }

    /// Starts the processes that run the operators of `namespaces` (operator `i` in the `i`-th).
    fn start(
        &self,
        host: Host,
        cluster: &Cluster,
        namespaces: &[String],
    ) -> anyhow::Result<Vec<Operator>> {
        let kubeconfig = cluster.operator_kubeconfig();
        let n = namespaces.len();
        let name = |i: usize| format!("consolidation-{n}-{i:02}");
        match host {
            Host::Wasmop => {
                // One host for every operator watches all namespaces, as one would deploy it: a
                // list of N namespaces costs a watch per namespace and kind, N² of them.
                let mut command = comparator::wasmop(self.repo, &[], &self.variants[..n])?;
                command
                    .env("KUBECONFIG", kubeconfig)
                    .env("WASMOP_COMPILE_CACHE", self.compile_cache);
                evict(&command, self.compile_cache);
                let log = self.logs.join(format!("{}.log", name(0)));
                Ok(vec![Operator::start(command, &log, &name(0))?])
            }
            Host::Processes(comparator) => {
                let key = comparator.key();
                let mut operators = Vec::new();
                for (i, namespace) in namespaces.iter().enumerate() {
                    let mut command = comparator.command(self.repo, kubeconfig, namespace)?;
                    command.env("WEBAPP_GROUP", group(i + 1));
                    if i == 0 {
                        evict(&command, self.compile_cache);
                    }
                    let log = self.logs.join(format!("{key}-{}.log", name(i + 1)));
                    operators.push(Operator::start(command, &log, &name(i + 1))?);
                }
                Ok(operators)
            }
        }
    }

    /// Waits until `count` WebApps of every operator have converged.
    async fn converged(
        &self,
        cluster: &Cluster,
        apps: &[kube::Api<kube::api::DynamicObject>],
        namespaces: &[String],
        count: usize,
    ) -> anyhow::Result<()> {
        try_join_all(apps.iter().zip(namespaces).map(|(api, namespace)| {
            load::wait_converged_in(api, cluster.client(), namespace, count)
        }))
        .await
        .map_err(|e| e.context(format!("see the logs in {}", self.logs.display())))?;
        Ok(())
    }
}

/// Creates WebApps `range` of operator `operator`'s group through `api`.
async fn create(
    api: &kube::Api<kube::api::DynamicObject>,
    operator: usize,
    range: std::ops::Range<usize>,
) -> anyhow::Result<()> {
    let api_version = format!("{}/v1alpha1", group(operator));
    load::create_all(api, range, |i| {
        let mut app = load::webapp(i);
        app["apiVersion"] = api_version.clone().into();
        if i == 0 {
            app["metadata"]["name"] = "probe".into();
        }
        app
    })
    .await
}

/// Drops `command`'s program, plugins and the compile cache from the page cache, so that the
/// run's processes are charged for what they read.
fn evict(command: &tokio::process::Command, compile_cache: &Path) {
    let mut files = comparator::files_of(command);
    files.push(compile_cache.to_owned());
    cgroup::evict(&files);
}

/// The summed cgroup memory of `samples`, if every process had a cgroup.
fn pod(samples: &[Sample]) -> Option<f64> {
    let pods: Option<Vec<f64>> = samples.iter().map(|s| s.pod.map(|(now, _)| now)).collect();
    pods.map(|p| p.iter().sum())
}

fn sample_all(operators: &mut [Operator]) -> anyhow::Result<Vec<Sample>> {
    operators.iter_mut().map(Operator::sample).collect()
}

/// `deploy/crds/webapp.yaml` for the groups of operators 1 to `n`, written under `logs`.
fn write_crds(repo: &Path, logs: &Path, n: usize) -> anyhow::Result<Vec<PathBuf>> {
    let crd = std::fs::read_to_string(repo.join("deploy/crds/webapp.yaml"))?;
    anyhow::ensure!(
        crd.contains(&format!("group: {}", load::GROUP)),
        "deploy/crds/webapp.yaml no longer serves {}",
        load::GROUP
    );
    let dir = logs.join("consolidation-crds");
    std::fs::create_dir_all(&dir)?;
    (1..=n)
        .map(|i| {
            let path = dir.join(format!("{}.yaml", group(i)));
            std::fs::write(&path, crd.replace(load::GROUP, &group(i)))?;
            Ok(path)
        })
        .collect()
}

/// The plugin builds for operators 1 to `n`, built where missing or older than the sources.
async fn build_variants(repo: &Path, n: usize) -> anyhow::Result<Vec<PathBuf>> {
    let dir = repo.join("target/bench/variants");
    std::fs::create_dir_all(&dir)?;
    let sources = newest(&[
        repo.join("plugins/webapp/rust"),
        repo.join("plugins/Cargo.lock"),
        repo.join("guest-sdk/rust/src"),
        repo.join("guest-sdk/rust/Cargo.toml"),
        repo.join("wit"),
    ]);
    let mut built = Vec::new();
    for i in 1..=n {
        let path = dir.join(format!("{}.wasm", plugin(i)));
        let fresh = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .is_ok_and(|made| made > sources);
        if !fresh {
            eprintln!("[consolidation] building plugin {} ({i}/{n})", plugin(i));
            build_variant(repo, i, &path).await?;
        }
        built.push(path);
    }
    Ok(built)
}

async fn build_variant(repo: &Path, i: usize, path: &Path) -> anyhow::Result<()> {
    let status = tokio::process::Command::new(repo.join("target/release/wasmop"))
        .arg("build")
        .arg("-o")
        .arg(path)
        .arg(repo.join("plugins/webapp/rust"))
        .env("WEBAPP_GROUP", group(i))
        .env("WEBAPP_PLUGIN", plugin(i))
        .env(
            "WASMOP_GUEST_TARGET_DIR",
            repo.join("target/bench/variants-build"),
        )
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        .status()
        .await?;
    anyhow::ensure!(status.success(), "building plugin {} failed", plugin(i));
    Ok(())
}

/// The latest modification time of the files under `paths`.
fn newest(paths: &[PathBuf]) -> SystemTime {
    let mut latest = SystemTime::UNIX_EPOCH;
    for path in paths {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if meta.is_dir() {
            let inner: Vec<PathBuf> = std::fs::read_dir(path)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .collect();
            latest = latest.max(newest(&inner));
        } else if let Ok(modified) = meta.modified() {
            latest = latest.max(modified);
        }
    }
    latest
}

/// The table: per N, each way's summed memory after converging and idle, CPU and time, with
/// wasmop's idle PSS and pod memory against the others', and wasmop's marginal idle cost.
pub fn markdown(runs: &[Run]) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "| operators | run as | processes | converged in | CPU | PSS after converging | idle PSS | wasmop's idle PSS against it | RSS, peak | pod memory after converging | idle pod memory | wasmop's idle pod memory against it |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mib = |v: f64| format!("{v:.0} MiB");
    let optional = |v: Option<f64>| v.map_or("–".to_owned(), mib);
    for run in runs {
        let wasmop = runs
            .iter()
            .find(|r| r.operators == run.operators && r.comparator == Host::Wasmop.name())
            .filter(|w| w.comparator != run.comparator);
        let ratio = |ours: Option<f64>, theirs: Option<f64>| match (ours, theirs) {
            (Some(ours), Some(theirs)) if theirs > 0.0 => format!("{:.2}x", ours / theirs),
            _ => "–".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} s | {:.1} s | {} | {} | {} | {}, {} | {} | {} | {} |",
            run.operators,
            run.comparator,
            run.processes,
            run.seconds,
            run.cpu_seconds,
            mib(run.pss),
            mib(run.idle_pss),
            ratio(wasmop.map(|w| w.idle_pss), Some(run.idle_pss)),
            mib(run.rss),
            mib(run.peak_rss),
            optional(run.pod),
            optional(run.idle_pod),
            ratio(wasmop.and_then(|w| w.idle_pod), run.idle_pod),
        );
    }
    if let Some(marginal) = marginal(runs) {
        let _ = writeln!(
            out,
            "\nwasmop's idle PSS grows by {marginal:.2} MiB per plugin (from its fewest to its most operators)."
        );
    }
    let _ = write!(
        out,
        "\nOne run each; every operator in a namespace of its own with a CRD of its own; memory read \
         3 s after the last WebApp converged, and idle {} s later (wasmop suspends a plugin idle \
         for its default --suspend-idle-after, 30 s); PSS counts the pages N processes share (their \
         program) once, RSS once per process; pod memory sums each process's cgroup (page cache \
         included, a shared page charged to the first process that read it); wasmop's compile \
         cache warm, compiling in a worker.\n",
        IDLE.as_secs()
    );
    out
}

/// What one more plugin adds to wasmop's idle PSS, in MiB: the slope between its runs with the
/// fewest and the most operators.
fn marginal(runs: &[Run]) -> Option<f64> {
    let ours: Vec<&Run> = runs
        .iter()
        .filter(|r| r.comparator == Host::Wasmop.name())
        .collect();
    let fewest = ours.iter().min_by_key(|r| r.operators)?;
    let most = ours.iter().max_by_key(|r| r.operators)?;
    (most.operators > fewest.operators)
        .then(|| (most.idle_pss - fewest.idle_pss) / (most.operators - fewest.operators) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(comparator: &str, operators: usize, pss: f64) -> Run {
        Run {
            comparator: comparator.to_owned(),
            operators,
            processes: if comparator == "wasmop + Rust" {
                1
            } else {
                operators
            },
            webapps_each: 100,
            seconds: 10.0,
            cpu_seconds: 2.0,
            rss: pss * 1.2,
            pss,
            peak_rss: pss * 1.5,
            pod: None,
            idle_pss: pss / 2.0,
            idle_rss: pss,
            idle_pod: Some(pss),
        }
    }

    #[test]
    fn the_table_gives_wasmops_pss_against_each_way_at_the_same_n() {
        let runs = [
            run("kube-rs", 10, 200.0),
            run("wasmop + Rust", 10, 50.0),
            run("kube-rs", 1, 20.0),
            run("wasmop + Rust", 1, 30.0),
        ];
        let table = markdown(&runs);
        let rows: Vec<&str> = table.lines().skip(2).take(4).collect();
        assert!(rows[0].starts_with("| 10 | kube-rs | 10 |"), "{table}");
        assert!(rows[0].contains("| 200 MiB | 100 MiB | 0.25x |"), "{table}");
        assert!(rows[0].ends_with("| 200 MiB | 0.25x |"), "{table}");
        assert!(rows[1].contains("| 50 MiB | 25 MiB | – |"), "{table}");
        assert!(rows[2].contains("| 20 MiB | 10 MiB | 1.50x |"), "{table}");
        assert!(
            table.contains("idle PSS grows by 1.11 MiB per plugin"),
            "(25 - 15) / 9: {table}"
        );
    }

    #[test]
    fn operators_get_distinct_groups_and_plugin_names() {
        assert_eq!(group(7), "webapp07.example.wasmop.dev");
        assert_eq!(plugin(12), "webapp-12");
        assert_ne!(group(1), load::GROUP);
    }

    #[test]
    fn the_crds_serve_each_group_and_nothing_else() -> anyhow::Result<()> {
        let repo = crate::repo();
        let logs = std::env::temp_dir().join(format!("wasmop-bench-crds-{}", std::process::id()));
        let crds = write_crds(&repo, &logs, 2)?;
        let second = std::fs::read_to_string(&crds[1])?;
        assert!(second.contains("name: webapps.webapp02.example.wasmop.dev"));
        assert!(second.contains("group: webapp02.example.wasmop.dev"));
        assert!(!second.contains("group: example.wasmop.dev"));
        std::fs::remove_dir_all(&logs)?;
        Ok(())
    }
}
