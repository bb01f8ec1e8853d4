//! One controller per loaded plugin: where the cache, the queue and the runtime meet.
//!
//! Sources come from the plugin's registration — its primary kind (For: the object's own key),
//! owned kinds (Owns: the controller owner's key, when it is of the primary kind) and watched
//! kinds (Watches: by controller owner, by a label naming the primary object, or through the
//! guest's `map` export) — each filtered by its predicates. Events from an informer's (re)list
//! enter at [`crate::queue::LOW_PRIORITY`]. A pool of `max_concurrent_reconciles` workers
//! handles the queue.
//!
//! Starting takes two steps so that no caller waits on the cluster while holding anything:
//! [`Controller::prepare`] starts and syncs the informers a plugin version needs (slow, under a
//! time limit), then [`Controller::start`] or [`Controller::upgrade`] puts the [`Prepared`]
//! version to work at once.
//!
//! A running controller can take a new version of its plugin ([`Controller::upgrade`]): new
//! reconciles run on it while in-flight ones finish on the old one, its sources replace the old
//! ones (queueing every object once, at low priority, so everything converges to the new
//! behaviour), and informers only the old version used are released. The queue, with the keys
//! waiting in it, carries over.
//!
//! Imports: the contract, `cache`, `queue`, `shard`, `metrics` and `runtime` (it dispatches into
//! plugins); never `plugins`, `manager` or `testing`: the plugin supervisor drives controllers, not
//! the other way round.

mod guest;
mod handover;
mod metrics;
mod sources;
mod warmup;
mod workers;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::cache::{Cache, CacheError, Informer};
use crate::metrics::{Collecting, ControllerMetrics};
use crate::queue::{Queue, RateLimits};
use crate::runtime::Plugin;
pub use handover::Handover;
use metrics::QueueGauges;
use sources::{Informed, Sources};
pub use warmup::warm;
use wasmop_contract::object::{GroupVersionKind, ObjectKey};
use workers::Workers;

/// Reconcile results so far, by kind of result.
#[derive(Debug, Default)]
pub struct Stats {
    /// Reconciles that returned done.
    pub success: AtomicU64,
    /// Reconciles that asked to be requeued after a delay.
    pub requeue_after: AtomicU64,
    /// Reconciles that failed and were retried (errors, traps, timeouts).
    pub error: AtomicU64,
    /// Reconciles that failed terminally.
    pub terminal: AtomicU64,
}

impl Stats {
    /// All reconciles so far.
    pub fn total(&self) -> u64 {
        [
            &self.success,
            &self.requeue_after,
            &self.error,
            &self.terminal,
        ]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
    }
}

/// A plugin version whose informers have synced, ready to start or take over a controller.
pub struct Prepared {
    plugin: Arc<Plugin>,
    informed: Informed,
    handover: Option<Arc<Handover>>,
}

impl Prepared {
    /// The plugin version.
    pub fn plugin(&self) -> &Arc<Plugin> {
        &self.plugin
    }
}

/// A controller's live figures, readable without holding the controller.
#[derive(Clone)]
pub struct Progress {
    queue: Arc<Queue<ObjectKey>>,
    stats: Arc<Stats>,
    informers: Vec<Weak<Informer>>,
}

impl Progress {
    /// Keys waiting in the queue.
    pub fn queue_depth(&self) -> usize {
        self.queue.len()
    }

    /// Reconciles since the controller started.
    pub fn reconciles(&self) -> u64 {
        self.stats.total()
    }

    /// Why the controller does not see one of its kinds now: the first informer whose watch is
    /// failing (its CRD deleted, its list refused), with the watch's error.
    pub fn degraded(&self) -> Option<String> {
        self.informers.iter().find_map(|informer| {
            let informer = informer.upgrade()?;
            let error = informer.last_error()?;
            Some(format!("watching {}: {error}", describe(informer.kind())))
        })
    }
}

/// A running controller.
pub struct Controller {
    queue: Arc<Queue<ObjectKey>>,
    stats: Arc<Stats>,
    metrics: ControllerMetrics,
    workers: Workers,
    sources: Sources,
    /// The queue's gauges, collected until the controller shuts down.
    gauges: std::sync::Mutex<Option<Collecting>>,
}

impl Controller {
    /// Starts the informers `plugin` needs and waits up to `allowed` for them to sync; on a
    /// sharded replica, `handover` lets go the objects the leader moves elsewhere.
    pub async fn prepare(
        cache: &Cache,
        plugin: Arc<Plugin>,
        allowed: Duration,
        handover: Option<Arc<Handover>>,
    ) -> Result<Prepared, CacheError> {
        let informed = Informed::start(cache, &plugin, allowed).await?;
        Ok(Prepared {
            plugin,
            informed,
            handover,
        })
    }

