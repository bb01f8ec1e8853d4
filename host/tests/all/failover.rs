//! Several `wasmop` processes with leader election against one apiserver: exactly one
//! reconciles; killing it with SIGKILL hands over after the lease duration, and the new leader
//! converges what changed meanwhile; SIGTERM releases the lease so a follower takes over at once.
//! A follower caches nothing, unless started with `--warm-standby`: then it holds every WebApp
//! before it leads.

use crate::common;

use std::time::Duration;

use common::scrape::{free_address, get, parse, value};
use kube::api::{Api, DynamicObject, PostParams};
use tokio::process::Child;
use tokio::time::Instant;
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(240);
const LEASE: Duration = Duration::from_secs(3);
const RETRY: Duration = Duration::from_millis(500);

/// One `wasmop run --leader-elect` process and its metrics address.
struct Replica {
    child: Child,
    address: String,
}

impl Replica {
    async fn start(plane: &ControlPlane, namespace: &str) -> anyhow::Result<Self> {
        Replica::started(plane, namespace, &[]).await
    }

    async fn started(
        plane: &ControlPlane,
        namespace: &str,
        flags: &[&str],
    ) -> anyhow::Result<Self> {
        let address = free_address();
        let child = common::host(plane)
            .args(flags)
            .arg("--plugin")
            .arg(common::component("webapp"))
            .args([
                "--metrics-bind-address",
                &address,
                "--health-probe-bind-address",
                "0",
            ])
            .args(["--leader-elect", "--leader-election-namespace", namespace])
            .args(["--leader-election-lease-duration", "3s"])
            .args(["--leader-election-renew-deadline", "2s"])
            .args(["--leader-election-retry-period", "500ms"])
            .spawn()?;
        let replica = Replica { child, address };
        while !matches!(get(&replica.address, "/readyz").await, Ok((200, _))) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(replica)
    }

    async fn leading(&self) -> bool {
        let Ok((200, text)) = get(&self.address, "/metrics").await else {
            return false;
        };
        value(
            &parse(&text),
            "leader_election_master_status",
            &[("name", "wasmop-leader")],
        ) == Some(1.0)
    }

    /// WebApps in its cache.
    async fn cached_apps(&self) -> f64 {
        let Ok((200, text)) = get(&self.address, "/metrics").await else {
            return 0.0;
        };
        let labels = [("kind", "WebApp")];
        value(&parse(&text), "wasmop_cache_objects", &labels).unwrap_or(0.0)
    }

    async fn reconciles(&self) -> f64 {
        let Ok((200, text)) = get(&self.address, "/metrics").await else {
            return 0.0;
        };
        let samples = parse(&text);
        value(
            &samples,
            "controller_runtime_reconcile_total",
            &[("controller", "webapp"), ("result", "success")],
        )
        .unwrap_or(0.0)
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("running").to_string();
        std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill runs");
    }
}

/// Waits until one of `replicas` leads; returns its index and how long that took.
async fn leader_among(replicas: &[&Replica]) -> (usize, Duration) {
    let started = Instant::now();
    loop {
        for (i, replica) in replicas.iter().enumerate() {
            if replica.leading().await {
                return (i, started.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn create(apps: &Api<DynamicObject>, name: &str) -> anyhow::Result<()> {
    apps.create(&PostParams::default(), &common::webapp(name))
        .await?;
    Ok(())
}

#[tokio::test]
async fn one_replica_leads_and_a_follower_takes_over_on_kill_and_on_sigterm() -> anyhow::Result<()>
{
    within(LIMIT, "failover between wasmop replicas", async {
        let plane = &shared_by(module_path!()).await?;
        common::install_webapp_crd(plane).await?;
        let namespace = plane.create_namespace("failover").await?;
        let apps = common::webapps(plane.client().await?, &namespace);
        let first = Replica::start(plane, &namespace).await?;
        let second = Replica::start(plane, &namespace).await?;
        let (leader, _) = leader_among(&[&first, &second]).await;
        let (leader, follower) = if leader == 0 {
            (first, second)
        } else {
            (second, first)
        };
        create(&apps, "before").await?;
        common::converged(&apps, "before").await?;
        // The status is written before the reconcile returns and is counted.
        while leader.reconciles().await == 0.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(follower.reconciles().await, 0.0, "the follower reconciled");
        assert!(!follower.leading().await);
        assert_eq!(follower.cached_apps().await, 0.0, "a cold follower cached");

        leader.signal("-KILL");
        let killed = Instant::now();
        create(&apps, "meanwhile").await?;
        leader_among(&[&follower]).await;
        let failover = killed.elapsed();
        println!("failover after SIGKILL: {failover:?} (lease {LEASE:?}, retry {RETRY:?})");
        // The killed leader may have renewed a retry period (and its requests) before the kill,
        // so its lease may run out that much sooner after it.
        assert!(
            failover >= LEASE / 2,
            "the follower took a live lease {failover:?} after the kill"
        );
        assert!(
            failover < LEASE * 4,
            "the {LEASE:?} lease was taken {failover:?} after the kill"
        );
        common::converged(&apps, "meanwhile").await?;

        let third = Replica::started(plane, &namespace, &["--warm-standby"]).await?;
        while third.cached_apps().await < 2.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!third.leading().await, "the warm standby leads");
        println!("the warm standby caches both WebApps before it leads");
        follower.signal("-TERM");
        let terminated = Instant::now();
        leader_among(&[&third]).await;
        let handover = terminated.elapsed();
        println!("handover after SIGTERM: {handover:?}");
        assert!(
            handover < failover / 2,
            "SIGTERM handed over in {handover:?}, no sooner than SIGKILL's {failover:?}"
        );
        create(&apps, "after").await?;
        common::converged(&apps, "after").await?;
        drop(leader);
        Ok(())
    })
    .await
}
