//! One informer: a list+watch of one kind (kube's watcher: bookmarks, relist on 410 Gone,
//! reconnects with backoff) feeding a [`Store`] and the handlers subscribed to its changes.
//!
//! Invariants: the store lock is never held across an await or while handlers run; handlers see
//! changes in the order the store applied them; every stored object carries its `apiVersion` and
//! `kind`, also when the apiserver's list left them out; objects missing from a relist are deleted
//! (and reported) when the relist completes, within the relisted namespace; `synced` opens and
//! stays open once every namespace's first list is stored; each watch's progress (the
//! resourceVersion through which the store holds every change in its namespaces) only moves
//! forward, and only after the store holds what it covers. An object the cache cannot hold (nested
//! past the depth bound, or with mistyped metadata) is skipped, counted and logged with its kind,
//! namespace and name; it leaves the store as if deleted, and every other object keeps being
//! served. The watch tasks hold the informer weakly: dropping the last handle stops the watches.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use futures::StreamExt;
use kube::core::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::cache::object::{CachedObject, Unreadable, WatchedObject};
use crate::cache::store::{IndexSpec, Store};
use wasmop_contract::object::{GroupVersionKind, ObjectKey};
use wasmop_contract::selector::LabelSelector;

/// A change to one object, as handlers receive it.
#[derive(Debug, Clone)]
pub struct Change {
    /// The object before the change (`None` for an add).
    pub old: Option<Arc<CachedObject>>,
    /// The object after it (`None` for a delete).
    pub new: Option<Arc<CachedObject>>,
    /// Whether it comes from a (re)list rather than a watch event.
    pub initial: bool,
}

/// Called with every change; must not block (it runs on the watch task).
pub type Handler = Arc<dyn Fn(&Change) + Send + Sync>;

/// The shared list+watch of one kind.
pub struct Informer {
    kind: GroupVersionKind,
    resource: ApiResource,
    namespaced: bool,
    selector: Option<String>,
    store: RwLock<Store>,
    synced: watch::Sender<bool>,
    unsynced: AtomicUsize,
    /// Each watch's namespace (`None`: all) and its progress.
    progress: Vec<(Option<String>, AtomicU64)>,
    handlers: RwLock<Vec<(u64, Handler)>>,
    next_handler: Mutex<u64>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    last_error: Mutex<Option<String>>,
    skipped: AtomicU64,
}

/// Keeps a handler subscribed; dropping it unsubscribes.
pub struct Subscription {
    informer: Weak<Informer>,
    id: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(informer) = self.informer.upgrade() {
            informer
                .handlers
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|(id, _)| *id != self.id);
        }
    }
}

