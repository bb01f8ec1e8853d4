//! `wasmop-bench`: wasmop beside the operators users would pick instead — controller-runtime,
//! kube-runtime and kopf — each implementing the same `webapp` behaviour and run in turn as its
//! own process. For every size, N WebApps are created at once on a control plane started for that
//! run alone, and the time until all converge, the operator's CPU seconds, its peak and idle RSS
//! and the apiserver requests it made (from the audit log) are taken; each operator also starts
//! against namespaces of 1k to 50k ConfigMaps to cache, with wasmop's compile cache warm and
//! empty. Runs alternate the operators and repeat so the machine's noise shows (the largest size,
//! two minutes or more per operator on 2 cores, runs once and for wasmop + Rust, kube-rs and
//! controller-runtime only unless asked; kopf, far from the others, runs once); the report gives medians,
//! ranges and ratios to controller-runtime, printed and written to
//! `tests/bench/results/latest.{md,json}`. `soak` runs wasmop alone for half an hour of churn
//! instead ([`soak`]); `consolidation` runs N operators side by side ([`consolidation`]); `wake`
//! times a reconcile that wakes a suspended plugin ([`wake`]).

mod admission;
mod cgroup;
mod comparator;
mod consolidation;
mod converged;
mod load;
mod process;
mod profile;
mod replicas;
mod report;
mod scenario;
mod shards;
mod soak;
mod wake;

use std::path::{Path, PathBuf};

use clap::Parser;
use comparator::Comparator;
use report::Results;
use scenario::{Bench, Cluster, CompileCache, Converge, Startup};

/// Compares wasmop with controller-runtime and kube-rs on a real control plane.
#[derive(Debug, Parser)]
struct Args {
    /// WebApps created at once, one measurement per size.
    #[arg(
        long,
        env = "WASMOP_BENCH_SIZES",
        value_delimiter = ',',
        default_value = "1000,5000"
    )]
    sizes: Vec<usize>,
    /// Runs of every measurement, alternating the operators.
    #[arg(long, env = "WASMOP_BENCH_REPEATS", default_value_t = 3)]
    repeats: usize,
    /// Runs of the largest size: a minute or more per operator on 2 cores, so three instead of one
    /// add about 11 minutes to `make bench` there.
    #[arg(long, env = "WASMOP_BENCH_REPEATS_AT_LARGEST", default_value_t = 1)]
    repeats_at_largest: usize,
    /// The operators that also converge the largest size: two minutes or more each for 5,000
    /// on 2 cores (kopf five to six), so by default only wasmop + Rust (with each compiler) and
    /// the native operators it is measured against run it.
    #[arg(
        long,
        env = "WASMOP_BENCH_LARGEST",
        value_delimiter = ',',
        value_parser = comparator,
        default_value = "controller-runtime,kube-rs,wasmop-rust,wasmop-rust-cranelift"
    )]
    largest: Vec<Comparator>,
    /// Runs of kopf at each size: its times lie far from every other operator's (2.5x
    /// controller-runtime's), so by default it runs once.
    #[arg(long, env = "WASMOP_BENCH_KOPF_REPEATS", default_value_t = 1)]
    kopf_repeats: usize,
    /// ConfigMaps in the namespace the start-up runs cache, repeated and started both with
    /// wasmop's compile cache warm and empty.
    #[arg(long, env = "WASMOP_BENCH_CONFIGMAPS", default_value_t = 10_000)]
    configmaps: usize,
    /// Further numbers of cached ConfigMaps each operator starts against once, for the memory
    /// curve.
    #[arg(
        long,
        env = "WASMOP_BENCH_CURVE",
        value_delimiter = ',',
        default_value = "1000,50000"
    )]
    curve: Vec<usize>,
    /// The operators to run (controller-runtime, kube-rs, wasmop-rust,
    /// wasmop-rust-compiling-in-process, wasmop-python,
    /// wasmop-go-controller-runtime-api,
    /// wasmop-go-controller-runtime-api-4-warm-instances, kopf); all by default.
    #[arg(long, env = "WASMOP_BENCH_ONLY", value_delimiter = ',', value_parser = comparator)]
    only: Vec<Comparator>,
    /// Only the convergence runs: no starts against pre-filled namespaces (`make bench-large`).
    #[arg(long)]
    converge_only: bool,
    /// Where the report is written.
    #[arg(long, default_value = "tests/bench/results")]
    out: PathBuf,
    /// Instead of the comparison, a long run of one operator under churn.
    #[command(subcommand)]
    mode: Option<Mode>,
}

