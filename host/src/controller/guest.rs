//! Changes a plugin maps in its own sandbox: those of a kind watched with the guest's `map`, and
//! every change of a kind it handles with its own `handle` (a filter that compares an object
//! before and after, a mapping of its own for a deletion).
//!
//! The informer's handler must not block, so changes wait in a [`Backlog`] that one task per
//! kind drains into the guest. The backlog keeps one entry per object — later changes fold into
//! the one waiting, from the state before the first to the latest — so it never outgrows the
//! cache and no change is lost: an object added and deleted before its turn is handed over as
//! deleted, in its last state.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::sources::Reasons;
use crate::cache::{CachedObject, Change};
use crate::queue::{LOW_PRIORITY, Queue};
use crate::runtime::{ObjectChange, Plugin};
use wasmop_contract::object::{GroupVersionKind, ObjectKey};

/// Which of the guest's exports maps a kind's changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Export {
    /// `map`, with the object's latest state: for watches mapped by the guest.
    Map,
    /// `handle`, with the change: for the kinds its handlers declare.
    Handle,
}

impl Export {
    /// The export's name in the WIT.
    fn name(self) -> &'static str {
        match self {
            Export::Map => "map",
            Export::Handle => "handle",
        }
    }
}

/// Changes waiting for the guest, one entry per object.
#[derive(Default)]
pub(super) struct Backlog {
    waiting: Mutex<Waiting>,
    ready: Notify,
}

/// The pending change per key, and the keys in the order they first arrived.
type Waiting = (HashMap<ObjectKey, Pending>, VecDeque<ObjectKey>);

/// The changes of one object since the guest last saw it, folded into one.
#[derive(Debug, Clone)]
struct Pending {
    /// The object before the first of them (`None`: it was added).
    before: Option<Arc<CachedObject>>,
    /// Its latest state.
    last: Arc<CachedObject>,
    /// Whether the latest change deleted it.
    gone: bool,
    /// Whether all of them came from a (re)list.
    initial: bool,
}

impl Pending {
    /// The change the guest is told about; `None` for a change with no object.
    fn of(change: &Change) -> Option<Self> {
        let last = change.new.as_ref().or(change.old.as_ref())?.clone();
        Some(Pending {
            before: change.old.clone(),
            last,
            gone: change.new.is_none(),
            initial: change.initial,
        })
    }

    /// Folds a later change of the same object into this one.
    fn then(&mut self, later: Pending) {
        self.last = later.last;
        self.gone = later.gone;
        self.initial &= later.initial;
    }

    /// What `handle` is told.
    fn change(&self) -> ObjectChange {
        let last = self.last.json.clone();
        match (&self.before, self.gone) {
            (_, true) => ObjectChange::Deleted(last),
            (None, false) => ObjectChange::Added(last),
            (Some(before), false) => ObjectChange::Updated(before.json.clone(), last),
        }
    }
}

impl Backlog {
    /// Adds `change` to what waits for the guest.
    pub(super) fn push(&self, change: &Change) {
        let Some(pending) = Pending::of(change) else {
            return;
        };
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let key = pending.last.key.clone();
        match waiting.0.get_mut(&key) {
            Some(earlier) => earlier.then(pending),
            None => {
                waiting.0.insert(key.clone(), pending);
                waiting.1.push_back(key);
            }
        }
        drop(waiting);
        self.ready.notify_one();
    }

    async fn pop(&self) -> Pending {
        loop {
            let next = {
                let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
                let key = waiting.1.pop_front();
                key.and_then(|key| waiting.0.remove(&key))
            };
            match next {
                Some(pending) => return pending,
                None => self.ready.notified().await,
            }
        }
    }
}

/// Starts the task that hands `kind`'s waiting changes to the guest's `export` and queues the
/// keys it returns for `reasons`; the backlog is what the kind's source pushes to.
pub(super) fn spawn(
    plugin: Arc<Plugin>,
    (kind, export): (GroupVersionKind, Export),
    reasons: Reasons,
    queue: Arc<Queue<ObjectKey>>,
) -> (JoinHandle<()>, Arc<Backlog>) {
    let backlog = Arc::new(Backlog::default());
    let waiting = backlog.clone();
    let task = tokio::spawn(async move {
        loop {
            let pending = waiting.pop().await;
            let key = &pending.last.key;
            let mapped = match export {
                Export::Map => plugin.map(&kind, &pending.last.json, key).await,
                Export::Handle => plugin.handle(&kind, &pending.change(), key).await,
            };
            let keys = match mapped {
                Ok(keys) => keys,
                Err(error) => {
                    let export = export.name();
                    tracing::warn!(plugin = plugin.name(), object = %key, "{export} failed: {error}");
                    continue;
                }
            };
            let priority = if pending.initial { LOW_PRIORITY } else { 0 };
            let reason = reasons.of_folded(pending.initial, pending.before.is_some(), pending.gone);
            for key in keys {
                queue.add_with_priority(key, priority, reason.clone());
            }
        }
    });
    (task, backlog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::sources::tests::object;

    fn change(old: Option<&Arc<CachedObject>>, new: Option<&Arc<CachedObject>>) -> Change {
        Change {
            old: old.cloned(),
            new: new.cloned(),
            initial: false,
        }
    }

    fn versions(change: &ObjectChange) -> (&'static str, Vec<String>) {
        let version = |json: &str| {
            let value: serde_json::Value = serde_json::from_str(json).unwrap();
            value["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        match change {
            ObjectChange::Added(new) => ("added", vec![version(new)]),
            ObjectChange::Updated(old, new) => ("updated", vec![version(old), version(new)]),
            ObjectChange::Deleted(old) => ("deleted", vec![version(old)]),
        }
    }

    #[tokio::test]
    async fn the_backlog_keeps_one_entry_per_object_from_its_first_state_to_its_latest() {
        let backlog = Backlog::default();
        let mut previous = object("busy", "1");
        for version in 2..=1000 {
            let next = object("busy", &version.to_string());
            backlog.push(&change(Some(&previous), Some(&next)));
            previous = next;
        }
        backlog.push(&change(None, Some(&object("quiet", "7"))));
        let busy = backlog.pop().await;
        assert_eq!(busy.last.key.name, "busy");
        assert_eq!(
            versions(&busy.change()),
            ("updated", vec!["1".into(), "1000".into()])
        );
        let quiet = backlog.pop().await;
        assert_eq!(versions(&quiet.change()), ("added", vec!["7".into()]));
        assert!(backlog.waiting.lock().unwrap().1.is_empty());
    }

    #[tokio::test]
    async fn an_object_added_and_deleted_before_its_turn_is_handed_over_deleted() {
        let backlog = Backlog::default();
        let (created, changed) = (object("brief", "1"), object("brief", "2"));
        backlog.push(&change(None, Some(&created)));
        backlog.push(&change(Some(&created), Some(&changed)));
        backlog.push(&change(Some(&changed), None));
        let brief = backlog.pop().await;
        assert_eq!(versions(&brief.change()), ("deleted", vec!["2".into()]));
    }
}
