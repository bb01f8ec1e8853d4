//! A plugin version's event sources: the informers its registration needs ([`Informed`], synced
//! before any event is queued) and the subscriptions that turn their changes into queued keys.
//!
//! Sources hold their informers: dropping them unsubscribes, stops the guest-map tasks and
//! releases the informers (the shared cache stops a watch no one else holds). Subscribing
//! queues every cached object of the subscribed kind at [`LOW_PRIORITY`], so a new version
//! reconciles everything once, as a restarted controller would.
//!
//! Every key is queued with its reason: which source saw what change ("object updated", "owned
//! Deployment added", "watched ConfigMap listed" for a (re)list).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::cache::{
    Cache, CacheError, CachedObject, Change, Handler, IndexSpec, Informer, Subscription, View,
};
use crate::queue::{LOW_PRIORITY, Queue, Reason};
use crate::runtime::Plugin;
use wasmop_contract::capability::Power;
use wasmop_contract::object::{GroupVersionKind, ObjectKey};
use wasmop_contract::selector::LabelSelector;
use wasmop_contract::{Mapping, Predicate, Registration};

type Map = Arc<dyn Fn(&CachedObject) -> Vec<ObjectKey> + Send + Sync>;

/// The subscribed sources of one plugin version.
pub(super) struct Sources {
    subscriptions: Vec<Subscription>,
    map_tasks: Vec<JoinHandle<()>>,
    informers: Vec<Arc<Informer>>,
}

impl Sources {
    /// The informers the sources hold.
    pub(super) fn informers(&self) -> &[Arc<Informer>] {
        &self.informers
    }
}

impl Drop for Sources {
    fn drop(&mut self) {
        self.subscriptions.clear();
        self.map_tasks.drain(..).for_each(|task| task.abort());
    }
}

/// The informers of one plugin version, synced, not yet subscribed.
pub(super) struct Informed {
    informers: Vec<Arc<Informer>>,
}

impl Informed {
    /// Starts (or shares) the informers `plugin` needs and waits up to `allowed` for all of
    /// them to sync; the first kind still unsynced then names the error.
    pub(super) async fn start(
        cache: &Cache,
        plugin: &Plugin,
        allowed: Duration,
    ) -> Result<Self, CacheError> {
        let registration = plugin.registration();
        let kinds = informed_kinds(plugin).collect::<Result<Vec<_>, _>>()?;
        let mut informers = Vec::new();
        let synced = tokio::time::timeout(allowed, async {
            for kind in &kinds {
                informers.push(cache.informer_in(kind, view_of(registration, kind)).await?);
            }
            for informer in &informers {
                informer.wait_synced().await;
            }
            Ok::<_, CacheError>(())
        })
        .await;
        match synced {
            Ok(started) => started?,
            Err(_) => return Err(unsynced(&kinds, &informers, allowed)),
        }
        let informed = Informed { informers };
        for index in &registration.indexes {
            informed.of(&index.kind).add_index(IndexSpec {
                name: index.name.clone(),
                field: index.field.clone(),
            });
        }
        Ok(informed)
    }

    fn of(&self, kind: &GroupVersionKind) -> &Arc<Informer> {
        self.informers
            .iter()
            .find(|i| i.kind() == kind)
            .expect("every source's kind is informed")
    }

    /// Subscribes `plugin`'s sources to `queue`, queueing every cached object of their kinds; a
    /// change of the `drain` label on a primary object passes its predicates.
    pub(super) fn subscribe(
        self,
        plugin: &Arc<Plugin>,
        queue: &Arc<Queue<ObjectKey>>,
        drain: Option<&str>,
    ) -> Sources {
        let registration = plugin.registration();
        let mut subscriptions = Vec::new();
        let mut map_tasks = Vec::new();
        let primary = registration.primary.clone();
        let own_key: Map = Arc::new(|object: &CachedObject| vec![object.key.clone()]);
        let home = plugin.home();
        let subscribe =
            |kind: &GroupVersionKind, predicates: &[Predicate], map: Map, subject: &str| {
                let filter = Filter::new(predicates, None, home);
                source(self.of(kind), queue, filter, (map, Reasons::new(subject)))
            };
        let primary_filter = Filter::new(&registration.predicates, drain, home);
        let primary_map = (own_key, Reasons::new("object"));
        subscriptions.push(source(
            self.of(&primary),
            queue,
            primary_filter,
            primary_map,
        ));
        for owned in &registration.owns {
            let subject = format!("owned {}", owned.kind);
            subscriptions.push(subscribe(owned, &[], owner_key(&primary), &subject));
        }
        for watch in &registration.watches {
            let map = match &watch.mapping {
                Mapping::ControllerOwner => owner_key(&primary),
                Mapping::Label(label) => label_key(label.clone()),
                Mapping::Guest => {
                    let backlog = Arc::new(Backlog::default());
                    map_tasks.push(tokio::spawn(map_through_guest(
                        plugin.clone(),
                        watch.kind.clone(),
                        backlog.clone(),
                        queue.clone(),
                    )));
                    guest_key(backlog)
                }
            };
            let subject = format!("watched {}", watch.kind.kind);
            subscriptions.push(subscribe(&watch.kind, &watch.predicates, map, &subject));
        }
        Sources {
            subscriptions,
            map_tasks,
            informers: self.informers,
        }
    }
}

