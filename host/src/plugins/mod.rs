//! The plugins a manager knows, one per source, and how they change while it runs.
//!
//! A source — a `--plugin` file, a file in `--plugin-dir` — supplies one plugin. A new module is
//! compiled and described by a [`Loader`] outside the manager's loop, then swapped in by the
//! [`Registry`]: a new plugin starts when the manager leads (followers keep it loaded, warm);
//! a new version of a running plugin takes over its controller
//! ([`crate::controller::Controller::upgrade`]); a module that fails to load, or a version that
//! cannot take over, leaves the old version running and is recorded as the source's last error.
//! Removing a source stops its controller — keys still queued are dropped (the informers list
//! them again for whoever loads the plugin next), in-flight reconciles finish within the grace
//! period — and releases the informers only it used. Plugin names are unique across sources.

mod handle;
mod loader;
mod registry;

pub use handle::{Installed, PluginHandle};
pub use loader::{Loader, digest};
pub use registry::Registry;

pub(crate) use handle::{Command, channel};
pub(crate) use registry::Context;

use crate::cache::CacheError;
use crate::controller::UpgradeError;
use crate::runtime::RuntimeError;

/// A plugin change could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The module did not load.
    #[error(transparent)]
    Load(#[from] RuntimeError),
    /// Another source already supplies a plugin of that name.
    #[error("a plugin named {name} is already loaded from {source_name}")]
    NameTaken {
        /// The name.
        name: String,
        /// The other source.
        source_name: String,
    },
    /// Its controller could not start.
    #[error("plugin {plugin}: {source}")]
    Start {
        /// The plugin.
        plugin: String,
        /// What the cache said.
        source: Box<CacheError>,
    },
    /// The new version could not take over; the old one keeps running.
    #[error(transparent)]
    Upgrade(#[from] UpgradeError),
    /// The manager is not running.
    #[error("the manager has stopped")]
    Stopped,
}

/// What `wasmop plugins` shows for one source.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginStatus {
    /// Where the plugin comes from.
    pub source: String,
    /// Its name, once a version has loaded.
    pub name: Option<String>,
    /// The loaded version.
    pub version: Option<String>,
    /// The loaded module's digest (`sha256:…`).
    pub digest: Option<String>,
    /// Whether it runs.
    pub state: PluginState,
    /// Keys waiting in its queue.
    pub queue_depth: usize,
    /// Reconciles since its controller started.
    pub reconciles: u64,
    /// The last failure to load or upgrade, until a version loads.
    pub last_error: Option<String>,
}

/// Whether a source's plugin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginState {
    /// Its controller runs (on the leader).
    Running,
    /// Loaded and ready to run (on a follower, or before the Lease is won).
    Loaded,
    /// No version has loaded, or its controller could not start.
    Failed,
}
