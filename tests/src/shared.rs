//! Control planes shared by tests, as envtest suites share one.
//!
//! [`shared`] is one control plane for every test of a test binary: it starts on first use and is
//! never dropped; when the binary exits, its supervisors see their lifeline close and stop etcd
//! and kube-apiserver.
//!
//! [`shared_by`] is one per group of tests that must not see another group's cluster-wide state
//! (CRDs, webhook configurations, hosts reconciling every namespace). A group's plane lives while
//! a test of the group holds it; an idle group's plane is stopped when another group starts one,
//! so a binary whose groups run one after another (libtest runs tests in name order) keeps about
//! one plane per test thread, not one per group.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::{ControlPlane, Error};

static SHARED: OnceCell<ControlPlane> = OnceCell::const_new();

/// The test binary's shared control plane, started by the first caller.
pub async fn shared() -> Result<&'static ControlPlane, Error> {
    SHARED.get_or_try_init(ControlPlane::start).await
}

type Slot = Arc<OnceCell<Arc<ControlPlane>>>;

static GROUPS: Mutex<Option<HashMap<String, Slot>>> = Mutex::new(None);

/// The control plane of the tests of `group`, started by the group's first caller (or again after
/// the group went idle and another group's start stopped it).
pub async fn shared_by(group: &str) -> Result<Arc<ControlPlane>, Error> {
    let (slot, idle) = slot_of(group);
    drop(idle);
    let plane = slot
        .get_or_try_init(|| async { ControlPlane::start().await.map(Arc::new) })
        .await?;
    Ok(Arc::clone(plane))
}

/// `group`'s slot, and (when the group has none yet) the planes of groups no test holds, taken
/// out of the map to be stopped outside its lock.
fn slot_of(group: &str) -> (Slot, Vec<Slot>) {
    let mut groups = GROUPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let groups = groups.get_or_insert_with(HashMap::new);
    if let Some(slot) = groups.get(group) {
        return (Arc::clone(slot), Vec::new());
    }
    let idle: Vec<String> = groups
        .iter()
        .filter(|(_, slot)| {
            slot.get()
                .is_some_and(|plane| Arc::strong_count(plane) == 1)
        })
        .map(|(name, _)| name.clone())
        .collect();
    let idle = idle.iter().filter_map(|name| groups.remove(name)).collect();
    let slot = Slot::default();
    groups.insert(group.to_owned(), Arc::clone(&slot));
    (slot, idle)
}