/// The view the plugin reads `kind` in: its share of its primary and owned kinds, all of any other.
pub(crate) fn view_of(registration: &Registration, kind: &GroupVersionKind) -> View {
    match registration.sharded_kinds().any(|k| k == kind) {
        true => View::Shard,
        false => View::All,
    }
}

/// Why the first of `kinds` that is not synced is not: the informers started so far are
/// `informers`, in the same order.
fn unsynced(
    kinds: &[GroupVersionKind],
    informers: &[Arc<Informer>],
    allowed: Duration,
) -> CacheError {
    let (kind, reason) = match informers.iter().find(|i| !i.is_synced()) {
        Some(informer) => (
            informer.kind(),
            informer
                .last_error()
                .unwrap_or_else(|| "its first list has not completed".to_owned()),
        ),
        None => (
            &kinds[informers.len().min(kinds.len() - 1)],
            "the apiserver's discovery did not answer".to_owned(),
        ),
    };
    CacheError::not_synced(kind, allowed, reason)
}

/// The kinds `plugin` needs informers for (primary, owned, watched, indexed, and any it may
/// read), each checked again as [`Power::Inform`] before the host lists it as the operator.
pub(super) fn informed_kinds(
    plugin: &Plugin,
) -> impl Iterator<Item = Result<GroupVersionKind, CacheError>> + '_ {
    plugin
        .registration()
        .informed_kinds()
        .into_iter()
        .map(|kind| match plugin.check(Power::Inform(kind)) {
            Ok(()) => Ok(kind.clone()),
            Err(unchecked) => Err(CacheError::refused(kind, unchecked.to_string())),
        })
}

/// Which changes a source passes on.
struct Filter {
    /// Its predicates.
    predicates: Vec<Predicate>,
    /// A label whose change passes whatever the predicates say.
    always: Option<String>,
    /// The only namespace whose objects it sees (a namespaced tenant's plugin's).
    home: Option<String>,
}

impl Filter {
    fn new(predicates: &[Predicate], always: Option<&str>, home: Option<&str>) -> Self {
        Filter {
            predicates: predicates.to_vec(),
            always: always.map(str::to_owned),
            home: home.map(str::to_owned),
        }
    }

    fn passes(&self, object: &CachedObject, change: &Change) -> bool {
        let at_home = self
            .home
            .as_ref()
            .is_none_or(|home| *home == object.key.namespace);
        at_home
            && (passes(&self.predicates, change) || label_changed(self.always.as_deref(), change))
    }
}

