//! Who the live replicas of a sharded operator are: each holds a Lease of its own (a campaign
//! for a Lease no one else asks for), labelled with its group, and a replica reading the group
//! counts a member live until its record has gone unchanged for its lease duration by the
//! reader's own clock, as a candidate judges a leader. A member first seen counts as live: a
//! reader that has just started cannot tell, and taking a live member's objects is the one
//! mistake sharding must not make. Every sharding replica observes its group from its start
//! ([`Members::observe`]), so a replica that comes to lead already knows how long a dead member's
//! Lease has gone unchanged, and reassigns its objects without first waiting a lease duration of
//! its own. The leader's sharder shows the count it assigns to as `wasmop_shard_members`
//! ([`Shown`]).

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::ListParams;
use prometheus::{IntGauge, Opts};
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

use crate::leader::{LeaderConfig, Observed};
use crate::metrics::{Collecting, Metrics};
use crate::shard::ring::Ring;

/// The label on every member Lease, whose value is the group (the leader election's Lease name).
pub const GROUP_LABEL: &str = "shard.wasmop.dev/group";

/// A member's name in its group, short enough for a label value: twelve hex digits of the
/// digest of its identity (`<pod>_<random>`, which the Lease keeps as its holder).
pub fn member_id(identity: &str) -> String {
    let digest = Sha256::digest(identity.as_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// What the member Leases of `group` are named before their member's id.
fn prefix(group: &str) -> String {
    format!("{group}-member-")
}

/// The configuration of the member Lease of `leader.identity` in `leader`'s group: same
/// namespace and durations, named after the group and the member's id, with the group's label.
pub fn member_lease(leader: &LeaderConfig) -> LeaderConfig {
    let mut member = LeaderConfig {
        name: format!("{}{}", prefix(&leader.name), member_id(&leader.identity)),
        ..leader.clone()
    };
    member
        .labels
        .insert(GROUP_LABEL.to_owned(), leader.name.clone());
    member
}

/// The members of one group as this replica sees them.
pub struct Members {
    api: Api<Lease>,
    selector: String,
    prefix: String,
    lease_duration: Duration,
    observed: HashMap<String, Observed>,
}

impl Members {
    /// Reads the member Leases of `leader`'s group.
    pub fn new(client: kube::Client, leader: &LeaderConfig) -> Self {
        Members {
            api: Api::namespaced(client, &leader.namespace),
            selector: format!("{GROUP_LABEL}={}", leader.name),
            prefix: prefix(&leader.name),
            lease_duration: leader.lease_duration,
            observed: HashMap::new(),
        }
    }

    /// Reads the live members now and every `poll` after, in a task of its own that ends when
    /// the last receiver is dropped; the receiver holds `None` until the first read succeeds,
    /// and a failed read keeps the last ring.
    pub fn observe(mut self, poll: Duration) -> watch::Receiver<Option<Ring>> {
        let (sender, receiver) = watch::channel(None);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(poll);
            tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = sender.closed() => return,
                }
                match self.live().await {
                    Ok(ring) => {
                        sender.send_if_modified(|seen| changed(seen, ring));
                    }
                    Err(error) => tracing::warn!("reading the shard members failed: {error}"),
                }
            }
        });
        receiver
    }

    /// Lists the group's Leases and returns the ring of the ids of members live now: held, and
    /// changed within their lease duration. Released Leases (no holder) drop out at once.
    pub async fn live(&mut self) -> Result<Ring, kube::Error> {
        let selector = ListParams::default().labels(&self.selector);
        let leases = self.api.list(&selector).await?;
        let mut observed = HashMap::new();
        for lease in leases.items {
            let Some(name) = lease.metadata.name else {
                continue;
            };
            let previous = self.observed.remove(&name);
            let seen = Observed::update(previous, lease.spec.unwrap_or_default());
            observed.insert(name, seen);
        }
        self.observed = observed;
        let live = self
            .observed
            .iter()
            .filter(|(_, seen)| seen.holder().is_some() && !seen.expired(self.lease_duration))
            .filter_map(|(name, _)| name.strip_prefix(&self.prefix).map(str::to_owned));
        Ok(Ring::new(live))
    }
}

/// Puts `ring` in `seen` if it differs; true then.
fn changed(seen: &mut Option<Ring>, ring: Ring) -> bool {
    if seen.as_ref() == Some(&ring) {
        return false;
    }
    tracing::info!(members = ?ring.members(), "shard members changed");
    *seen = Some(ring);
    true
}

/// The `wasmop_shard_members` gauge of one group, shown while it lives.
pub struct Shown {
    gauge: IntGauge,
    _registered: Option<Collecting>,
}

impl Shown {
    /// Shows the count of `group`'s members in `metrics`.
    pub fn new(metrics: &Metrics, group: &str) -> Self {
        let help = "Replicas the leader counts live and assigns objects to, by shard group";
        let opts = Opts::new("wasmop_shard_members", help).const_label("group", group);
        let gauge = IntGauge::with_opts(opts).expect("a constant metric");
        let registered = metrics
            .register(gauge.clone())
            .inspect_err(|error| tracing::warn!("the shard members gauge is not shown: {error}"))
            .ok();
        Shown {
            gauge,
            _registered: registered,
        }
    }

    /// Shows `ring`'s count.
    pub fn set(&self, ring: &Ring) {
        let count = i64::try_from(ring.members().len()).unwrap_or(i64::MAX);
        self.gauge.set(count);
    }
}
