//! One controller per loaded plugin: where the cache, the queue and the runtime meet.
//!
//! Sources come from the plugin's registration — its primary kind (For: the object's own key),
//! owned kinds (Owns: the controller owner's key, when it is of the primary kind) and watched
//! kinds (Watches: by controller owner, by a label naming the primary object, or through the
//! guest's `map` export) — each filtered by its predicates. Events from an informer's (re)list
//! enter at [`crate::queue::LOW_PRIORITY`]. A pool of `max_concurrent_reconciles` workers
//! handles the queue.
//!
//! A running controller can take a new version of its plugin ([`Controller::upgrade`]): the new
//! version's informers start and sync first, then new reconciles run on it while in-flight ones
//! finish on the old one, then its sources replace the old ones (queueing every object once,
//! at low priority, so everything converges to the new behaviour), and informers only the old
//! version used are released. The queue, with the keys waiting in it, carries over.

mod sources;
mod workers;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cache::{Cache, CacheError};
use crate::metrics::ControllerMetrics;
use crate::object::{GroupVersionKind, ObjectKey};
use crate::queue::{Queue, RateLimits};
use crate::runtime::Plugin;
use sources::{Informed, Sources};
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

/// A new plugin version could not take over a running controller.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    /// It reconciles another kind, so the queued keys would name other objects.
    #[error("plugin {plugin}: the new version reconciles {new}, the running one {old}")]
    PrimaryChanged {
        /// The plugin.
        plugin: String,
        /// The running version's primary kind.
        old: String,
        /// The new version's.
        new: String,
    },
    /// Its informers could not start.
    #[error("plugin {plugin}: {source}")]
    Cache {
        /// The plugin.
        plugin: String,
        /// What the cache said.
        source: Box<CacheError>,
    },
}

/// A running controller.
pub struct Controller {
    queue: Arc<Queue<ObjectKey>>,
    stats: Arc<Stats>,
    metrics: ControllerMetrics,
    workers: Workers,
    sources: Sources,
}

impl Controller {
    /// Starts the informers the plugin needs, waits for them to sync, subscribes its sources and
    /// starts its workers.
    pub async fn start(
        cache: &Cache,
        plugin: Arc<Plugin>,
        metrics: ControllerMetrics,
    ) -> Result<Self, CacheError> {
        let queue = Arc::new(Queue::new(RateLimits::default(), Arc::new(metrics.clone())));
        let informed = Informed::start(cache, &plugin).await?;
        let sources = informed.subscribe(&plugin, &queue);
        let stats = Arc::new(Stats::default());
        let workers = plugin.max_concurrent_reconciles();
        metrics.started(&plugin, &queue, workers as usize);
        tracing::info!(plugin = plugin.name(), workers, "controller started");
        Ok(Controller {
            workers: Workers::start(plugin, queue.clone(), stats.clone(), metrics.clone()),
            queue,
            stats,
            metrics,
            sources,
        })
    }

    /// Hands the controller to `plugin`, a new version of its plugin; returns the old version.
    pub async fn upgrade(
        &mut self,
        cache: &Cache,
        plugin: Arc<Plugin>,
    ) -> Result<Arc<Plugin>, UpgradeError> {
        let current = self.workers.current();
        let kind = |p: &Plugin| describe(&p.registration().primary);
        if plugin.registration().primary != current.registration().primary {
            return Err(UpgradeError::PrimaryChanged {
                plugin: plugin.name().to_owned(),
                old: kind(&current),
                new: kind(&plugin),
            });
        }
        let informed =
            Informed::start(cache, &plugin)
                .await
                .map_err(|source| UpgradeError::Cache {
                    plugin: plugin.name().to_owned(),
                    source: Box::new(source),
                })?;
        let old = self.workers.swap(plugin.clone());
        let old_sources =
            std::mem::replace(&mut self.sources, informed.subscribe(&plugin, &self.queue));
        drop(old_sources);
        self.metrics.upgraded(&old, &plugin);
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

    /// How many times `key` has been retried since it last succeeded.
    pub fn retries(&self, key: &ObjectKey) -> u32 {
        self.queue.retries(key)
    }

    /// The plugin version new reconciles run on.
    pub fn plugin(&self) -> Arc<Plugin> {
        self.workers.current()
    }

    /// Stops taking new work: keys still queued are dropped (the next start lists them again).
    pub fn shutdown(&self) {
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
        self.metrics.stopped(&plugin);
        drained
    }
}

fn describe(kind: &GroupVersionKind) -> String {
    match kind.group.as_str() {
        "" => format!("{}/{}", kind.version, kind.kind),
        group => format!("{group}/{}/{}", kind.version, kind.kind),
    }
}
