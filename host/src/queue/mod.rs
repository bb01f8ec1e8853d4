//! controller-runtime's workqueue: the buffer between event handlers and reconcile workers.
//!
//! Invariants, each tested below on tokio's paused clock:
//! - a key is queued at most once (adds of a queued key are merged, keeping the higher priority);
//! - a key is never handed to two workers at once: a key added while it is being processed is
//!   held back and queued again when its worker calls [`Queue::done`];
//! - higher priority is handed out first, FIFO within a priority (a key whose priority is raised
//!   keeps its place in line by first add; [`LOW_PRIORITY`] is what
//!   events from an informer's initial list get, so a restart does not starve new work);
//! - [`Queue::add_after`] delays a key, the earliest of several delays winning;
//! - [`Queue::add_rate_limited`] delays by the larger of a per-key exponential backoff and an
//!   overall token bucket ([`RateLimits`]); [`Queue::forget`] resets the backoff;
//! - after [`Queue::shutdown`] adds are ignored, queued keys are still handed out, and `get`
//!   returns `None` once none are left; [`Queue::shutdown_with_drain`] also waits for workers;
//! - every add says why ([`Reason`]) and `get` hands the reason out with the key. While a key
//!   waits, the first reason wins, as kube-runtime's scheduler keeps the request already pending:
//!   adds merged into a queued key (or into one held by a worker) leave its reason alone, and of
//!   several delays of one key the earliest brings its reason along.
//!
//! It knows neither kube nor wasmtime: keys are any hashable value.
//!
//! Imports: `rate` only; never `controller`, which builds on it.

mod limiter;

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use limiter::RateLimiter;
pub use limiter::RateLimits;

/// The priority of events from an informer's initial list (controller-runtime's LowPriority).
pub const LOW_PRIORITY: i32 = -100;

/// Why a key was queued, in a few words ("object updated", "requeue-after"), for the log.
pub type Reason = Arc<str>;

/// Observers of a queue, for metrics; every method defaults to doing nothing.
pub trait QueueMetrics: Send + Sync {
    /// A key was added (merged adds count too).
    fn added(&self) {}
    /// A key was scheduled for a rate-limited retry.
    fn retried(&self) {}
    /// A key waited this long between being added and being handed out.
    fn queued_for(&self, _latency: Duration) {}
    /// A worker held a key this long.
    fn worked_for(&self, _duration: Duration) {}
}

/// Metrics that go nowhere.
pub struct NoMetrics;

impl QueueMetrics for NoMetrics {}

/// A work queue of keys `K`.
pub struct Queue<K> {
    state: Mutex<State<K>>,
    wake: Notify,
    drained: Notify,
    metrics: Arc<dyn QueueMetrics>,
}

struct State<K> {
    /// Keys that need processing, with their priority and when they were first added.
    pending: HashMap<K, Pending>,
    /// Pending keys not held back by a worker, in hand-out order.
    ready: BTreeMap<(Reverse<i32>, u64), K>,
    /// Keys being processed, and since when.
    processing: HashMap<K, Instant>,
    /// Delayed keys by due time.
    delayed: BTreeMap<(Instant, u64), (K, i32, Reason)>,
    /// Each delayed key's slot in `delayed`.
    due: HashMap<K, (Instant, u64)>,
    limiter: RateLimiter<K>,
    sequence: u64,
    shutting_down: bool,
}

struct Pending {
    priority: i32,
    since: Instant,
    /// The reason of the add that queued it; later adds merge into it.
    reason: Reason,
    /// Its slot in `ready`, unless a worker holds the key.
    slot: Option<u64>,
}

