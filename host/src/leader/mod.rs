//! Lease-based leader election (`coordination.k8s.io/v1`) with client-go's semantics, so wasmop
//! replicas and client-go tools read the same Lease the same way.
//!
//! A candidate tries to acquire or renew every `retry_period`. It may take the Lease when it is
//! free (no holder, as a graceful release leaves it) or when the record has not changed for
//! `lease_duration` by the candidate's own clock — remote timestamps are never compared with
//! local ones. Writes are updates with the read `resourceVersion`, so two candidates cannot both
//! win. A leader that has not renewed for `renew_deadline` (less than `lease_duration`) gives up
//! before anyone else may take over; `leaseTransitions` counts changes of holder.
//!
//! Fencing: the renew deadline counts from the moment the last successful renewal was *sent*
//! (the record it wrote is at least that recent, so no other candidate may take the Lease until
//! `lease_duration` after it), and every request is cut off at that deadline. A renewal that
//! hangs — an apiserver paused or partitioned away — therefore ends the leadership before
//! `lease_duration` has passed since the last record, however long the request would have hung.
//!
//! Written here rather than taken from a crate because the maintained Lease crates for kube
//! offer whole-second durations without client-go's renew deadline.
//!
//! Imports: nothing of the host; `shard` and `manager` build on it.

mod campaign;

pub use campaign::{Campaign, Leadership};

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use tokio::time::Instant;

/// Leader election could not run.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The durations break client-go's rules.
    #[error("leader election: {0}")]
    Config(String),
    /// The leader could not renew the Lease within its renew deadline.
    #[error("lost the lease {namespace}/{name}: {reason}")]
    Lost {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
        /// Why.
        reason: String,
    },
}

/// Which Lease, who we are, and client-go's three durations.
#[derive(Debug, Clone)]
pub struct LeaderConfig {
    /// The Lease's name.
    pub name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// This candidate's holderIdentity.
    pub identity: String,
    /// How long a Lease stays held after its last observed change.
    pub lease_duration: Duration,
    /// How long a leader keeps trying to renew before it gives up.
    pub renew_deadline: Duration,
    /// How often candidates try to acquire and leaders renew.
    pub retry_period: Duration,
    /// Labels the Lease is created with, so a group of Leases can be listed together.
    pub labels: BTreeMap<String, String>,
}

impl LeaderConfig {
    /// controller-runtime's defaults (15 s, 10 s, 2 s) for Lease `namespace/name`.
    pub fn new(namespace: &str, name: &str, identity: String) -> Self {
        LeaderConfig {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            identity,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            labels: BTreeMap::new(),
        }
    }

    /// Rejects durations client-go would reject.
    pub fn validate(&self) -> Result<(), LeaderError> {
        let fail = |m: &str| Err(LeaderError::Config(m.to_owned()));
        if self.lease_duration <= self.renew_deadline {
            return fail("the lease duration must be greater than the renew deadline");
        }
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return fail("the renew deadline must be greater than 1.2 x the retry period");
        }
        if self.identity.is_empty() {
            return fail("the identity must not be empty");
        }
        Ok(())
    }
}

/// `prefix` (the pod name) and a random suffix, unique per process.
pub fn identity(prefix: &str) -> String {
    let random = random();
    format!("{prefix}_{:08x}", random as u32)
}

/// One candidate for one Lease.
pub struct Elector {
    api: Api<Lease>,
    config: LeaderConfig,
    /// The last record seen and when (our clock) it last changed.
    observed: Option<Observed>,
    leading: bool,
    /// When the last write of ours that succeeded was sent.
    renewed: Option<Instant>,
}

