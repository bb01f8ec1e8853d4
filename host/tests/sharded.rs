//! Three `wasmop run --sharding` processes against one apiserver: every WebApp converges, each
//! replica caches and reconciles only its share, a replica killed with SIGKILL has its objects
//! taken over once its member Lease expires, a replica that joins is handed its share by the
//! drain handshake — and the reconciles the replicas log never overlap for one key.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::scrape::{free_address, get, parse, value};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::process::Child;
use wasmop_envtest::{ControlPlane, shared, within};

const LIMIT: Duration = Duration::from_secs(300);
const APPS: usize = 30;
const OWNER: &str = "shard.wasmop.dev/wasmop-leader";

/// One `wasmop run --leader-elect --sharding` process, its metrics address and its log.
struct Replica {
    child: Child,
    address: String,
    log: PathBuf,
}

impl Replica {
    async fn start(plane: &ControlPlane, namespace: &str, name: &str) -> anyhow::Result<Self> {
        let address = free_address();
        let dir = plane.dir().join("sharded");
        std::fs::create_dir_all(&dir)?;
        let log = dir.join(format!("{namespace}-{name}.log"));
        let child = common::host(plane)
            .arg("--plugin")
            .arg(common::component("webapp"))
            .args(["--namespaces", namespace])
            .args(["--metrics-bind-address", &address])
            .args(["--health-probe-bind-address", "0"])
            .args(["--leader-elect", "--leader-election-namespace", namespace])
            .args(["--leader-election-lease-duration", "3s"])
            .args(["--leader-election-renew-deadline", "2s"])
            .args(["--leader-election-retry-period", "500ms"])
            .arg("--sharding")
            .env("RUST_LOG", "info,wasmop::controller::workers=debug")
            .stderr(Stdio::from(std::fs::File::create(&log)?))
            .spawn()?;
        let replica = Replica {
            child,
            address,
            log,
        };
        while !matches!(get(&replica.address, "/readyz").await, Ok((200, _))) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!("started {name}, its log in {}", replica.log.display());
        Ok(replica)
    }

    /// WebApps in this replica's cache, if it answers.
    async fn cached_apps(&self) -> Option<f64> {
        let (200, text) = get(&self.address, "/metrics").await.ok()? else {
            return None;
        };
        let labels = [("kind", "WebApp"), ("view", "shard")];
        value(&parse(&text), "wasmop_cache_objects", &labels)
    }

    fn kill(&self) {
        let pid = self.child.id().expect("running").to_string();
        std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .expect("kill runs");
    }
}

/// Each WebApp's owner label, by name.
async fn owners(apps: &Api<DynamicObject>) -> anyhow::Result<BTreeMap<String, Option<String>>> {
    let listed = apps.list(&ListParams::default()).await?;
    Ok(listed
        .items
        .into_iter()
        .map(|app| {
            let owner = app.metadata.labels.as_ref().and_then(|l| l.get(OWNER));
            (
                app.metadata.name.clone().unwrap_or_default(),
                owner.cloned(),
            )
        })
        .collect())
}