impl Informer {
    /// Starts watching the objects of `resource` matching the label selector, if any, in each
    /// namespace of the scope (`None`: all namespaces, or a cluster-scoped kind).
    pub(crate) fn start(
        client: Client,
        kind: GroupVersionKind,
        resource: ApiResource,
        namespaced: bool,
        (scope, selector): (&[Option<String>], Option<String>),
    ) -> Arc<Self> {
        let informer = Arc::new(Informer {
            kind,
            resource: resource.clone(),
            namespaced,
            selector: selector.clone(),
            store: RwLock::default(),
            synced: watch::Sender::new(false),
            unsynced: AtomicUsize::new(scope.len()),
            progress: scope
                .iter()
                .map(|namespace| (namespace.clone(), AtomicU64::new(0)))
                .collect(),
            handlers: RwLock::default(),
            next_handler: Mutex::new(0),
            tasks: Mutex::default(),
            last_error: Mutex::default(),
            skipped: AtomicU64::new(0),
        });
        let tasks = scope.iter().enumerate().map(|(watch, namespace)| {
            let api: Api<WatchedObject> = match namespace {
                Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            let config = match &selector {
                Some(selector) => watcher::Config::default().labels(selector),
                None => watcher::Config::default(),
            };
            tokio::spawn(run(Arc::downgrade(&informer), api, config, watch))
        });
        *informer.tasks.lock().unwrap_or_else(|e| e.into_inner()) = tasks.collect();
        informer
    }

    /// The kind this informer watches.
    pub fn kind(&self) -> &GroupVersionKind {
        &self.kind
    }

    /// The resource (plural, api version) of the kind.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The label selector its watches use, if it holds only the objects matching one.
    pub fn selector(&self) -> Option<&str> {
        self.selector.as_deref()
    }

    /// Whether the kind is namespaced.
    pub fn namespaced(&self) -> bool {
        self.namespaced
    }

    /// Whether the first complete list has been stored.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits until the first complete list has been stored.
    pub async fn wait_synced(&self) {
        let mut synced = self.synced.subscribe();
        let _ = synced.wait_for(|synced| *synced).await;
    }

    /// The watch's failure, while it is failing: what keeps an informer from syncing, or from
    /// seeing changes (cleared by the next event the watch delivers).
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The resourceVersion through which the store holds every change to objects in `namespace`
    /// (0 before the first list of its watch completes, or when no watch covers it): a write the
    /// apiserver answered at or below it is reflected here, also when the object has changed or
    /// gone since.
    pub fn seen_through(&self, namespace: &str) -> u64 {
        self.progress
            .iter()
            .find(|(watched, _)| watched.as_deref().is_none_or(|w| w == namespace))
            .map_or(0, |(_, seen)| seen.load(Ordering::Acquire))
    }

    /// Calls `handler` with every later change.
    pub fn subscribe(self: &Arc<Self>, handler: Handler) -> Subscription {
        let id = {
            let mut next = self.next_handler.lock().unwrap_or_else(|e| e.into_inner());
            *next += 1;
            *next
        };
        self.handlers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, handler));
        Subscription {
            informer: Arc::downgrade(self),
            id,
        }
    }

    /// Adds a field index over this kind.
    pub fn add_index(&self, spec: IndexSpec) {
        self.write().add_index(spec);
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<CachedObject>> {
        self.read().get(key)
    }

    /// Objects in `namespace` (all when `None`) matching `selector`.
    pub fn list(
        &self,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Arc<CachedObject>> {
        self.read().list(namespace, selector)
    }

    /// Objects controlled by the owner with `uid`.
    pub fn owned_by(&self, uid: &str) -> Vec<Arc<CachedObject>> {
        self.read().owned_by(uid)
    }

    /// Objects whose field index `name` has `value`; `None` if there is no such index.
    pub fn by_index(&self, name: &str, value: &str) -> Option<Vec<Arc<CachedObject>>> {
        self.read().by_index(name, value)
    }

    /// How many times an object was skipped because the cache could not hold it (once per list
    /// or watch event that carried it).
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// How many objects are cached, and their JSON bytes.
    pub fn size(&self) -> (usize, usize) {
        let store = self.read();
        (store.len(), store.json_bytes())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Store> {
        self.store.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(|e| e.into_inner())
    }

    fn notify(&self, change: Change) {
        let handlers: Vec<Handler> = self
            .handlers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        for handler in handlers {
            handler(&change);
        }
    }

    /// Stores `object` and tells the handlers; `None` when the cache cannot hold it, which is
    /// then skipped: counted, logged, and removed from the store if an older version was there.
    fn applied(&self, object: WatchedObject, initial: bool) -> Option<Arc<CachedObject>> {
        let object = match object.typed(&self.resource) {
            Ok(object) => object,
            Err(unreadable) => {
                self.skip(&unreadable);
                return None;
            }
        };
        let (new, old) = self.write().apply(object);
        self.notify(Change {
            old,
            new: Some(new.clone()),
            initial,
        });
        Some(new)
    }

    fn skip(&self, unreadable: &Unreadable) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
        let Unreadable {
            key,
            resource_version,
            reason,
        } = unreadable;
        tracing::warn!(
            kind = %self.kind.kind,
            api_version = %self.resource.api_version,
            namespace = %key.namespace,
            name = %key.name,
            resource_version = %resource_version.as_str(),
            "the cache skips an object it cannot hold: {reason}"
        );
        self.deleted(key);
    }

    fn deleted(&self, key: &ObjectKey) {
        let old = self.write().remove(key);
        if old.is_some() {
            self.notify(Change {
                old,
                new: None,
                initial: false,
            });
        }
    }

    /// Deletes what a completed relist of `namespace` (all when `None`) did not list.
    fn relisted(&self, listed: &[Arc<CachedObject>], namespace: Option<&str>) {
        let listed: HashSet<&ObjectKey> = listed.iter().map(|o| &o.key).collect();
        let gone: Vec<ObjectKey> = self
            .read()
            .in_namespace(namespace)
            .filter(|o| !listed.contains(&o.key))
            .map(|o| o.key.clone())
            .collect();
        for key in gone {
            self.deleted(&key);
        }
    }

    /// Watch `watch` has stored every change through the newest of `versions`.
    fn advance<'a>(&self, watch: usize, versions: impl IntoIterator<Item = &'a str>) {
        let newest = versions
            .into_iter()
            .filter_map(|version| version.parse::<u64>().ok())
            .max();
        if let Some(newest) = newest {
            self.progress[watch].1.fetch_max(newest, Ordering::AcqRel);
        }
    }

    /// The watch delivered an event, so it is not failing.
    fn watching(&self) {
        let mut last_error = self.last_error.lock().unwrap_or_else(|e| e.into_inner());
        if last_error.is_some() {
            *last_error = None;
        }
    }

    /// Counts one watch's first complete list; opens `synced` with the last of them.
    fn first_listed(&self) {
        if self.unsynced.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.synced.send_replace(true);
        }
    }
}

