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

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::guest::{self, Export};
use crate::cache::{
    Cache, CacheError, CachedObject, Change, Handler, IndexSpec, Informer, Subscription, View,
};
use crate::queue::{LOW_PRIORITY, Queue, Reason};
use crate::runtime::Plugin;
use wasmop_contract::capability::Power;
use wasmop_contract::object::{GroupVersionKind, ObjectKey};
use wasmop_contract::selector::LabelSelector;
use wasmop_contract::{Mapping, Predicate, Registration};

/// The keys a change queues (none when the guest maps it later).
type Map = Arc<dyn Fn(&Change) -> Vec<ObjectKey> + Send + Sync>;

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
        let mut kinds = informed_kinds(plugin).collect::<Result<Vec<_>, _>>()?;
        let mut informers = Vec::new();
        let synced = tokio::time::timeout(allowed, async {
            let mut index = 0;
            while let Some(kind) = kinds.get(index) {
                match cache.informer_in(kind, view_of(registration, kind)).await {
                    Ok(informer) => informers.push(informer),
                    Err(error @ CacheError::Discovery { .. }) if only_permitted(plugin, kind) => {
                        tracing::warn!(
                            plugin = plugin.name(),
                            "no informer for a kind the plugin may read but does not watch: \
                             {error}; its cache reads of it fail"
                        );
                        kinds.remove(index);
                        continue;
                    }
                    Err(error) => return Err(error),
                }
                index += 1;
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
        let primary = &registration.primary;
        let home = plugin.home();
        let mut through_guest = |kind: &GroupVersionKind, export: Export, subject: &str| {
            let reasons = Reasons::new(subject);
            let (task, backlog) = guest::spawn(
                plugin.clone(),
                (kind.clone(), export),
                reasons,
                queue.clone(),
            );
            map_tasks.push(task);
            let map: Map = Arc::new(move |change: &Change| {
                backlog.push(change);
                Vec::new()
            });
            map
        };
        let primary_map = match registration.handles(primary) {
            true => drained_or(drain, through_guest(primary, Export::Handle, "object")),
            false => by_object(own_key),
        };
        let primary_filter = Filter::new(&registration.predicates, drain, home);
        let primary_map = (primary_map, Reasons::new("object"));
        subscriptions.push(source(self.of(primary), queue, primary_filter, primary_map));
        let mut sources = Vec::new();
        for owned in &registration.owns {
            let subject = format!("owned {}", owned.kind);
            let map = match registration.handles(owned) {
                true => through_guest(owned, Export::Handle, &subject),
                false => by_object(owner_key(primary)),
            };
            sources.push((owned, &[][..], map, subject));
        }
        for watch in &registration.watches {
            let subject = format!("watched {}", watch.kind.kind);
            let map = match (&watch.mapping, registration.handles(&watch.kind)) {
                (_, true) => through_guest(&watch.kind, Export::Handle, &subject),
                (Mapping::Guest, false) => through_guest(&watch.kind, Export::Map, &subject),
                (Mapping::ControllerOwner, false) => by_object(owner_key(primary)),
                (Mapping::Label(label), false) => by_object(label_key(label.clone())),
            };
            sources.push((&watch.kind, &watch.predicates[..], map, subject));
        }
        for (kind, predicates, map, subject) in sources {
            let filter = Filter::new(predicates, None, home);
            let reasons = Reasons::new(&subject);
            subscriptions.push(source(self.of(kind), queue, filter, (map, reasons)));
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

/// Whether `kind` is one `plugin` only has a permission to read: none of its sources or indexes
/// is of it, so an apiserver that does not serve it (an optional integration's kind, a version
/// it no longer serves) leaves the plugin without that informer rather than uninstalled.
fn only_permitted(plugin: &Plugin, kind: &GroupVersionKind) -> bool {
    let registration = plugin.registration();
    !registration.cached_kinds().any(|k| k == kind)
        && !registration.indexes.iter().any(|i| &i.kind == kind)
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
        for key in map(change) {
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
pub(super) struct Reasons {
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
        let (existed, gone) = (change.old.is_some(), change.new.is_none());
        self.of_folded(change.initial, existed, gone)
    }

    /// The reason of changes folded into one: all from a (re)list, the object there before the
    /// first, gone after the last.
    pub(super) fn of_folded(&self, initial: bool, existed: bool, gone: bool) -> &Reason {
        match (initial, existed, gone) {
            (true, _, _) => &self.listed,
            (false, _, true) => &self.deleted,
            (false, false, false) => &self.added,
            (false, true, false) => &self.updated,
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

/// A map of the changed object's latest state (or last, when it was deleted).
fn by_object(map: impl Fn(&CachedObject) -> Vec<ObjectKey> + Send + Sync + 'static) -> Map {
    Arc::new(
        move |change: &Change| match change.new.as_ref().or(change.old.as_ref()) {
            Some(object) => map(object),
            None => Vec::new(),
        },
    )
}

/// The changed object's own key.
fn own_key(object: &CachedObject) -> Vec<ObjectKey> {
    vec![object.key.clone()]
}

/// `map`, except that a change of the `drain` label queues the object's own key: a handover
/// reaches the reconcile whatever the guest's handler says of the change.
fn drained_or(drain: Option<&str>, map: Map) -> Map {
    let drain = drain.map(str::to_owned);
    let own = by_object(own_key);
    Arc::new(
        move |change: &Change| match label_changed(drain.as_deref(), change) {
            true => own(change),
            false => map(change),
        },
    )
}

fn owner_key(primary: &GroupVersionKind) -> impl Fn(&CachedObject) -> Vec<ObjectKey> + use<> {
    let primary = primary.clone();
    move |object: &CachedObject| {
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
    }
}

fn label_key(label: String) -> impl Fn(&CachedObject) -> Vec<ObjectKey> {
    move |object: &CachedObject| {
        object
            .labels
            .get(&label)
            .map(|name| ObjectKey::new(object.key.namespace.clone(), name))
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// ConfigMap `name` in namespace `a` at resourceVersion `version`, as the cache holds it.
    pub(in crate::controller) fn object(name: &str, version: &str) -> Arc<CachedObject> {
        labelled(name, version, "{}")
    }

    /// ConfigMap `name` at `version` with `labels` (a JSON object).
    fn labelled(name: &str, version: &str, labels: &str) -> Arc<CachedObject> {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"namespace":"a","name":"{name}","resourceVersion":"{version}","labels":{labels}}}}}"#
        );
        let watched: crate::cache::WatchedObject = serde_json::from_str(&json).expect("an object");
        Arc::new(watched.object.expect("a readable object"))
    }

    #[test]
    fn a_drain_label_change_reaches_the_reconcile_whatever_the_guests_handler_says() {
        use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
        let handed = Arc::new(AtomicUsize::new(0));
        let counted = handed.clone();
        let guest: Map = Arc::new(move |_: &Change| {
            counted.fetch_add(1, Relaxed);
            Vec::new()
        });
        let map = drained_or(Some("wasmop.dev/drain"), guest);
        let change = |old: &Arc<CachedObject>, new: &Arc<CachedObject>| Change {
            old: Some(old.clone()),
            new: Some(new.clone()),
            initial: false,
        };
        let before = labelled("web", "1", "{}");
        let drained = labelled("web", "2", r#"{"wasmop.dev/drain":"replica-1"}"#);
        assert_eq!(
            map(&change(&before, &drained)),
            std::slice::from_ref(&before.key)
        );
        assert_eq!(
            handed.load(Relaxed),
            0,
            "a handover is not the guest's to filter"
        );
        let relabelled = labelled("web", "3", r#"{"team":"shop"}"#);
        assert!(map(&change(&before, &relabelled)).is_empty());
        assert_eq!(
            handed.load(Relaxed),
            1,
            "any other change goes to the guest"
        );
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
