//! `wasmop-bench shards`: the `webapp` plugin over N WebApps (5,000 by default) run by one
//! `wasmop` replica and by three sharding ones, each group on a control plane started for it
//! alone. Printed side by side: every replica's peak RSS (and the file-backed part no share
//! shrinks) and CPU seconds while the WebApps, created at once, converge, as a share of the
//! single replica's, and the convergence times. On the single replica's control plane, a leader
//! killed beside a standby, cold and with `--warm-standby`: the time from the standby's taking the
//! Lease to its first reconcile. On the three: a rolling restart (SIGTERM, a new replica in its
//! place) under a steady churn of changes, and a replica killed with SIGKILL, timed until its
//! WebApps are reassigned, against the member Lease's duration; every reconcile of every replica
//! is recorded (replica, key, start, end; written to `shards-record.csv` beside the logs) and
//! checked for a key on two replicas at once. The table and its figures are written to
//! `shards.md` and `shards.json` in `--out` (the chart script draws them).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde::Serialize;
use serde_json::json;
use wasmop_envtest::record;

use crate::load;
use crate::process::Sample;
use crate::replicas::{self, Group, LEASE_DURATION, Replica};
use crate::scenario::Cluster;
use crate::soak::Sequence;

/// How the benchmark runs.
#[derive(Debug, clap::Args)]
pub struct ShardsArgs {
    /// WebApps created at once.
    #[arg(long, default_value_t = 5000)]
    webapps: usize,
    /// Replicas of the sharded group.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Changes made per second during the rolling restart.
    #[arg(long, default_value_t = 20)]
    changes_per_second: u32,
    /// The `wasmop` binary.
    #[arg(long, default_value = "target/release/wasmop")]
    wasmop: PathBuf,
    /// Only the convergence of one replica and of the sharded ones, for the memory curve at
    /// larger sizes: no rolling restart, kill or takeover.
    #[arg(long)]
    converge_only: bool,
    /// Where `shards.md` and `shards.json` are written.
    #[arg(long, default_value = "tests/bench/results")]
    out: PathBuf,
}

/// One replica's cost while the WebApps converged.
#[derive(Serialize)]
struct Cost {
    name: String,
    idle_rss: f64,
    peak_rss: f64,
    /// The file-backed part of the resident set at the end (the binary's and libraries' pages,
    /// the compiled plugin), which no share of the objects shrinks.
    file_rss: f64,
    cpu_seconds: f64,
}