/// What to run instead of the comparison.
#[derive(Debug, clap::Subcommand)]
enum Mode {
    /// Half an hour of churn, hot swaps and a failover; memory and convergence checked (`make soak`).
    Soak(soak::SoakArgs),
    /// One replica beside three sharding ones over 5,000 WebApps: memory, CPU, convergence, a
    /// rolling restart under churn with every reconcile recorded, a kill, and a leader takeover
    /// from a cold and a warm standby.
    Shards(shards::ShardsArgs),
    /// N distinct operators as N controller-runtime or kube-rs processes, or in one wasmop host:
    /// summed memory, CPU and convergence at each N.
    Consolidation(consolidation::ConsolidationArgs),
    /// Admission latency through each operator's webhooks, beside the apiserver alone.
    Admission {
        /// Timed requests per row.
        #[arg(long, default_value_t = 1000)]
        requests: usize,
    },
    /// A reconcile after an event while the plugin is warm beside one that wakes it from
    /// suspension.
    Wake {
        /// WebApps created of each kind.
        #[arg(long, default_value_t = 20)]
        rounds: usize,
    },
}

fn comparator(key: &str) -> Result<Comparator, String> {
    Comparator::by_key(key).ok_or_else(|| {
        let keys: Vec<String> = comparator::ALL.iter().map(Comparator::key).collect();
        format!("no operator `{key}`; choose from {}", keys.join(", "))
    })
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The CPU model, cores and memory of this machine, in one line.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib: f64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    format!("{model}, {cores} cores, {:.0} GiB", kib / (1 << 20) as f64)
}

/// The comparators in the order of run `repeat`: rotated, so each takes every place in turn.
fn order(comparators: &[Comparator], repeat: usize) -> Vec<Comparator> {
    let mut order = comparators.to_vec();
    order.rotate_left(repeat % comparators.len().max(1));
    order
}

/// Every start against the pre-filled namespace, on one control plane stopped afterwards: at
/// each number of ConfigMaps of the curve once, at `--configmaps` every repeat, warm and cold.
/// Returns the runs and the ConfigMaps' mean size as JSON.
async fn startups(
    args: &Args,
    comparators: &[Comparator],
    bench: &Bench<'_>,
) -> anyhow::Result<(Vec<Startup>, f64)> {
    let cluster = Cluster::start(bench.repo).await?;
    let prefilled = cluster.namespace("prefilled").await?;
    warm_up(comparators, bench, &cluster).await?;
    let mut runs = Vec::new();
    if comparators.iter().any(|c| c.key() == "wasmop-rust") {
        // Once to compile the plugins into the warm cache, once measured; in a namespace of its
        // own, so the test guests meet only the probe and not what the warm-ups left behind.
        eprintln!("[bench] {} idle", comparator::TEN_PLUGINS.name);
        let alone = cluster.namespace("ten-plugins").await?;
        for _ in 0..2 {
            let run = bench
                .startup(
                    &cluster,
                    comparator::TEN_PLUGINS,
                    &alone,
                    (0, CompileCache::Warm),
                )
                .await?;
            eprintln!("    {:.0} MiB", run.rss);
            runs.push(run);
        }
        runs.remove(0);
    }
    let mut counts = args.curve.clone();
    counts.push(args.configmaps);
    counts.sort_unstable();
    counts.dedup();
    let mut filled = 0;
    for count in counts {
        cluster.prefill(&prefilled, filled..count).await?;
        filled = count;
        let (repeats, caches) = if count == args.configmaps {
            (args.repeats, &[CompileCache::Warm, CompileCache::Cold][..])
        } else {
            (1, &[CompileCache::Warm][..])
        };
        for repeat in 0..repeats {
            // One start per operator with an empty compile cache; the repeats start warm.
            let caches = if repeat == 0 { caches } else { &caches[..1] };
            for comparator in order(comparators, repeat) {
                for &cache in caches {
                    eprintln!(
                        "[bench] run {}/{repeats}, start with {count} ConfigMaps, compile cache {cache:?}: {}",
                        repeat + 1,
                        comparator.name
                    );
                    let run = bench
                        .startup(&cluster, comparator, &prefilled, (count, cache))
                        .await?;
                    eprintln!(
                        "    ready in {:.2} s, {:.0} MiB, peak {:.0} MiB",
                        run.ready_seconds, run.rss, run.peak
                    );
                    runs.push(run);
                }
            }
        }
    }
    let json_bytes = cluster.json_bytes(&prefilled).await?;
    cluster.stop().await?;
    Ok((runs, json_bytes))
}

/// One unmeasured start of each comparator, so no run pays a first start's costs (wasmop
/// compiling the plugin into its warm cache, the page cache loading a program).
async fn warm_up(
    comparators: &[Comparator],
    bench: &Bench<'_>,
    cluster: &Cluster,
) -> anyhow::Result<()> {
    let namespace = cluster.namespace("warm-up").await?;
    for &comparator in comparators {
        eprintln!("[bench] warming up {}", comparator.name);
        bench
            .startup(cluster, comparator, &namespace, (0, CompileCache::Warm))
            .await?;
    }
    Ok(())
}

