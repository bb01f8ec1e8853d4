//! Leadership fences itself. Two `wasmop` replicas elect over a 4 s Lease (3 s renew deadline)
//! while `guest-slow` reconciles a steady stream of ConfigMap changes; the apiserver is then
//! paused (SIGSTOP) for 8 s, longer than the lease. The leader's hung renewal is cut off at its
//! deadline, so it stops reconciling and exits; the follower takes over once the apiserver is
//! back. From both replicas' logs — every reconcile's start and end, an abandoned one ending
//! when its worker stopped — no two replicas were ever reconciling at the same time.

use crate::common;

use std::time::Duration;

use common::logged::Logged;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(240);
const PAUSE: Duration = Duration::from_secs(8);

/// One replica and the log lines it has written so far.
struct Replica(Logged);

impl Replica {
    fn start(plane: &ControlPlane, name: &'static str, namespace: &str) -> anyhow::Result<Self> {
        let slow = common::component("guest-slow");
        let mut command = common::host(plane);
        command
            .env("POD_NAME", name)
            .env("RUST_LOG", "info,wasmop::controller::workers=debug")
            .arg("--plugin")
            .arg(slow)
            .args(["--namespaces", namespace, "--leader-elect"])
            .args(["--leader-election-namespace", namespace])
            .args(["--leader-election-id", "fencing"])
            .args(["--leader-election-lease-duration", "4s"])
            .args(["--leader-election-renew-deadline", "3s"])
            .args(["--leader-election-retry-period", "500ms"])
            .args(["--metrics-bind-address", "0"])
            .args(["--health-probe-bind-address", "0"]);
        Ok(Replica(Logged::spawn(name, command)?))
    }

    fn started(&self) -> usize {
        self.0.count("reconcile started")
    }

    /// The spans of time in which at least one reconcile ran; one still running when the log
    /// ends runs on forever.
    fn busy(&self) -> Vec<(Timestamp, Timestamp)> {
        let mut spans = Vec::new();
        let (mut running, mut since) = (0usize, None);
        for line in self.0.log() {
            let Some(at) = line.split_whitespace().next().and_then(|t| t.parse().ok()) else {
                continue;
            };
            if line.contains("reconcile started") {
                running += 1;
                since.get_or_insert(at);
            } else if line.contains("reconcile ended") && running > 0 {
                running -= 1;
                if running == 0 {
                    spans.push((since.take().expect("a start"), at));
                }
            }
        }
        if let Some(since) = since {
            spans.push((since, Timestamp::MAX));
        }
        spans
    }
}

fn overlapping(
    a: &[(Timestamp, Timestamp)],
    b: &[(Timestamp, Timestamp)],
) -> Option<((Timestamp, Timestamp), (Timestamp, Timestamp))> {
    a.iter()
        .flat_map(|x| b.iter().map(move |y| (*x, *y)))
        .find(|(x, y)| x.0 < y.1 && y.0 < x.1)
}

/// Waits until someone holds Lease `fencing`; returns the holder's pod name.
async fn holder(leases: &Api<Lease>) -> anyhow::Result<String> {
    loop {
        if let Some(lease) = leases.get_opt("fencing").await?
            && let Some(holder) = lease.spec.and_then(|s| s.holder_identity)
        {
            return Ok(holder.split('_').next().unwrap_or_default().to_owned());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {signal} {pid}");
}

#[tokio::test]
async fn a_leader_cut_off_from_the_apiserver_stops_before_anyone_else_starts() -> anyhow::Result<()>
{
    within(LIMIT, "fencing a paused leader", async {
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("fencing").await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        let tick = serde_json::from_value(json!({"metadata": {"name": "tick"}, "data": {"n": "0"}}))?;
        configmaps.create(&PostParams::default(), &tick).await?;
        let changes = {
            let configmaps = configmaps.clone();
            tokio::spawn(async move {
                for n in 1u64.. {
                    let patch = Patch::Merge(json!({"data": {"n": n.to_string()}}));
                    let params = PatchParams::default();
                    let write = configmaps.patch("tick", &params, &patch);
                    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        };

        let mut replicas = [
            Replica::start(plane, "replica-a", &namespace)?,
            Replica::start(plane, "replica-b", &namespace)?,
        ];
        let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
        let leader_name = holder(&leases).await?;
        let leader = replicas.iter().position(|r| r.0.name == leader_name).expect("a replica leads");
        let follower = 1 - leader;
        while replicas[leader].started() < 10 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        let apiserver = plane.pids()[1];
        signal(apiserver, "-STOP");
        let paused = Timestamp::now();
        tokio::time::sleep(PAUSE).await;
        signal(apiserver, "-CONT");
        let exit = replicas[leader].0.child.wait().await?;
        assert!(!exit.success(), "the cut-off leader exits with an error, as controller-runtime's does");
        while replicas[follower].started() < 10 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        changes.abort();

        let old = &replicas[leader];
        let lost = old
            .0
            .log()
            .into_iter()
            .find(|l| l.contains("lost the lease"))
            .ok_or_else(|| anyhow::anyhow!("{} never said it lost the lease", old.0.name))?;
        let (old_busy, new_busy) = (old.busy(), replicas[follower].busy());
        let last_old = old_busy.last().expect("the leader reconciled").1;
        let first_new = new_busy.first().expect("the follower reconciled").0;
        println!("paused at {paused}; {lost}");
        println!("the old leader's last reconcile ended at {last_old}; the new leader's first started at {first_new}");
        assert!(last_old < Timestamp::MAX, "the old leader was still reconciling when it exited");
        assert_eq!(
            overlapping(&old_busy, &new_busy),
            None,
            "two replicas reconciled at once"
        );
        let new_before_pause = new_busy.iter().any(|span| span.0 < paused);
        assert!(!new_before_pause, "the follower reconciled while the leader held the Lease");
        Ok(())
    })
    .await
}
