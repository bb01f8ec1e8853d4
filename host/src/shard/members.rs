//! Who the live replicas of a sharded operator are: each holds a Lease of its own (a campaign
//! for a Lease no one else asks for), labelled with its group, and a replica reading the group
//! counts a member live until its record has gone unchanged for its lease duration by the
//! reader's own clock, as a candidate judges a leader. A member first seen counts as live: a
//! reader that has just started cannot tell, and taking a live member's objects is the one
//! mistake sharding must not make. While a reader lives, `wasmop_shard_members` shows how many
//! members it counts live.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::ListParams;
use prometheus::{IntGauge, Opts};
use sha2::{Digest, Sha256};

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
    live: IntGauge,
    _registered: Option<Collecting>,
}

impl Members {
    /// Reads the member Leases of `leader`'s group, showing their count in `metrics`.
    pub fn new(client: kube::Client, leader: &LeaderConfig, metrics: &Metrics) -> Self {
        let live = live_gauge(&leader.name);
        let registered = metrics
            .register(live.clone())
            .inspect_err(|error| tracing::warn!("the shard members gauge is not shown: {error}"))
            .ok();
        Members {
            api: Api::namespaced(client, &leader.namespace),
            selector: format!("{GROUP_LABEL}={}", leader.name),
            prefix: prefix(&leader.name),
            lease_duration: leader.lease_duration,
            observed: HashMap::new(),
            live,
            _registered: registered,
        }
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
        let ring = Ring::new(live);
        self.live
            .set(i64::try_from(ring.members().len()).unwrap_or(i64::MAX));
        Ok(ring)
    }
}

/// The gauge of the members of `group` counted live.
fn live_gauge(group: &str) -> IntGauge {
    let help = "Replicas the leader counts live and assigns objects to, by shard group";
    let opts = Opts::new("wasmop_shard_members", help).const_label("group", group);
    IntGauge::with_opts(opts).expect("a constant metric")
}