impl Elector {
    /// A candidate that has not tried yet.
    pub fn new(client: kube::Client, config: LeaderConfig) -> Result<Self, LeaderError> {
        config.validate()?;
        Ok(Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
            leading: false,
            renewed: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LeaderConfig {
        &self.config
    }

    /// Whether the last attempt left us holding the Lease.
    pub fn is_leader(&self) -> bool {
        self.leading
    }

    /// Returns once this candidate holds the Lease.
    pub async fn acquire(&mut self) {
        loop {
            let sent = Instant::now();
            let deadline = sent + self.config.renew_deadline;
            if tokio::time::timeout_at(deadline, self.try_acquire_or_renew())
                .await
                .unwrap_or(false)
            {
                self.renewed = Some(sent);
                tracing::info!(lease = %self.config.name, identity = %self.config.identity, "became leader");
                return;
            }
            tokio::time::sleep(jittered(self.config.retry_period)).await;
        }
    }

    /// Renews every retry period; returns when the Lease is lost: taken by another, or not
    /// renewed within the renew deadline of the last renewal sent that succeeded.
    pub async fn hold(&mut self) -> LeaderError {
        let mut last_renewal = self.renewed.unwrap_or_else(Instant::now);
        loop {
            let deadline = last_renewal + self.config.renew_deadline;
            let next = Instant::now() + self.config.retry_period;
            tokio::time::sleep_until(next.min(deadline)).await;
            let sent = Instant::now();
            let renewed = tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await;
            if renewed == Ok(true) {
                last_renewal = sent;
            } else if !self.leading || Instant::now() >= deadline {
                self.leading = false;
                let holder = self.observed.as_ref().and_then(Observed::holder);
                let reason = match holder {
                    Some(other) if other != self.config.identity => format!("now held by {other}"),
                    _ => format!("not renewed for {:?}", last_renewal.elapsed()),
                };
                return LeaderError::Lost {
                    namespace: self.config.namespace.clone(),
                    name: self.config.name.clone(),
                    reason,
                };
            }
        }
    }

    /// Hands the Lease back (no holder), so a follower takes over at its next retry.
    pub async fn release(&mut self) {
        if !self.leading {
            return;
        }
        self.leading = false;
        let Ok(Some(mut lease)) = self.api.get_opt(&self.config.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(&self.config.identity) {
            return;
        }
        let now = MicroTime(Timestamp::now());
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now.clone());
        spec.acquire_time = Some(now);
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => tracing::info!(lease = %self.config.name, "released the lease"),
            Err(error) => {
                tracing::warn!(lease = %self.config.name, "releasing the lease failed: {error}")
            }
        }
    }

    /// One round of client-go's tryAcquireOrRenew; true when we hold the Lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let held = match self.api.get_opt(&self.config.name).await {
            Ok(held) => held,
            Err(error) => {
                tracing::debug!("reading the lease failed: {error}");
                return false;
            }
        };
        let Some(mut lease) = held else {
            return self.create().await;
        };
        let old = lease.spec.clone().unwrap_or_default();
        self.observe(&old);
        let holder = old.holder_identity.as_deref().unwrap_or_default();
        let mine = holder == self.config.identity;
        if !mine && !holder.is_empty() && !self.expired() {
            self.leading = false;
            return false;
        }
        lease.spec = Some(self.record(Some(&old)));
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => self.won(written),
            Err(error) => {
                tracing::debug!("updating the lease failed: {error}");
                false
            }
        }
    }

    async fn create(&mut self) -> bool {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.config.name.clone()),
                namespace: Some(self.config.namespace.clone()),
                labels: Some(self.config.labels.clone()).filter(|l| !l.is_empty()),
                ..Default::default()
            },
            spec: Some(self.record(None)),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(written) => self.won(written),
            Err(error) => {
                tracing::debug!("creating the lease failed: {error}");
                false
            }
        }
    }

    fn won(&mut self, written: Lease) -> bool {
        self.observed = Some(Observed::update(None, written.spec.unwrap_or_default()));
        self.leading = true;
        true
    }

    /// Our record, continuing `old`'s acquire time and transition count.
    fn record(&self, old: Option<&LeaseSpec>) -> LeaseSpec {
        let now = MicroTime(Timestamp::now());
        let previous = old.and_then(|o| o.holder_identity.as_deref());
        let transitions = old.and_then(|o| o.lease_transitions).unwrap_or(0);
        let (acquire_time, transitions) = match (previous, old) {
            (Some(holder), Some(old)) if holder == self.config.identity => {
                (old.acquire_time.clone(), transitions)
            }
            (None, None) => (Some(now.clone()), 0),
            _ => (Some(now.clone()), transitions + 1),
        };
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_duration.as_secs().max(1) as i32),
            acquire_time,
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    /// Notes when the record last changed, by our clock.
    fn observe(&mut self, spec: &LeaseSpec) {
        self.observed = Some(Observed::update(self.observed.take(), spec.clone()));
    }

    fn expired(&self) -> bool {
        self.observed
            .as_ref()
            .is_none_or(|o| o.expired(self.config.lease_duration))
    }
}

/// A Lease record as last seen, and when it last changed by our own clock: remote timestamps are
/// never compared with local ones.
#[derive(Debug, Clone)]
pub struct Observed {
    spec: LeaseSpec,
    since: Instant,
}

impl Observed {
    /// `spec` as seen now, keeping `previous`'s time when the record has not changed since.
    pub fn update(previous: Option<Observed>, spec: LeaseSpec) -> Observed {
        match previous {
            Some(previous) if previous.spec == spec => previous,
            _ => Observed {
                spec,
                since: Instant::now(),
            },
        }
    }

    /// The holder, if any.
    pub fn holder(&self) -> Option<String> {
        self.spec.holder_identity.clone().filter(|h| !h.is_empty())
    }

    /// Whether the record has gone unchanged for its lease duration (`default` if it has none).
    pub fn expired(&self, default: Duration) -> bool {
        let duration = self
            .spec
            .lease_duration_seconds
            .map_or(default, |s| Duration::from_secs(s.max(0) as u64));
        self.since.elapsed() >= duration
    }
}

/// A fresh random number: std's hasher keys are random and differ per `RandomState`.
fn random() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// client-go's jitter: up to 20% on top of the period.
fn jittered(period: Duration) -> Duration {
    let random = random();
    period.mul_f64(1.0 + 0.2 * (random % 1000) as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_client_go_rules() {
        let ok = LeaderConfig::new("ns", "lease", identity("pod"));
        assert!(ok.validate().is_ok());
        let mut bad = ok.clone();
        bad.renew_deadline = Duration::from_secs(15);
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("renew deadline")
        );
        let mut bad = ok.clone();
        bad.retry_period = Duration::from_secs(9);
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("retry period")
        );
    }

    #[test]
    fn identities_are_unique_per_call_and_keep_the_prefix() {
        let (a, b) = (identity("pod-0"), identity("pod-0"));
        assert!(a.starts_with("pod-0_") && b.starts_with("pod-0_"));
        assert_ne!(a, b);
    }

    #[test]
    fn jitter_stays_within_a_fifth() {
        let period = Duration::from_secs(2);
        for _ in 0..100 {
            let j = jittered(period);
            assert!(j >= period && j <= period.mul_f64(1.2), "{j:?}");
        }
    }
}