impl Drop for Informer {
    fn drop(&mut self) {
        let tasks = self.tasks.get_mut().unwrap_or_else(|e| e.into_inner());
        tasks.drain(..).for_each(|task| task.abort());
    }
}

async fn run(
    informer: Weak<Informer>,
    api: Api<WatchedObject>,
    config: watcher::Config,
    watch: usize,
) {
    let events = watcher::watcher(api, config).default_backoff();
    futures::pin_mut!(events);
    // What a (re)list delivered: the objects themselves, one pointer each, not copies of keys.
    let mut listed: Option<Vec<Arc<CachedObject>>> = None;
    let mut first = true;
    while let Some(event) = events.next().await {
        let Some(informer) = informer.upgrade() else {
            return;
        };
        if event.is_ok() {
            informer.watching();
        }
        match event {
            Ok(Event::Init) => listed = Some(Vec::new()),
            Ok(Event::InitApply(object)) => {
                if let Some(object) = informer.applied(object, true) {
                    listed.get_or_insert_default().push(object);
                }
            }
            Ok(Event::InitDone) => {
                let listed = listed.take().unwrap_or_default();
                let namespace = informer.progress[watch].0.as_deref();
                informer.relisted(&listed, namespace);
                // A list is not ordered by resourceVersion: only once it is whole does the store
                // hold every change through the newest object it listed.
                informer.advance(watch, listed.iter().map(|o| o.resource_version.as_str()));
                if std::mem::take(&mut first) {
                    informer.first_listed();
                }
            }
            Ok(Event::Apply(object)) => {
                let version = object.resource_version().clone();
                informer.applied(object, false);
                informer.advance(watch, [version.as_str()]);
            }
            Ok(Event::Delete(object)) => {
                informer.deleted(object.key());
                informer.advance(watch, [object.resource_version().as_str()]);
            }
            Err(error) => {
                tracing::warn!(kind = %informer.kind.kind, "watch failed, retrying with backoff: {error}");
                *informer
                    .last_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(error.to_string());
            }
        }
    }
}