/// Every convergence run, each on a control plane of its own.
async fn converges(
    args: &Args,
    comparators: &[Comparator],
    bench: &Bench<'_>,
) -> anyhow::Result<Vec<Converge>> {
    let largest = args.sizes.iter().copied().max().unwrap_or_default();
    let smallest = args.sizes.iter().copied().min().unwrap_or_default();
    let mut runs = Vec::new();
    for repeat in 0..args.repeats {
        for &size in &args.sizes {
            if size == largest && repeat >= args.repeats_at_largest {
                continue;
            }
            for comparator in order(comparators, repeat) {
                let skipped =
                    (size == largest && size > smallest && !args.largest.contains(&comparator))
                        || (comparator.key() == "kopf" && repeat >= args.kopf_repeats);
                if skipped {
                    continue;
                }
                eprintln!(
                    "[bench] run {}/{}, {size} WebApps: {}",
                    repeat + 1,
                    args.repeats,
                    comparator.name
                );
                // Idle is watched once per operator: a run's idle minute-fraction is the same.
                let idle = size == smallest && repeat == 0;
                let run = bench.converge(comparator, size, idle).await?;
                eprintln!(
                    "    {:.1} s, {:.1} CPU s, peak {:.0} MiB, {} requests ({} writes, {} conflicts)",
                    run.seconds,
                    run.cpu_seconds,
                    run.peak_rss,
                    run.requests.total,
                    run.requests.writes,
                    run.requests.conflicts
                );
                eprintln!("    requests: {:?}", run.requests.by_kind);
                runs.push(run);
            }
        }
    }
    Ok(runs)
}

/// The line heading a table: the command that measured it and the machine it ran on.
fn measured_by(machine: &str) -> String {
    let mut args = std::env::args();
    let program = args.next().unwrap_or_default();
    let name = Path::new(&program)
        .file_name()
        .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned());
    let command = std::iter::once(name).chain(args).collect::<Vec<_>>();
    format!("Measured by `{}` on {machine}.", command.join(" "))
}

/// Prints `table` and writes it to `<out>/<stem>.md` under a line naming the command and the
/// machine, with `runs` as `<stem>.json`.
pub(crate) fn write_table(
    out: &Path,
    stem: &str,
    table: &str,
    runs: &impl serde::Serialize,
) -> anyhow::Result<()> {
    println!("{table}");
    std::fs::create_dir_all(out)?;
    let header = format!("{}\n\n", measured_by(&machine()));
    std::fs::write(out.join(format!("{stem}.md")), format!("{header}{table}"))?;
    std::fs::write(
        out.join(format!("{stem}.json")),
        serde_json::to_string_pretty(runs)?,
    )?;
    Ok(())
}

fn write(out: &Path, results: &Results, table: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(out)?;
    let header = format!("{}\n", measured_by(&results.machine));
    std::fs::write(out.join("latest.md"), format!("{header}{table}"))?;
    std::fs::write(
        out.join("latest.json"),
        serde_json::to_string_pretty(results)?,
    )?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let comparators = if args.only.is_empty() {
        comparator::ALL.to_vec()
    } else {
        args.only.clone()
    };
    let repo = repo().canonicalize()?;
    let logs = repo.join("target/bench/logs");
    std::fs::create_dir_all(&logs)?;
    match &args.mode {
        Some(Mode::Soak(soak)) => return soak::run(&repo, &logs, soak).await,
        Some(Mode::Shards(shards)) => return shards::run(&repo, &logs, shards).await,
        Some(Mode::Consolidation(consolidation)) => {
            let runs = consolidation::run(&repo, &logs, consolidation).await?;
            let table = consolidation::markdown(&runs);
            return write_table(&repo.join(&args.out), "consolidation", &table, &runs);
        }
        Some(Mode::Admission { requests }) => {
            let rows = admission::run(&repo, &logs, *requests).await?;
            let table = admission::markdown(&rows);
            return write_table(&repo.join(&args.out), "admission", &table, &rows);
        }
        Some(Mode::Wake { rounds }) => {
            let wake = wake::run(&repo, &logs, *rounds).await?;
            let table = wake::markdown(&wake);
            return write_table(&repo.join(&args.out), "wake", &table, &wake);
        }
        None => {}
    }
    let compile_cache = repo.join("target/bench/compile-cache");
    let bench = Bench {
        repo: &repo,
        logs: &logs,
        compile_cache: &compile_cache,
    };
    let (startup, json_bytes) = if args.converge_only {
        let cluster = Cluster::start(&repo).await?;
        warm_up(&comparators, &bench, &cluster).await?;
        cluster.stop().await?;
        (Vec::new(), 0.0)
    } else {
        startups(&args, &comparators, &bench).await?
    };
    let results = Results {
        machine: machine(),
        configmaps: args.configmaps,
        json_bytes,
        comparators: comparators.iter().map(|c| c.name.to_owned()).collect(),
        startup,
        converge: converges(&args, &comparators, &bench).await?,
    };
    let table = results.markdown();
    println!("{table}");
    let out = if args.out.is_absolute() {
        args.out.clone()
    } else {
        repo.join(&args.out)
    };
    write(&out, &results, &table)?;
    eprintln!("[bench] wrote {}", out.join("latest.md").display());
    Ok(())
}
