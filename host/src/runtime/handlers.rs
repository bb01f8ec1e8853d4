//! A plugin's own event handlers, as the runtime sees them: which kinds it handles
//! (`describe-handlers`, checked with its registration when it loads), and the call that maps one
//! change of such a kind to requests in its sandbox, under the same instances, memory cap, budget
//! and deadline as its reconciles.
//!
//! What the guest answers is checked as `map`'s answer is: at most the plugin's key limit, each a
//! valid object key inside the namespace the plugin is confined to.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::runtime::bindings::{handlers as wit, types};
use crate::runtime::error::{DispatchError, RuntimeError};
use crate::runtime::instances::Instances;
use crate::runtime::plugin::Plugin;
use wasmop_contract::object::{GroupVersionKind, ObjectKey};

/// A change of a handled kind, as `handle` is told it: the object's JSON on each side.
#[derive(Debug, Clone)]
pub enum ObjectChange {
    /// The object appeared (created, or listed when the plugin's sources start).
    Added(Arc<str>),
    /// The object changed from the first to the second.
    Updated(Arc<str>, Arc<str>),
    /// The object is gone; its last state.
    Deleted(Arc<str>),
}

impl From<&ObjectChange> for wit::Change {
    fn from(change: &ObjectChange) -> Self {
        match change {
            ObjectChange::Added(new) => wit::Change::Added(new.to_string()),
            ObjectChange::Updated(old, new) => wit::Change::Updated(wit::Update {
                old: old.to_string(),
                new: new.to_string(),
            }),
            ObjectChange::Deleted(old) => wit::Change::Deleted(old.to_string()),
        }
    }
}

/// Asks a component that exports `handlers` which kinds it handles; the registration's checks
/// then hold them to the kinds it reconciles, owns or watches.
pub(crate) async fn describe_handlers(
    file: &Path,
    describing: &Instances,
    timeout: Duration,
) -> Result<Vec<GroupVersionKind>, RuntimeError> {
    let kinds = describing
        .dispatch(&ObjectKey::default(), timeout, |exports, store| {
            Box::pin(async move {
                match &exports.handlers {
                    Some(guest) => guest.call_describe_handlers(store).await,
                    None => Err(wasmtime::format_err!("no handlers export")),
                }
            })
        })
        .await
        .map_err(|e| RuntimeError::Describe {
            file: file.to_owned(),
            reason: format!("describe-handlers: {e}"),
        })?;
    Ok(kinds.into_iter().map(Into::into).collect())
}

impl Plugin {
    /// Asks the guest's own handler which primary objects a change of `kind` (one it declared it
    /// handles) makes requests for: none drops the change. Its answer is checked as `map`'s is.
    pub async fn handle(
        &self,
        kind: &GroupVersionKind,
        change: &ObjectChange,
        key: &ObjectKey,
    ) -> Result<Vec<ObjectKey>, DispatchError> {
        let (kind, change) = (types::Gvk::from(kind), wit::Change::from(change));
        let keys = self
            .instances
            .dispatch(key, self.timeout(), move |exports, store| {
                Box::pin(async move {
                    match &exports.handlers {
                        Some(guest) => guest.call_handle(store, &kind, &change).await,
                        None => Err(wasmtime::format_err!("no handlers export")),
                    }
                })
            })
            .await?;
        self.checked_keys("handle", keys, key)
    }
}
