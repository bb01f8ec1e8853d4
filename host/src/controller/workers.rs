//! The worker pool: tasks that take keys from the queue and dispatch each into the plugin version
//! that is current when the key is taken.
//!
//! The queue never hands a key to two workers at once, so a key runs on one version at a time;
//! a reconcile in flight finishes on the version it started on, and the next one of that key
//! runs on whatever is current then. The pool follows the current version's
//! `max_concurrent_reconciles`: new workers start at once, surplus ones leave after their
//! current key.
//!
//! Results: done → forget; requeue-after → forget and add after the delay (or later, when the
//! plugin's requeue rate says so); an error, a trap or a
//! timeout → rate-limited retry; a terminal error → forget and report.
//!
//! On a sharded replica a key is first offered to the [`Handover`]: one the leader asked this
//! replica to let go is let go instead of reconciled, one already let go is left alone.
//!
//! Every reconcile, with its hand-over on a sharded replica, runs in an info span `reconcile`
//! with the fields `plugin`, `version`, `kind`, `object` (`namespace/name`), `reconcile_id` (16
//! hex digits, as controller-runtime's `reconcileID`) and `reason` (why the key was queued), so
//! every line logged while it runs — the guest's own, the host's errors, the worker's verdict —
//! says which reconcile it belongs to.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tracing::Instrument;

use super::Stats;
use super::handover::{Handover, Turn};
use crate::metrics::{ControllerMetrics, ReconcileResult};
use crate::queue::Queue;
use crate::runtime::{DispatchError, Outcome, Plugin};
use wasmop_contract::object::ObjectKey;

