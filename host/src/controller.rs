//! One controller per loaded plugin: where the cache, the queue and the runtime meet.
//!
//! Sources come from the plugin's registration — its primary kind (For: the object's own key),
//! owned kinds (Owns: the controller owner's key, when it is of the primary kind) and watched
//! kinds (Watches: by controller owner, by a label naming the primary object, or through the
//! guest's `map` export) — each filtered by its predicates. Events from an informer's (re)list
//! enter at [`LOW_PRIORITY`]. A pool of `max_concurrent_reconciles` workers handles the queue:
//! done → forget; requeue-after → forget and add after the delay; an error, a trap or a timeout
//! → rate-limited retry; a terminal error → forget and report.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::cache::{
    Cache, CacheError, CachedObject, Change, Handler, IndexSpec, Informer, Subscription,
};
use crate::metrics::{ControllerMetrics, ReconcileResult};
use crate::object::{GroupVersionKind, ObjectKey};
use crate::queue::{LOW_PRIORITY, Queue, RateLimits};
use crate::runtime::{DispatchError, Mapping, Outcome, Plugin, Predicate, Registration, Verb};
use crate::selector::LabelSelector;

/// How many events for the guest's `map` may wait before handlers start spawning.
const MAP_BACKLOG: usize = 1024;

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

/// A running controller.
pub struct Controller {
    plugin: Arc<Plugin>,
    queue: Arc<Queue<ObjectKey>>,
    stats: Arc<Stats>,
    tasks: Vec<JoinHandle<()>>,
    _subscriptions: Vec<Subscription>,
    _informers: Vec<Arc<Informer>>,
}

type Map = Arc<dyn Fn(&CachedObject) -> Vec<ObjectKey> + Send + Sync>;

impl Controller {
    /// Starts the informers the plugin needs, waits for them to sync, subscribes its sources and
    /// starts its workers.
    pub async fn start(
        cache: &Cache,
        plugin: Arc<Plugin>,
        metrics: ControllerMetrics,
    ) -> Result<Self, CacheError> {
        let registration = plugin.registration().clone();
        let queue = Arc::new(Queue::new(RateLimits::default(), Arc::new(metrics.clone())));
        let mut informers = Vec::new();
        for kind in informed_kinds(&registration) {
            informers.push(cache.informer(&kind).await?);
        }
        for index in &registration.indexes {
            let informer = informers
                .iter()
                .find(|i| *i.kind() == index.kind)
                .expect("indexed kinds are informed");
            informer.add_index(IndexSpec {
                name: index.name.clone(),
                field: index.field.clone(),
            });
        }
        for informer in &informers {
            informer.wait_synced().await;
        }
        let informer_of = |kind: &GroupVersionKind| {
            informers
                .iter()
                .find(|i| i.kind() == kind)
                .expect("informed")
                .clone()
        };

        let mut tasks = Vec::new();
        let mut subscriptions = Vec::new();
        let primary = registration.primary.clone();
        let own_key: Map = Arc::new(|object: &CachedObject| vec![object.key.clone()]);
        subscriptions.push(source(
            &informer_of(&primary),
            &queue,
            &registration.predicates,
            own_key,
        ));
        for owned in &registration.owns {
            subscriptions.push(source(
                &informer_of(owned),
                &queue,
                &[],
                owner_key(&primary),
            ));
        }
        for watch in &registration.watches {
            let map = match &watch.mapping {
                Mapping::ControllerOwner => owner_key(&primary),
                Mapping::Label(label) => label_key(label.clone()),
                Mapping::Guest => {
                    let (sender, receiver) = mpsc::channel(MAP_BACKLOG);
                    tasks.push(tokio::spawn(map_through_guest(
                        plugin.clone(),
                        watch.kind.clone(),
                        receiver,
                        queue.clone(),
                    )));
                    guest_key(sender)
                }
            };
            subscriptions.push(source(
                &informer_of(&watch.kind),
                &queue,
                &watch.predicates,
                map,
            ));
        }

        let stats = Arc::new(Stats::default());
        let workers = plugin.max_concurrent_reconciles();
        metrics.started(&plugin, &queue, workers as usize);
        for _ in 0..workers {
            tasks.push(tokio::spawn(work(
                plugin.clone(),
                queue.clone(),
                stats.clone(),
                metrics.clone(),
            )));
        }
        tracing::info!(plugin = plugin.name(), workers, "controller started");
        Ok(Controller {
            plugin,
            queue,
            stats,
            tasks,
            _subscriptions: subscriptions,
            _informers: informers,
        })
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

    /// The plugin it runs.
    pub fn plugin(&self) -> &Arc<Plugin> {
        &self.plugin
    }

    /// Stops taking new work: keys still queued are dropped (the next start lists them again).
    pub fn shutdown(&self) {
        self.queue.shutdown();
    }

    /// Stops taking new work and waits until in-flight reconciles finish or `deadline` passes,
    /// then ends its tasks and releases the informers; returns whether every reconcile finished.
    pub async fn stop(self, deadline: tokio::time::Instant) -> bool {
        let drained = tokio::time::timeout_at(deadline, self.queue.shutdown_with_drain())
            .await
            .is_ok();
        if !drained {
            tracing::warn!(
                plugin = self.plugin.name(),
                "grace period over with reconciles still running; abandoning them"
            );
        }
        for task in self.tasks {
            task.abort();
            let _ = task.await;
        }
        drained
    }
}

/// The kinds the plugin needs informers for: primary, owned, watched, indexed, and any it may read.
fn informed_kinds(registration: &Registration) -> Vec<GroupVersionKind> {
    let readable = registration
        .permissions
        .iter()
        .filter(|p| {
            p.verbs
                .iter()
                .any(|v| matches!(v, Verb::Get | Verb::List | Verb::Watch))
        })
        .map(|p| &p.kind);
    let indexed = registration.indexes.iter().map(|i| &i.kind);
    let mut kinds: Vec<GroupVersionKind> = Vec::new();
    for kind in registration.cached_kinds().chain(readable).chain(indexed) {
        if !kinds.contains(kind) {
            kinds.push(kind.clone());
        }
    }
    kinds
}

/// Subscribes a source: events that pass `predicates` are mapped to keys and queued.
fn source(
    informer: &Arc<Informer>,
    queue: &Arc<Queue<ObjectKey>>,
    predicates: &[Predicate],
    map: Map,
) -> Subscription {
    let queue = Arc::downgrade(queue);
    let predicates = predicates.to_vec();
    let handler: Handler = Arc::new(move |change: &Change| {
        let (Some(queue), Some(object)) =
            (queue.upgrade(), change.new.as_ref().or(change.old.as_ref()))
        else {
            return;
        };
        if !passes(&predicates, change) {
            return;
        }
        let priority = if change.initial { LOW_PRIORITY } else { 0 };
        for key in map(object) {
            queue.add_with_priority(key, priority);
        }
    });
    let subscription = informer.subscribe(handler.clone());
    for object in informer.list(None, &LabelSelector::default()) {
        handler(&Change {
            old: None,
            new: Some(object),
            initial: true,
        });
    }
    subscription
}

/// Predicates filter updates only; adds and deletes always pass.
fn passes(predicates: &[Predicate], change: &Change) -> bool {
    let (Some(old), Some(new)) = (&change.old, &change.new) else {
        return true;
    };
    predicates.iter().all(|predicate| match predicate {
        Predicate::GenerationChanged => old.generation != new.generation,
        Predicate::LabelsChanged => old.labels != new.labels,
        Predicate::AnnotationsChanged => old.annotations != new.annotations,
    })
}

fn owner_key(primary: &GroupVersionKind) -> Map {
    let primary = primary.clone();
    Arc::new(move |object: &CachedObject| {
        let Some(owner) = &object.controller else {
            return Vec::new();
        };
        let group = owner
            .api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group);
        if owner.kind == primary.kind && group == primary.group {
            vec![ObjectKey::new(
                object.key.namespace.clone(),
                owner.name.clone(),
            )]
        } else {
            Vec::new()
        }
    })
}