impl<K: Clone + Eq + Hash + Send + 'static> Queue<K> {
    /// An empty queue with the given rate limits and metrics.
    pub fn new(limits: RateLimits, metrics: Arc<dyn QueueMetrics>) -> Self {
        Queue {
            state: Mutex::new(State {
                pending: HashMap::new(),
                ready: BTreeMap::new(),
                processing: HashMap::new(),
                delayed: BTreeMap::new(),
                due: HashMap::new(),
                limiter: RateLimiter::new(limits),
                sequence: 0,
                shutting_down: false,
            }),
            wake: Notify::new(),
            drained: Notify::new(),
            metrics,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `key` at priority 0.
    pub fn add(&self, key: K, reason: impl Into<Reason>) {
        self.add_with_priority(key, 0, reason);
    }

    /// Queues `key` at `priority` (higher first); a queued key keeps the higher of its priorities.
    pub fn add_with_priority(&self, key: K, priority: i32, reason: impl Into<Reason>) {
        let mut state = self.lock();
        if state.insert(key, priority, reason.into()) {
            self.metrics.added();
            drop(state);
            self.wake.notify_one();
        }
    }

    /// Queues `key` after `delay`; of several delays of one key the earliest wins.
    pub fn add_after(&self, key: K, delay: Duration, priority: i32, reason: impl Into<Reason>) {
        if delay.is_zero() {
            return self.add_with_priority(key, priority, reason);
        }
        let mut state = self.lock();
        if state.shutting_down {
            return;
        }
        let at = Instant::now() + delay;
        if state
            .due
            .get(&key)
            .is_some_and(|(earlier, _)| *earlier <= at)
        {
            return;
        }
        if let Some(slot) = state.due.remove(&key) {
            state.delayed.remove(&slot);
        }
        state.sequence += 1;
        let slot = (at, state.sequence);
        state.due.insert(key.clone(), slot);
        state.delayed.insert(slot, (key, priority, reason.into()));
        drop(state);
        self.wake.notify_one();
    }

    /// Queues `key` after its rate-limited retry delay.
    pub fn add_rate_limited(&self, key: K, priority: i32, reason: impl Into<Reason>) {
        let delay = self.lock().limiter.when(key.clone());
        self.metrics.retried();
        self.add_after(key, delay, priority, reason);
    }

    /// Resets `key`'s backoff after it succeeded.
    pub fn forget(&self, key: &K) {
        self.lock().limiter.forget(key);
    }

    /// How many rate-limited retries `key` had since it last succeeded.
    pub fn retries(&self, key: &K) -> u32 {
        self.lock().limiter.retries(key)
    }

    /// The next key to process and why it was queued, waiting for one; `None` once shut down
    /// and empty. The caller must call [`Queue::done`] with the key when finished.
    pub async fn get(&self) -> Option<(K, Reason)> {
        loop {
            let wake = self.wake.notified();
            tokio::pin!(wake);
            wake.as_mut().enable();
            let next_due = {
                let mut state = self.lock();
                for _ in 0..state.promote_due() {
                    self.metrics.added();
                }
                if let Some((key, since, reason)) = state.pop() {
                    self.metrics.queued_for(since.elapsed());
                    return Some((key, reason));
                }
                if state.shutting_down {
                    return None;
                }
                state.delayed.first_key_value().map(|((at, _), _)| *at)
            };
            match next_due {
                Some(at) => tokio::select! {
                    _ = &mut wake => {}
                    _ = tokio::time::sleep_until(at) => {}
                },
                None => wake.await,
            }
        }
    }

    /// Marks `key` processed; if it was added meanwhile, queues it again.
    pub fn done(&self, key: &K) {
        let mut state = self.lock();
        if let Some(started) = state.processing.remove(key) {
            self.metrics.worked_for(started.elapsed());
        }
        let requeued = state.requeue(key);
        let drained = state.shutting_down && state.processing.is_empty();
        drop(state);
        if requeued {
            self.wake.notify_one();
        }
        if drained {
            self.drained.notify_waiters();
        }
    }

    /// Keys waiting to be handed out (not delayed, not held by a worker).
    pub fn len(&self) -> usize {
        self.lock().ready.len()
    }

    /// Whether no key waits to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How long keys have been in processing: the sum and the longest.
    pub fn in_progress(&self) -> (Duration, Duration) {
        let state = self.lock();
        let held = state.processing.values().map(Instant::elapsed);
        held.fold((Duration::ZERO, Duration::ZERO), |(sum, longest), d| {
            (sum + d, longest.max(d))
        })
    }

    /// Stops accepting keys and drops delayed ones; queued keys are still handed out.
    pub fn shutdown(&self) {
        let mut state = self.lock();
        state.shutting_down = true;
        state.delayed.clear();
        state.due.clear();
        drop(state);
        self.wake.notify_waiters();
    }

    /// Shuts down, then waits until every key handed out is done.
    pub async fn shutdown_with_drain(&self) {
        self.shutdown();
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.lock().processing.is_empty() {
                return;
            }
            drained.await;
        }
    }
}

impl<K: Clone + Eq + Hash> State<K> {
    /// Adds `key` unless shutting down; returns whether it is newly pending.
    fn insert(&mut self, key: K, priority: i32, reason: Reason) -> bool {
        if self.shutting_down {
            return false;
        }
        if let Some(pending) = self.pending.get_mut(&key) {
            if priority > pending.priority {
                if let Some(sequence) = pending.slot {
                    self.ready.remove(&(Reverse(pending.priority), sequence));
                    self.ready.insert((Reverse(priority), sequence), key);
                }
                pending.priority = priority;
            }
            return false;
        }
        let slot =
            (!self.processing.contains_key(&key)).then(|| self.enqueue(key.clone(), priority));
        self.pending.insert(
            key,
            Pending {
                priority,
                since: Instant::now(),
                reason,
                slot,
            },
        );
        true
    }

    fn enqueue(&mut self, key: K, priority: i32) -> u64 {
        self.sequence += 1;
        self.ready.insert((Reverse(priority), self.sequence), key);
        self.sequence
    }

    fn pop(&mut self) -> Option<(K, Instant, Reason)> {
        let (_, key) = self.ready.pop_first()?;
        let pending = self.pending.remove(&key).expect("a ready key is pending");
        self.processing.insert(key.clone(), Instant::now());
        Some((key, pending.since, pending.reason))
    }

    /// Queues `key` again if it was added while being processed.
    fn requeue(&mut self, key: &K) -> bool {
        let Some(priority) = self
            .pending
            .get(key)
            .filter(|p| p.slot.is_none())
            .map(|p| p.priority)
        else {
            return false;
        };
        let sequence = self.enqueue(key.clone(), priority);
        self.pending.get_mut(key).expect("checked above").slot = Some(sequence);
        true
    }

    /// Moves delayed keys whose time has come into the queue; returns how many became pending.
    fn promote_due(&mut self) -> usize {
        let now = Instant::now();
        let mut promoted = 0;
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (key, priority, reason) = entry.remove();
            self.due.remove(&key);
            promoted += usize::from(self.insert(key, priority, reason));
        }
        promoted
    }
}

#[cfg(test)]
mod tests;
