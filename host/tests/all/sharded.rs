//! Three `wasmop run --sharding` processes against one apiserver: every WebApp converges, each
//! replica caches and reconciles only its share, the Deployments a replica creates carry its
//! shard label from the start, a replica killed with SIGKILL has its objects taken over once its
//! member Lease expires, a replica that joins is handed its share by the drain handshake, a new
//! version of the plugin dropped into the plugin directory is loaded by every replica and reaches
//! every WebApp — and the reconciles the replicas log never overlap for one key.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::scrape::{free_address, get, parse, value};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::process::Child;
use wasmop_envtest::{ControlPlane, record, shared_by, within};

const LIMIT: Duration = Duration::from_secs(300);
const APPS: usize = 30;
const OWNER: &str = "shard.wasmop.dev/wasmop-leader";
/// The member Lease's duration the replicas run with.
const LEASE: Duration = Duration::from_secs(3);
const APPLIED_BY: &str = "example.wasmop.dev/applied-by";

/// One `wasmop run --leader-elect --sharding` process, its metrics address and its log.
struct Replica {
    child: Child,
    address: String,
    log: PathBuf,
}

impl Replica {
    /// Starts replica `name` running the plugins of `plugins`, a directory.
    async fn start(
        plane: &ControlPlane,
        namespace: &str,
        name: &str,
        plugins: &Path,
    ) -> anyhow::Result<Self> {
        let address = free_address();
        let log = plane
            .dir()
            .join("sharded")
            .join(format!("{namespace}-{name}.log"));
        let child = common::host(plane)
            .arg("--plugin-dir")
            .arg(plugins)
            .args(["--namespaces", namespace])
            .args(["--metrics-bind-address", &address])
            .args(["--health-probe-bind-address", "0"])
            .args(["--leader-elect", "--leader-election-namespace", namespace])
            .arg("--leader-election-lease-duration")
            .arg(format!("{}s", LEASE.as_secs()))
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

    /// The live members this replica counts, if it leads and answers.
    async fn members(&self) -> Option<f64> {
        let (200, text) = get(&self.address, "/metrics").await.ok()? else {
            return None;
        };
        value(&parse(&text), "wasmop_shard_members", &[])
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

/// Waits until the leader among `replicas` counts `members` live members.
async fn counted(replicas: &[Replica], members: usize) {
    loop {
        for replica in replicas {
            if replica.members().await == Some(members as f64) {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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

/// Checks that every Deployment carries its WebApp's owner label, set by the replica that wrote
/// it: the sharder never had to label one (no field of it is the sharder's).
async fn labelled_by_their_writers(
    deployments: &Api<Deployment>,
    owners: &BTreeMap<String, Option<String>>,
) -> anyhow::Result<()> {
    let listed = deployments.list(&ListParams::default()).await?.items;
    anyhow::ensure!(listed.len() == owners.len(), "{} Deployments", listed.len());
    for deployment in listed {
        let meta = &deployment.metadata;
        let name = meta.name.clone().unwrap_or_default();
        let controller = meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        let app = controller.map(|o| o.name.clone()).unwrap_or_default();
        let label = meta.labels.as_ref().and_then(|l| l.get(OWNER));
        anyhow::ensure!(
            owners
                .get(&app)
                .is_some_and(|owner| owner.as_ref() == label),
            "Deployment {name} is labelled {label:?}, its WebApp {app:?} {:?}",
            owners.get(&app)
        );
        let managers: Vec<&str> = meta
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|m| m.manager.as_deref())
            .collect();
        anyhow::ensure!(
            !managers.contains(&"wasmop-sharder"),
            "the sharder had to label Deployment {name} (managers {managers:?})"
        );
    }
    Ok(())
}

/// Waits until every Deployment is stamped as applied by `version` of webapp.
async fn all_applied_by(deployments: &Api<Deployment>, version: &str) -> anyhow::Result<()> {
    let stamp = format!("webapp/{version}");
    loop {
        let listed = deployments.list(&ListParams::default()).await?.items;
        let stamped = listed.iter().filter(|d| {
            let annotations = d.metadata.annotations.as_ref();
            annotations.and_then(|a| a.get(APPLIED_BY)) == Some(&stamp)
        });
        if stamped.count() == APPS {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Puts `component` in the plugin directory `dir` as `webapp.wasm`, in one rename.
fn install(dir: &Path, component: &str) -> anyhow::Result<()> {
    let staged = dir.join(".webapp.wasm.new");
    std::fs::copy(common::component(component), &staged)?;
    std::fs::rename(staged, dir.join("webapp.wasm"))?;
    Ok(())
}

#[tokio::test]
async fn three_replicas_share_the_work_survive_a_kill_and_hand_over_to_a_joiner()
-> anyhow::Result<()> {
    within(LIMIT, "sharding across wasmop replicas", async {
        let plane = &shared_by(module_path!()).await?;
        common::install_webapp_crd(plane).await?;
        let namespace = plane.create_namespace("sharded").await?;
        let client = plane.client().await?;
        let apps = common::webapps(client.clone(), &namespace);
        let deployments = Api::<Deployment>::namespaced(client, &namespace);
        let dir = plane.dir().join("sharded");
        let plugins = dir.join(format!("{namespace}-plugins"));
        std::fs::create_dir_all(&plugins)?;
        install(&plugins, "webapp")?;
        let mut replicas = Vec::new();
        for name in ["a", "b", "c"] {
            replicas.push(Replica::start(plane, &namespace, name, &plugins).await?);
        }
        // Created once the leader counts all three, each WebApp is labelled once and stays.
        counted(&replicas, 3).await;
        for i in 0..APPS {
            apps.create(&PostParams::default(), &common::webapp(&format!("app-{i}")))
                .await?;
        }
        let before = assigned_to(&apps, 3).await?;
        for name in before.keys() {
            common::converged(&apps, name).await?;
        }
        labelled_by_their_writers(&deployments, &before).await?;
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
        let killed_at = Instant::now();
        let owners_after_kill = assigned_to(&apps, 2).await?;
        let reassigned = killed_at.elapsed();
        scale_all(&apps, 2).await?;
        let converged = killed_at.elapsed();
        let moved = before
            .iter()
            .filter(|(name, owner)| owners_after_kill[*name] != **owner)
            .count();
        println!(
            "after the kill, {moved} WebApps moved to the two left: reassigned {:.1} s and \
             converged on a change {:.1} s after the kill (member Lease {} s)",
            reassigned.as_secs_f64(),
            converged.as_secs_f64(),
            LEASE.as_secs()
        );
        assert!(moved > 0 && moved < APPS, "{moved} moved");
        // Its Lease runs out at most LEASE after its last renewal; the leader may have been the
        // one killed, its successor elected meanwhile. Loose for a busy machine.
        assert!(
            reassigned < 2 * LEASE + Duration::from_secs(10),
            "{reassigned:?}"
        );

        // Joining: it is handed its share by the drain handshake while the others keep working.
        replicas.push(Replica::start(plane, &namespace, "d", &plugins).await?);
        assigned_to(&apps, 3).await?;
        scale_all(&apps, 3).await?;

        // A new version in the plugin directory: every replica loads it and reconciles its share
        // with it, so every Deployment ends stamped by it.
        install(&plugins, "webapp-v2")?;
        all_applied_by(&deployments, "0.2.0").await?;
        println!("webapp 0.2.0 hot-loaded on every replica reached all {APPS} Deployments");

        for replica in &replicas[1..] {
            replica.kill();
        }
        let logs: Vec<&Path> = replicas.iter().map(|r| r.log.as_path()).collect();
        let count = record::no_key_on_two_replicas(&record::read(&logs))?;
        println!("{count} reconciles recorded, none of one key on two replicas at once");
        Ok(())
    })
    .await
}
