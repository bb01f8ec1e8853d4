//! Leader election on the real apiserver: one holder at a time, a released Lease is taken at the
//! next retry, a crashed holder's Lease after its duration, and the Lease reads sanely with
//! `kubectl`. Durations are checked against each other and against the protocol's lower bounds,
//! so a slow machine stretches them without failing the test.

use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::PostParams;
use wasmop::leader::{Elector, LeaderConfig, identity};
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(120);
const LEASE: Duration = Duration::from_secs(3);

/// Short durations keep the test quick; their ratios are controller-runtime's.
fn config(namespace: &str, who: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: LEASE,
        renew_deadline: Duration::from_millis(2000),
        retry_period: Duration::from_millis(400),
        ..LeaderConfig::new(namespace, "wasmop-leader", identity(who))
    }
}

async fn kubectl_lease(plane: &ControlPlane, namespace: &str) -> anyhow::Result<serde_json::Value> {
    let output = plane
        .kubectl()
        .args([
            "get",
            "lease",
            "wasmop-leader",
            "-n",
            namespace,
            "-o",
            "json",
        ])
        .output()
        .await?;
    anyhow::ensure!(output.status.success(), "kubectl get lease failed");
    Ok(serde_json::from_slice(&output.stdout)?)
}

#[tokio::test]
async fn one_leader_at_a_time_with_fast_handover_and_crash_failover() -> anyhow::Result<()> {
    within(LIMIT, "leader election", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("leader").await?;
        let client = plane.client().await?;
        let mut a = Elector::new(client.clone(), config(&namespace, "pod-a"))?;
        let mut b = Elector::new(client.clone(), config(&namespace, "pod-b"))?;

        a.acquire().await;
        assert!(a.is_leader());
        tokio::select! {
            lost = a.hold() => panic!("the leader lost its lease: {lost}"),
            _ = b.acquire() => panic!("a second candidate took a held lease"),
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
        let lease = kubectl_lease(plane, &namespace).await?;
        let spec = &lease["spec"];
        assert_eq!(spec["holderIdentity"], a.config().identity.as_str());
        assert_eq!(spec["leaseDurationSeconds"], 3);
        assert_eq!(spec["leaseTransitions"], 0);
        assert!(spec["acquireTime"].is_string() && spec["renewTime"].is_string());

        let released = tokio::time::Instant::now();
        a.release().await;
        b.acquire().await;
        let handover = released.elapsed();
        println!("handover after release: {handover:?}");
        let lease = kubectl_lease(plane, &namespace).await?;
        assert_eq!(
            lease["spec"]["holderIdentity"],
            b.config().identity.as_str()
        );
        assert_eq!(lease["spec"]["leaseTransitions"], 1);

        // b crashes: it neither renews nor releases.
        let crashed = tokio::time::Instant::now();
        drop(b);
        a.acquire().await;
        let failover = crashed.elapsed();
        println!("failover after a crash: {failover:?}");
        assert!(
            failover >= LEASE,
            "took over a live lease after {failover:?}"
        );
        assert!(
            failover < LEASE * 4,
            "a crashed leader's {LEASE:?} lease was taken only after {failover:?}"
        );
        assert!(
            handover < failover / 2,
            "a released lease took {handover:?} to change hands, a crashed leader's {failover:?}"
        );
        let lease = kubectl_lease(plane, &namespace).await?;
        assert_eq!(lease["spec"]["leaseTransitions"], 2);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_leader_whose_lease_is_taken_gives_up_at_its_next_renewal() -> anyhow::Result<()> {
    within(LIMIT, "losing the lease", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("leader-lost").await?;
        let client = plane.client().await?;
        // A renew deadline 25 retries long: giving up at the next renewal is told apart from
        // giving up at the deadline with a wide margin.
        let patient = LeaderConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            ..config(&namespace, "pod-a")
        };
        let renew_deadline = patient.renew_deadline;
        let mut leader = Elector::new(client.clone(), patient)?;
        leader.acquire().await;

        let leases: Api<Lease> = Api::namespaced(client, &namespace);
        let mut lease = leases.get("wasmop-leader").await?;
        lease.spec.as_mut().context("spec")?.holder_identity = Some("intruder".into());
        leases
            .replace("wasmop-leader", &PostParams::default(), &lease)
            .await?;
        let stolen = tokio::time::Instant::now();
        let lost = leader.hold().await;
        let gave_up = stolen.elapsed();
        println!("gave up {gave_up:?} after the lease was taken: {lost}");
        assert!(!leader.is_leader());
        let reason = lost.to_string();
        assert!(
            reason.contains("lost the lease") && reason.ends_with("now held by intruder"),
            "{reason}"
        );
        assert!(
            gave_up < renew_deadline / 2,
            "gave up {gave_up:?} after the lease was taken, not at its next renewal"
        );
        let holder = leases
            .get("wasmop-leader")
            .await?
            .spec
            .context("spec")?
            .holder_identity;
        assert_eq!(
            holder.as_deref(),
            Some("intruder"),
            "the old leader took the lease back"
        );
        Ok(())
    })
    .await
}