/// Runs the benchmark and prints its figures; fails if a key was reconciled by two replicas at
/// once or the WebApps did not converge. Each group runs on a control plane started for it
/// alone, so both meet the same empty apiserver.
pub async fn run(repo: &Path, logs: &Path, args: &ShardsArgs) -> anyhow::Result<()> {
    let group = |cluster: &Cluster, namespace: &str, sharding: bool, warm_standby: bool| Group {
        wasmop: repo.join(&args.wasmop),
        plugin: repo.join("target/components/webapp.wasm"),
        kubeconfig: cluster.operator_kubeconfig().to_owned(),
        namespace: namespace.to_owned(),
        logs: logs.to_owned(),
        sharding,
        warm_standby,
    };
    let cluster = Cluster::start(repo).await?;
    let namespace = cluster.namespace("one").await?;
    eprintln!("[shards] {} WebApps, one replica", args.webapps);
    let one = group(&cluster, &namespace, false, false);
    let ((solo, single), single_seconds) =
        converge(&cluster, &one, &["solo"], args.webapps).await?;
    for replica in solo {
        replica.operator.stop().await?;
    }
    if !args.converge_only {
        for warm in [false, true] {
            let standby = group(&cluster, &namespace, false, warm);
            takeover(&cluster, &standby, args.webapps).await?;
        }
    }
    cluster.stop().await?;

    let cluster = Cluster::start(repo).await?;
    let names: Vec<String> = (0..args.replicas).map(|i| format!("r{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let three = group(&cluster, &cluster.namespace("sharded").await?, true, false);
    eprintln!(
        "[shards] {} WebApps, {} sharding replicas",
        args.webapps, args.replicas
    );
    let ((mut live, sharded), sharded_seconds) =
        converge(&cluster, &three, &names, args.webapps).await?;
    let apps = load::webapps(cluster.client(), &three.namespace);
    let balance = replicas::owners(&apps).await?;
    let table = costs_table(&single, &sharded, (single_seconds, sharded_seconds));
    let figures = json!({
        "single": single,
        "sharded": sharded,
        "single_seconds": single_seconds,
        "sharded_seconds": sharded_seconds,
    });
    crate::write_table(&repo.join(&args.out), "shards", &table, &figures)?;
    println!(
        "WebApps per member: {:?}",
        balance.values().collect::<Vec<_>>()
    );
    let mut retired = Vec::new();
    if !args.converge_only {
        retired = rolling_restart(&cluster, &three, &mut live, args).await?;
        kill_one(&apps, &mut live, &mut retired).await?;
    }
    for replica in live {
        retired.push(replica.log.clone());
        replica.operator.stop().await?;
    }
    let logs: Vec<&Path> = retired.iter().map(|r| r.as_path()).collect();
    check_record(&logs, &three.logs.join("shards-record.csv"))?;
    cluster.stop().await
}

/// Starts the replicas `names` of `group`, creates `count` WebApps at once once they all run,
/// and waits until every one converged; returns the replicas with their costs, and the seconds
/// convergence took.
async fn converge(
    cluster: &Cluster,
    group: &Group,
    names: &[&str],
    count: usize,
) -> anyhow::Result<((Vec<Replica>, Vec<Cost>), f64)> {
    let mut started = Vec::new();
    for name in names {
        started.push(group.start(name)?);
    }
    let leases = names.len() + usize::from(group.sharding);
    wait_for_leases(cluster, &group.namespace, leases).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut idle: Vec<Sample> = Vec::new();
    for replica in &mut started {
        idle.push(replica.operator.sample()?);
    }
    let clock = Instant::now();
    let apps = load::webapps(cluster.client(), &group.namespace);
    load::create_all(&apps, 0..count, load::webapp).await?;
    load::wait_converged(cluster.client(), &group.namespace, count).await?;
    let seconds = clock.elapsed().as_secs_f64();
    let mut costs = Vec::new();
    for (replica, idle) in started.iter_mut().zip(idle) {
        let end = replica.operator.sample()?;
        costs.push(Cost {
            name: replica.name.clone(),
            idle_rss: idle.rss,
            peak_rss: end.peak,
            file_rss: end.file_rss,
            cpu_seconds: (end.cpu - idle.cpu).as_secs_f64(),
        });
    }
    Ok(((started, costs), seconds))
}

/// Waits until `namespace` holds `count` Leases held by someone (the leader's, and with sharding
/// each member's).
async fn wait_for_leases(cluster: &Cluster, namespace: &str, count: usize) -> anyhow::Result<()> {
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(cluster.client().clone(), namespace);
    loop {
        let held = leases.list(&Default::default()).await?.items.into_iter();
        let held = held.filter(|l| l.spec.as_ref().is_some_and(|s| s.holder_identity.is_some()));
        if held.count() >= count {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The Markdown table of the replicas' costs, the single replica's first, and the convergence
/// times below it.
fn costs_table(
    single: &[Cost],
    sharded: &[Cost],
    (single_seconds, sharded_seconds): (f64, f64),
) -> String {
    let base = &single[0];
    let mut out = String::from(
        "| replica | idle RSS MiB | peak RSS MiB | peak vs one | file-backed MiB | CPU s | CPU vs one |\n|---|---|---|---|---|---|---|\n",
    );
    for cost in single.iter().chain(sharded) {
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.0} | {:.0} % | {:.1} | {:.1} | {:.0} % |",
            cost.name,
            cost.idle_rss,
            cost.peak_rss,
            100.0 * cost.peak_rss / base.peak_rss,
            cost.file_rss,
            cost.cpu_seconds,
            100.0 * cost.cpu_seconds / base.cpu_seconds
        );
    }
    let total: f64 = sharded.iter().map(|c| c.cpu_seconds).sum();
    let _ = write!(
        out,
        "\nconverged in {single_seconds:.1} s by one replica, {sharded_seconds:.1} s by {} \
         ({total:.1} CPU s together)",
        sharded.len()
    );
    out
}

/// Restarts every replica of `live` in turn under churn: SIGTERM, its WebApps move to the
/// others, a new replica in its place is handed its share. Returns the logs of the replicas
/// stopped, for the record.
async fn rolling_restart(
    cluster: &Cluster,
    group: &Group,
    live: &mut Vec<Replica>,
    args: &ShardsArgs,
) -> anyhow::Result<Vec<PathBuf>> {
    let apps = load::webapps(cluster.client(), &group.namespace);
    let members = live.len();
    let stop = Arc::new(AtomicBool::new(false));
    let churn = tokio::spawn(churn(
        apps.clone(),
        args.webapps,
        args.changes_per_second,
        stop.clone(),
    ));
    let mut logs = Vec::new();
    let clock = Instant::now();
    for turn in 0..members {
        let old = live.remove(0);
        let name = format!("{}-{}", old.name, turn + 1);
        logs.push(old.log.clone());
        let stopped = Instant::now();
        old.operator.stop().await?;
        replicas::assigned_to(&apps, members - 1).await?;
        let moved = stopped.elapsed().as_secs_f64();
        live.push(group.start(&name)?);
        let joined = Instant::now();
        replicas::assigned_to(&apps, members).await?;
        eprintln!(
            "[shards] restarted {name}: its WebApps moved {moved:.1} s after SIGTERM, \
             its successor took its share {:.1} s after starting",
            joined.elapsed().as_secs_f64()
        );
    }
    stop.store(true, Ordering::Relaxed);
    let changes = churn.await??;
    let restarted = clock.elapsed().as_secs_f64();
    load::wait_converged(cluster.client(), &group.namespace, args.webapps).await?;
    println!(
        "rolling restart of {members} replicas under churn: {restarted:.1} s, {changes} changes \
         made meanwhile, all {} WebApps converged {:.1} s after the churn stopped",
        args.webapps,
        clock.elapsed().as_secs_f64() - restarted
    );
    Ok(logs)
}

/// Changes WebApps (replicas or image) at `per_second` until `stop`; returns how many it made.
async fn churn(
    apps: Api<DynamicObject>,
    count: usize,
    per_second: u32,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<usize> {
    let mut sequence = Sequence(7);
    let mut tick = tokio::time::interval(Duration::from_secs(1) / per_second.max(1));
    let mut made = 0;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let name = format!("app-{:05}", sequence.next(count));
        let image = ["nginx:1.27", "nginx:1.28"][sequence.next(2)];
        let spec = json!({"spec": {"replicas": 1 + sequence.next(3), "image": image}});
        apps.patch(&name, &PatchParams::default(), &Patch::Merge(&spec))
            .await?;
        made += 1;
    }
    Ok(made)
}

/// Kills the first replica of `live` with SIGKILL and times the reassignment of its WebApps;
/// its log joins `retired`.
async fn kill_one(
    apps: &Api<DynamicObject>,
    live: &mut Vec<Replica>,
    retired: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let members = live.len();
    let mut killed = live.remove(0);
    let clock = Instant::now();
    killed.operator.kill().await?;
    replicas::assigned_to(apps, members - 1).await?;
    println!(
        "{} killed with SIGKILL: its WebApps reassigned {:.1} s later (member Lease {} s)",
        killed.name,
        clock.elapsed().as_secs_f64(),
        LEASE_DURATION.as_secs()
    );
    retired.push(killed.log);
    Ok(())
}

/// Reads the reconciles of every replica's log, writes them to `csv` and fails if a key was
/// reconciled by two replicas at once.
fn check_record(logs: &[&Path], csv: &Path) -> anyhow::Result<()> {
    let record = record::read(logs);
    let mut text = String::from("replica,key,start,end\n");
    for r in &record {
        let replica = logs[r.replica].file_stem().unwrap_or_default().display();
        text += &format!("{replica},{},{},{}\n", r.key, r.start, r.end);
    }
    std::fs::write(csv, text)?;
    let count = record::no_key_on_two_replicas(&record)?;
    println!(
        "{count} reconciles recorded across {} replicas ({}): no key on two replicas at once",
        logs.len(),
        csv.display()
    );
    Ok(())
}

/// A leader of `group` over the `count` converged WebApps of its namespace, killed with SIGKILL
/// beside a standby: prints the time from the kill to the standby's taking the Lease and from
/// there to its first reconcile, and the standby's memory while it waited.
async fn takeover(cluster: &Cluster, group: &Group, count: usize) -> anyhow::Result<()> {
    let mode = if group.warm_standby { "warm" } else { "cold" };
    let mut leader = group.start(&format!("leader-{mode}"))?;
    wait_for_leases(cluster, &group.namespace, 1).await?;
    // Its first pass over every WebApp done, so the standby meets a quiet leader.
    while leader
        .metric("controller_runtime_reconcile_total", &[])
        .await
        < Some(count as f64)
        || leader.metric("workqueue_depth", &[]).await != Some(0.0)
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut standby = group.start(&format!("standby-{mode}"))?;
    let cached = |value: Option<f64>| value.unwrap_or(0.0) >= count as f64;
    let webapps = ["kind=\"WebApp\""];
    while standby.metric("wasmop_cache_objects", &[]).await.is_none()
        || group.warm_standby && !cached(standby.metric("wasmop_cache_objects", &webapps).await)
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let waiting = standby.operator.sample()?;
    let killed = replicas::now_of_day();
    leader.operator.kill().await?;
    let (led, first) = loop {
        let led = replicas::first_after(&standby.log, "became leader", killed);
        let first =
            led.and_then(|led| replicas::first_after(&standby.log, "reconcile started", led));
        if let (Some(led), Some(first)) = (led, first) {
            break (led, first);
        }
        anyhow::ensure!(
            replicas::now_of_day() - killed < 300.0,
            "the {mode} standby did not take over within 5 minutes ({})",
            standby.log.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!(
        "takeover, {mode} standby ({:.0} MiB while waiting): the Lease {:.1} s after the kill \
         (Lease {} s), first reconcile {:.2} s after taking it",
        waiting.rss,
        led - killed,
        LEASE_DURATION.as_secs(),
        first - led
    );
    standby.operator.stop().await
}