/// Subscribes a source: events that pass its filter are mapped to keys and queued for their
/// reason.
fn source(
    informer: &Arc<Informer>,
    queue: &Arc<Queue<ObjectKey>>,
    filter: Filter,
    (map, reasons): (Map, Reasons),
) -> Subscription {
    let queue = Arc::downgrade(queue);
    let handler: Handler = Arc::new(move |change: &Change| {
        let (Some(queue), Some(object)) =
            (queue.upgrade(), change.new.as_ref().or(change.old.as_ref()))
        else {
            return;
        };
        if !filter.passes(object, change) {
            return;
        }
        let priority = if change.initial { LOW_PRIORITY } else { 0 };
        for key in map(object) {
            queue.add_with_priority(key, priority, reasons.of(change).clone());
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

/// Why one source queues a key, by the change it saw; built once, so queueing allocates nothing.
struct Reasons {
    listed: Reason,
    added: Reason,
    updated: Reason,
    deleted: Reason,
}

impl Reasons {
    /// The reasons of a source of `subject` ("object", "owned Deployment").
    fn new(subject: &str) -> Self {
        let reason = |change: &str| Reason::from(format!("{subject} {change}"));
        Reasons {
            listed: reason("listed"),
            added: reason("added"),
            updated: reason("updated"),
            deleted: reason("deleted"),
        }
    }

    fn of(&self, change: &Change) -> &Reason {
        match (change.initial, &change.old, &change.new) {
            (true, _, _) => &self.listed,
            (false, None, _) => &self.added,
            (false, Some(_), None) => &self.deleted,
            (false, Some(_), Some(_)) => &self.updated,
        }
    }
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

/// Whether `change` is an update that changed `label`.
fn label_changed(label: Option<&str>, change: &Change) -> bool {
    let (Some(label), Some(old), Some(new)) = (label, &change.old, &change.new) else {
        return false;
    };
    old.labels.get(label) != new.labels.get(label)
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
            .map(|name| ObjectKey::new(object.key.namespace.clone(), name))
            .into_iter()
            .collect()
    })
}

/// Objects waiting for the guest's `map`, one entry per object (a newer change replaces the one
/// waiting), so the backlog never outgrows the cache and no change is lost.
#[derive(Default)]
struct Backlog {
    waiting: Mutex<Waiting>,
    ready: Notify,
}

/// The latest object per key, and the keys in the order they first arrived.
type Waiting = (HashMap<ObjectKey, Arc<CachedObject>>, VecDeque<ObjectKey>);

impl Backlog {
    fn push(&self, object: Arc<CachedObject>) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let key = object.key.clone();
        if waiting.0.insert(key.clone(), object).is_none() {
            waiting.1.push_back(key);
        }
        drop(waiting);
        self.ready.notify_one();
    }

    async fn pop(&self) -> Arc<CachedObject> {
        loop {
            let next = {
                let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
                let key = waiting.1.pop_front();
                key.and_then(|key| waiting.0.remove(&key))
            };
            match next {
                Some(object) => return object,
                None => self.ready.notified().await,
            }
        }
    }
}

fn guest_key(backlog: Arc<Backlog>) -> Map {
    Arc::new(move |object: &CachedObject| {
        backlog.push(Arc::new(object.clone()));
        Vec::new()
    })
}

async fn map_through_guest(
    plugin: Arc<Plugin>,
    kind: GroupVersionKind,
    backlog: Arc<Backlog>,
    queue: Arc<Queue<ObjectKey>>,
) {
    let reason = Reason::from(format!("watched {} changed", kind.kind));
    loop {
        let object = backlog.pop().await;
        match plugin.map(&kind, &object.json, &object.key).await {
            Ok(keys) => keys
                .into_iter()
                .for_each(|key| queue.add(key, reason.clone())),
            Err(error) => tracing::warn!(plugin = plugin.name(), "map failed: {error}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, version: &str) -> Arc<CachedObject> {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"namespace":"a","name":"{name}","resourceVersion":"{version}"}}}}"#
        );
        let watched: crate::cache::WatchedObject = serde_json::from_str(&json).expect("an object");
        Arc::new(watched.object.expect("a readable object"))
    }

    #[tokio::test]
    async fn the_map_backlog_keeps_one_entry_per_object_with_its_latest_state() {
        let backlog = Backlog::default();
        for version in 1..=1000 {
            backlog.push(object("busy", &version.to_string()));
        }
        backlog.push(object("quiet", "7"));
        let first = backlog.pop().await;
        assert_eq!(
            (first.key.name.as_str(), first.resource_version.as_str()),
            ("busy", "1000")
        );
        assert_eq!(backlog.pop().await.key.name, "quiet");
        assert!(backlog.waiting.lock().unwrap().1.is_empty());
    }

    #[test]
    fn a_confined_source_passes_only_its_namespace() {
        let added = |object: &Arc<CachedObject>| Change {
            old: None,
            new: Some(object.clone()),
            initial: false,
        };
        let ours = object("ours", "1");
        let mut theirs = (*object("theirs", "1")).clone();
        theirs.key.namespace = "b".to_owned();
        let theirs = Arc::new(theirs);
        let confined = Filter::new(&[], None, Some("a"));
        assert!(confined.passes(&ours, &added(&ours)));
        assert!(!confined.passes(&theirs, &added(&theirs)));
        let cluster = Filter::new(&[], None, None);
        assert!(cluster.passes(&theirs, &added(&theirs)));
    }
}