/// The running workers of one controller.
pub(super) struct Workers {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

struct Shared {
    current: RwLock<Arc<Plugin>>,
    queue: Arc<Queue<ObjectKey>>,
    stats: Arc<Stats>,
    metrics: ControllerMetrics,
    wanted: AtomicUsize,
    handover: Option<Arc<Handover>>,
}

impl Shared {
    fn current(&self) -> Arc<Plugin> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Workers {
    /// Starts `plugin`'s `max_concurrent_reconciles` workers on `queue`, offering each key to
    /// `handover` first on a sharded replica.
    pub(super) fn start(
        plugin: Arc<Plugin>,
        queue: Arc<Queue<ObjectKey>>,
        (stats, metrics): (Arc<Stats>, ControllerMetrics),
        handover: Option<Arc<Handover>>,
    ) -> Self {
        let wanted = plugin.max_concurrent_reconciles() as usize;
        let mut workers = Workers {
            shared: Arc::new(Shared {
                current: RwLock::new(plugin),
                queue,
                stats,
                metrics,
                wanted: AtomicUsize::new(0),
                handover,
            }),
            tasks: Vec::new(),
        };
        workers.resize(wanted);
        workers
    }

    /// The version new reconciles run on.
    pub(super) fn current(&self) -> Arc<Plugin> {
        self.shared.current()
    }

    /// Makes `plugin` the version new reconciles run on and resizes the pool to its
    /// concurrency; returns the previous version.
    pub(super) fn swap(&mut self, plugin: Arc<Plugin>) -> Arc<Plugin> {
        let wanted = plugin.max_concurrent_reconciles() as usize;
        let old = std::mem::replace(
            &mut *self
                .shared
                .current
                .write()
                .unwrap_or_else(|e| e.into_inner()),
            plugin,
        );
        self.resize(wanted);
        old
    }

    /// Ends every worker (wherever it is) and waits until they are gone.
    pub(super) async fn abort(self) {
        for task in self.tasks {
            task.abort();
            let _ = task.await;
        }
    }

    fn resize(&mut self, wanted: usize) {
        let running = self.shared.wanted.swap(wanted, Ordering::AcqRel);
        self.tasks.retain(|task| !task.is_finished());
        for index in running..wanted {
            self.tasks
                .push(tokio::spawn(work(self.shared.clone(), index)));
        }
    }
}

async fn work(shared: Arc<Shared>, index: usize) {
    while index < shared.wanted.load(Ordering::Acquire) {
        let Some((key, reason)) = shared.queue.get().await else {
            return;
        };
        let (shared, plugin, id) = (&*shared, shared.current(), reconcile_id());
        let span = reconcile_span(&plugin, &key, &id, &reason);
        let turn = async move {
            if hand_over(shared, &plugin, &key).await {
                reconcile(shared, plugin, key, id).await;
            }
        };
        turn.instrument(span).await;
    }
}

/// Logs (at debug) when a reconcile starts and when it ends — also when its worker is aborted
/// mid-reconcile — so the log shows exactly when this process was reconciling.
struct InFlight<'a> {
    plugin: &'a str,
    key: &'a ObjectKey,
}

impl<'a> InFlight<'a> {
    fn start(plugin: &'a str, key: &'a ObjectKey) -> Self {
        tracing::debug!(plugin, key = %key, "reconcile started");
        InFlight { plugin, key }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        tracing::debug!(plugin = self.plugin, key = %self.key, "reconcile ended");
    }
}

/// Whether `key` is to be reconciled here; when not, it is done with (or retried, when letting it
/// go failed).
async fn hand_over(shared: &Shared, plugin: &Plugin, key: &ObjectKey) -> bool {
    let Some(handover) = &shared.handover else {
        return true;
    };
    match handover.turn(plugin, key).await {
        Turn::Reconcile => return true,
        Turn::Skip => shared.queue.forget(key),
        Turn::Retry(error) => {
            tracing::warn!("{error}; retrying with backoff");
            shared
                .queue
                .add_rate_limited(key.clone(), 0, "handover retry");
        }
    }
    shared.queue.done(key);
    false
}

/// The span a worker's turn with `key` runs in: its hand-over, if any, and its reconcile.
fn reconcile_span(plugin: &Plugin, key: &ObjectKey, id: &str, reason: &str) -> tracing::Span {
    let registration = plugin.registration();
    tracing::info_span!(
        "reconcile",
        plugin = plugin.name(),
        version = registration.version.as_str(),
        kind = registration.primary.kind.as_str(),
        object = %key,
        reconcile_id = id,
        reason,
    )
}

/// A reconcile's id: 16 hex digits, never repeated by this process (a bijection of a counter)
/// and unlikely to be by another (the bijection starts from a random seed).
fn reconcile_id() -> String {
    static SEED: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| RandomState::new().hash_one(std::process::id()));
    let count = NEXT.fetch_add(1, Ordering::Relaxed);
    // splitmix64: an odd multiple, an offset and the finalizer are each one-to-one.
    let mut z = seed.wrapping_add(count.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    format!("{:016x}", z ^ (z >> 31))
}

async fn reconcile(shared: &Shared, plugin: Arc<Plugin>, key: ObjectKey, id: String) {
    let (queue, stats, metrics) = (&shared.queue, &shared.stats, &shared.metrics);
    metrics.worker_busy(true);
    let started = Instant::now();
    let in_flight = InFlight::start(plugin.name(), &key);
    let (outcome, changes) = crate::runtime::counted(plugin.reconcile_as(&key, &id)).await;
    drop(in_flight);
    let took = started.elapsed();
    ended(&outcome, took, changes);
    match outcome {
        Ok(Outcome::Done) => {
            queue.forget(&key);
            stats.success.fetch_add(1, Ordering::Relaxed);
            metrics.reconciled(ReconcileResult::Success, took, false);
        }
        Ok(Outcome::RequeueAfter { after, priority }) => {
            queue.forget(&key);
            let after = plugin.requeue_delay(after);
            queue.add_after(key.clone(), after, priority.unwrap_or(0), "requeue-after");
            stats.requeue_after.fetch_add(1, Ordering::Relaxed);
            metrics.reconciled(ReconcileResult::RequeueAfter, took, false);
        }
        Err(error @ DispatchError::Failed { terminal: true, .. }) => {
            queue.forget(&key);
            tracing::warn!("{error}; not retried");
            stats.terminal.fetch_add(1, Ordering::Relaxed);
            metrics.reconciled(ReconcileResult::Error, took, true);
        }
        Err(error) => {
            tracing::warn!("{error}; retrying with backoff");
            queue.add_rate_limited(key.clone(), 0, "error retry");
            stats.error.fetch_add(1, Ordering::Relaxed);
            metrics.reconciled(ReconcileResult::Error, took, false);
            if let Some(kind) = error.trap_kind() {
                metrics.trapped(&kind.to_string());
            }
        }
    }
    queue.done(&key);
    metrics.worker_busy(false);
}

/// Logs how a reconcile ended and how long it took: at info when it changed something (a write
/// the apiserver took, an event), so each change and each Event's reconcile id is found in the
/// log at the default level; at debug when it changed nothing. A failure's error is logged (at
/// warn) where it is handled.
fn ended(outcome: &Result<Outcome, DispatchError>, took: Duration, changes: u32) {
    if changes == 0 && !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let outcome = match outcome {
        Ok(Outcome::Done) => "done".to_owned(),
        Ok(Outcome::RequeueAfter { after, .. }) => format!("requeue-after {after:?}"),
        Err(DispatchError::Failed { terminal: true, .. }) => "terminal error".to_owned(),
        Err(_) => "error".to_owned(),
    };
    let took_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    match changes {
        0 => tracing::debug!(outcome, took_ms, changes, "reconciled"),
        _ => tracing::info!(outcome, took_ms, changes, "reconciled"),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    #[test]
    fn reconcile_ids_are_sixteen_hex_digits_and_never_repeat() {
        let ids: HashSet<String> = (0..10_000).map(|_| super::reconcile_id()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in &ids {
            assert!(
                id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
                "{id}"
            );
        }
    }
}