/// Sets every WebApp's replicas to `replicas` and waits until each has converged on it.
async fn scale_all(apps: &Api<DynamicObject>, replicas: u32) -> anyhow::Result<()> {
    let patch = json!({"spec": {"replicas": replicas}});
    for name in owners(apps).await?.keys() {
        apps.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    for name in owners(apps).await?.keys() {
        common::converged(apps, name).await?;
    }
    Ok(())
}

/// Waits until every WebApp carries an owner label and `members` distinct members own them;
/// returns the owners.
async fn assigned_to(
    apps: &Api<DynamicObject>,
    members: usize,
) -> anyhow::Result<BTreeMap<String, Option<String>>> {
    loop {
        let owners = owners(apps).await?;
        let distinct: BTreeSet<&String> = owners.values().flatten().collect();
        if owners.values().all(Option::is_some) && distinct.len() == members {
            return Ok(owners);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One reconcile as a replica logged it: start and end (the end of the log when it never ended).
#[derive(Debug, Clone)]
struct Reconcile {
    replica: usize,
    start: String,
    end: String,
}

/// The reconciles in `log`, by key.
fn reconciles(replica: usize, log: &Path) -> BTreeMap<String, Vec<Reconcile>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut open: BTreeMap<String, String> = BTreeMap::new();
    let mut done: BTreeMap<String, Vec<Reconcile>> = BTreeMap::new();
    let mut last = String::new();
    for line in text.lines() {
        let Some(time) = line.split_whitespace().next() else {
            continue;
        };
        last = time.to_owned();
        let Some(key) = line.split("key=").nth(1).map(|k| k.trim().to_owned()) else {
            continue;
        };
        if line.contains("reconcile started") {
            open.insert(key, time.to_owned());
        } else if line.contains("reconcile ended")
            && let Some(start) = open.remove(&key)
        {
            let end = time.to_owned();
            done.entry(key).or_default().push(Reconcile {
                replica,
                start,
                end,
            });
        }
    }
    for (key, start) in open {
        let end = last.clone();
        done.entry(key).or_default().push(Reconcile {
            replica,
            start,
            end,
        });
    }
    done
}

/// Fails naming the first key two replicas reconciled at overlapping times.
fn no_key_on_two_replicas(logs: &[&Path]) -> anyhow::Result<usize> {
    let mut all: BTreeMap<String, Vec<Reconcile>> = BTreeMap::new();
    for (replica, log) in logs.iter().enumerate() {
        for (key, runs) in reconciles(replica, log) {
            all.entry(key).or_default().extend(runs);
        }
    }
    let mut count = 0;
    for (key, mut runs) in all {
        count += runs.len();
        // RFC 3339 times in UTC with fixed digits order as text.
        runs.sort_by(|a, b| a.start.cmp(&b.start));
        for pair in runs.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            anyhow::ensure!(
                a.replica == b.replica || a.end <= b.start,
                "{key} was reconciled by replicas {} ({}–{}) and {} ({}–{}) at once",
                a.replica,
                a.start,
                a.end,
                b.replica,
                b.start,
                b.end
            );
        }
    }
    Ok(count)
}

#[tokio::test]
async fn three_replicas_share_the_work_survive_a_kill_and_hand_over_to_a_joiner()
-> anyhow::Result<()> {
    within(LIMIT, "sharding across wasmop replicas", async {
        let plane = shared().await?;
        common::install_webapp_crd(plane).await?;
        let namespace = plane.create_namespace("sharded").await?;
        let apps = common::webapps(plane.client().await?, &namespace);
        let mut replicas = Vec::new();
        for name in ["a", "b", "c"] {
            replicas.push(Replica::start(plane, &namespace, name).await?);
        }
        for i in 0..APPS {
            apps.create(&PostParams::default(), &common::webapp(&format!("app-{i}")))
                .await?;
        }
        let before = assigned_to(&apps, 3).await?;
        for name in before.keys() {
            common::converged(&apps, name).await?;
        }
        let mut cached = Vec::new();
        for replica in &replicas {
            cached.push(replica.cached_apps().await.unwrap_or(0.0));
        }
        println!("WebApps cached per replica: {cached:?}");
        assert_eq!(cached.iter().sum::<f64>(), APPS as f64, "{cached:?}");
        assert!(
            cached.iter().all(|&n| n > 0.0 && n < APPS as f64),
            "{cached:?}"
        );

        // Killed: its member Lease expires, and its objects go to the two left.
        let killed = &replicas[0];
        killed.kill();
        let owners_after_kill = assigned_to(&apps, 2).await?;
        scale_all(&apps, 2).await?;
        let moved = before
            .iter()
            .filter(|(name, owner)| owners_after_kill[*name] != **owner)
            .count();
        println!("after the kill, {moved} WebApps moved to the two left");
        assert!(moved > 0 && moved < APPS, "{moved} moved");

        // Joining: it is handed its share by the drain handshake while the others keep working.
        replicas.push(Replica::start(plane, &namespace, "d").await?);
        assigned_to(&apps, 3).await?;
        scale_all(&apps, 3).await?;

        for replica in &replicas[1..] {
            replica.kill();
        }
        let logs: Vec<&Path> = replicas.iter().map(|r| r.log.as_path()).collect();
        let count = no_key_on_two_replicas(&logs)?;
        println!("{count} reconciles recorded, none of one key on two replicas at once");
        Ok(())
    })
    .await
}