    /// Subscribes the prepared version's sources and starts its workers.
    pub fn start(prepared: Prepared, metrics: ControllerMetrics) -> Self {
        let Prepared {
            plugin,
            informed,
            handover,
        } = prepared;
        let queue = Arc::new(Queue::new(RateLimits::default(), Arc::new(metrics.clone())));
        let drain = handover.as_ref().map(|h| h.drain_label());
        let sources = informed.subscribe(&plugin, &queue, drain);
        let stats = Arc::new(Stats::default());
        let workers = plugin.max_concurrent_reconciles();
        metrics.started(&plugin.registration().version, workers as usize);
        let gauges = metrics
            .metrics()
            .register(QueueGauges::new(metrics.name(), &queue))
            .inspect_err(|error| {
                tracing::warn!(
                    plugin = plugin.name(),
                    "queue gauges not registered: {error}"
                )
            })
            .ok();
        tracing::info!(plugin = plugin.name(), workers, "controller started");
        Controller {
            workers: Workers::start(
                plugin,
                queue.clone(),
                (stats.clone(), metrics.clone()),
                handover,
            ),
            queue,
            stats,
            metrics,
            sources,
            gauges: std::sync::Mutex::new(gauges),
        }
    }

    /// Hands the controller to the prepared version of its plugin and returns the old version,
    /// or gives `prepared` back when it reconciles another kind (the queued keys would name other
    /// objects), so it needs a controller of its own.
    pub fn upgrade(&mut self, prepared: Prepared) -> Result<Arc<Plugin>, Prepared> {
        let current = self.workers.current();
        if prepared.plugin.registration().primary != current.registration().primary {
            tracing::info!(plugin = current.name(), from = %describe(&current.registration().primary), to = %describe(&prepared.plugin.registration().primary), "the new version reconciles another kind: starting a new controller");
            return Err(prepared);
        }
        let Prepared {
            plugin,
            informed,
            handover,
        } = prepared;
        let old = self.workers.swap(plugin.clone());
        let drain = handover.as_ref().map(|h| h.drain_label());
        let sources = informed.subscribe(&plugin, &self.queue, drain);
        let old_sources = std::mem::replace(&mut self.sources, sources);
        drop(old_sources);
        self.metrics.upgraded(
            &old.registration().version,
            &plugin.registration().version,
            plugin.max_concurrent_reconciles() as usize,
        );
        tracing::info!(plugin = plugin.name(), from = %old.registration().version, to = %plugin.registration().version, "plugin upgraded");
        Ok(old)
    }

    /// Reconcile results so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Keys waiting in the queue.
    pub fn queue_depth(&self) -> usize {
        self.queue.len()
    }

    /// Its live figures, for status readers.
    pub fn progress(&self) -> Progress {
        Progress {
            queue: self.queue.clone(),
            stats: self.stats.clone(),
            informers: self
                .sources
                .informers()
                .iter()
                .map(Arc::downgrade)
                .collect(),
        }
    }

    /// How many times `key` has been retried since it last succeeded.
    pub fn retries(&self, key: &ObjectKey) -> u32 {
        self.queue.retries(key)
    }

    /// The plugin version new reconciles run on.
    pub fn plugin(&self) -> Arc<Plugin> {
        self.workers.current()
    }

    /// Stops taking new work: keys still queued are dropped (the next start lists them again),
    /// and the queue's gauges leave the metrics.
    pub fn shutdown(&self) {
        self.gauges.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.queue.shutdown();
    }

    /// Stops taking new work and waits until in-flight reconciles finish or `deadline` passes,
    /// then ends its workers and releases the informers; returns whether every reconcile
    /// finished.
    pub async fn stop(self, deadline: tokio::time::Instant) -> bool {
        let drained = tokio::time::timeout_at(deadline, self.queue.shutdown_with_drain())
            .await
            .is_ok();
        let plugin = self.workers.current();
        if !drained {
            tracing::warn!(
                plugin = plugin.name(),
                "grace period over with reconciles still running; abandoning them"
            );
        }
        self.workers.abort().await;
        self.metrics.stopped(&plugin.registration().version);
        drained
    }
}

fn describe(kind: &GroupVersionKind) -> String {
    match kind.group.as_str() {
        "" => format!("{}/{}", kind.version, kind.kind),
        group => format!("{group}/{}/{}", kind.version, kind.kind),
    }
}