fn label_key(label: String) -> Map {
    Arc::new(move |object: &CachedObject| {
        object
            .labels
            .get(&label)
            .map(|name| ObjectKey::new(object.key.namespace.clone(), name.clone()))
            .into_iter()
            .collect()
    })
}

fn guest_key(sender: mpsc::Sender<Arc<CachedObject>>) -> Map {
    Arc::new(move |object: &CachedObject| {
        let object = Arc::new(object.clone());
        if let Err(mpsc::error::TrySendError::Full(object)) = sender.try_send(object) {
            let sender = sender.clone();
            tokio::spawn(async move { sender.send(object).await });
        }
        Vec::new()
    })
}

async fn map_through_guest(
    plugin: Arc<Plugin>,
    kind: GroupVersionKind,
    mut objects: mpsc::Receiver<Arc<CachedObject>>,
    queue: Arc<Queue<ObjectKey>>,
) {
    while let Some(object) = objects.recv().await {
        match plugin.map(&kind, &object.json, &object.key).await {
            Ok(keys) => keys.into_iter().for_each(|key| queue.add(key)),
            Err(error) => tracing::warn!(plugin = plugin.name(), "map failed: {error}"),
        }
    }
}

async fn work(
    plugin: Arc<Plugin>,
    queue: Arc<Queue<ObjectKey>>,
    stats: Arc<Stats>,
    metrics: ControllerMetrics,
) {
    while let Some(key) = queue.get().await {
        metrics.worker_busy(true);
        let started = Instant::now();
        let outcome = plugin.reconcile(&key).await;
        let took = started.elapsed();
        match outcome {
            Ok(Outcome::Done) => {
                queue.forget(&key);
                stats.success.fetch_add(1, Ordering::Relaxed);
                metrics.reconciled(ReconcileResult::Success, took, false);
            }
            Ok(Outcome::RequeueAfter { after, priority }) => {
                queue.forget(&key);
                queue.add_after(key.clone(), after, priority.unwrap_or(0));
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
                queue.add_rate_limited(key.clone(), 0);
                stats.error.fetch_add(1, Ordering::Relaxed);
                metrics.reconciled(ReconcileResult::Error, took, false);
                if let Some(kind) = error.trap_kind() {
                    metrics.trapped(kind);
                }
            }
        }
        queue.done(&key);
        metrics.worker_busy(false);
    }
}
