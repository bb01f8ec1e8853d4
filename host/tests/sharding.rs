//! Shard membership on the real apiserver: each replica's own Lease, labelled with its group, is
//! seen by the others (and by `kubectl`); a replica that stops renewing drops out once its Lease
//! has gone unchanged for its duration, one that releases drops out at once, and objects move
//! only from the member that left.

use std::time::{Duration, Instant};

use wasmop::leader::{Campaign, Elector, LeaderConfig, Leadership, identity};
use wasmop::shard::{GROUP_LABEL, Members, Ring, member_id, member_lease};
use wasmop_envtest::{shared, within};

const LIMIT: Duration = Duration::from_secs(120);
const LEASE: Duration = Duration::from_secs(3);

/// The group's leader election with short durations (controller-runtime's ratios), as `who`.
fn group(namespace: &str, who: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: LEASE,
        renew_deadline: Duration::from_millis(2000),
        retry_period: Duration::from_millis(400),
        ..LeaderConfig::new(namespace, "wasmop-leader", identity(who))
    }
}

/// Starts `who`'s member Lease and waits until it holds it; returns its member id.
async fn join(client: &kube::Client, namespace: &str, who: &str) -> (String, Campaign) {
    let config = member_lease(&group(namespace, who));
    let id = member_id(&config.identity);
    let mut campaign = Campaign::start(Elector::new(client.clone(), config).unwrap());
    while campaign.state() != Leadership::Leading {
        campaign.changed().await;
    }
    (id, campaign)
}

/// Polls `members` until its live ring has exactly `expected`; returns how long that took.
async fn until_live(members: &mut Members, expected: &[&String]) -> Duration {
    let start = Instant::now();
    let expected = Ring::new(expected.iter().map(|m| m.to_string()));
    loop {
        if members.live().await.unwrap() == expected {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn members_join_leave_and_expire_and_only_a_leavers_objects_move() {
    within(LIMIT, "shard membership", async {
        let plane = shared().await?;
        let namespace = plane.create_namespace("shards").await?;
        let client = plane.client().await?;
        let (a, first) = join(&client, &namespace, "replica-a").await;
        // `b` writes its Lease once and never renews it, as a process killed at once would.
        let config = member_lease(&group(&namespace, "replica-b"));
        let b = member_id(&config.identity);
        Elector::new(client.clone(), config)?.acquire().await;
        let (c, third) = join(&client, &namespace, "replica-c").await;
        let mut members = Members::new(client.clone(), &group(&namespace, "reader"));
        until_live(&mut members, &[&a, &b, &c]).await;

        let selector = format!("{GROUP_LABEL}=wasmop-leader");
        let listed = plane
            .run_kubectl(
                &[
                    "get", "leases", "-n", &namespace, "-l", &selector, "-o", "name",
                ],
                None,
            )
            .await?;
        assert_eq!(listed.lines().count(), 3, "{listed}");

        let three = members.live().await?;
        let keys: Vec<String> = (0..300)
            .map(|i| format!("{namespace}/webapp-{i}"))
            .collect();
        // `b` drops out once its Lease has gone unchanged for its duration.
        let expired = until_live(&mut members, &[&a, &c]).await;
        assert!(
            expired >= LEASE / 2,
            "dropped after {expired:?}, before its lease ran out"
        );
        let two = members.live().await?;
        for key in &keys {
            let (before, after) = (three.owner(key).unwrap(), two.owner(key).unwrap());
            assert!(
                before == after || before == b,
                "{key} moved from {before} to {after}"
            );
        }
        // `c` releases its Lease, as a replica stopping gracefully does: it drops out at once.
        third.release().await;
        let released = until_live(&mut members, &[&a]).await;
        assert!(released < LEASE, "dropped after {released:?}, not at once");
        first.release().await;
        anyhow::Ok(())
    })
    .await
    .unwrap();
}
