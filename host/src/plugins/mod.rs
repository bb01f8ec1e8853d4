//! The plugins a manager knows, one per source, and how they change while it runs.
//!
//! A source — a `--plugin` file, a file in `--plugin-dir` ([`dir`]) — supplies one plugin. A new module is
//! compiled and described by a [`Loader`] outside the manager's loop, then swapped in by the
//! [`Registry`]: a new plugin starts when the manager leads (followers keep it loaded, warm);
//! a new version of a running plugin takes over its controller
//! ([`crate::controller::Controller::upgrade`]) once its informers have synced, outside the
//! loop; a module that fails to load, or a version whose informers do not sync in time, leaves
//! the old version running and is recorded as the source's last error. Statuses are read from
//! a published view ([`Statuses`]), never from the loop.
//! Removing a source stops its controller — keys still queued are dropped (the informers list
//! them again for whoever loads the plugin next), in-flight reconciles finish within the grace
//! period — and releases the informers only it used. Plugin names are unique across sources, and
//! the operator's sources (files, the plugin directory) always win a name over a tenant's (a
//! `WasmReconciler`): whichever loads first, the tenant's plugin of that name is unloaded.
//!
//! Imports: the contract, `cache`, `client`, `config`, `controller`, `events`, `http`, `identity`,
//! `metrics` and `runtime`; never `manager` or `testing`.

mod access;
mod address;
pub mod crd;
pub mod dir;
pub mod download;
mod handle;
mod installs;
mod loader;
pub mod module;
pub mod oci;
mod options;
mod registry;
pub mod signed;
mod supervisor;

pub use handle::{Installed, PluginHandle};
pub use installs::InstallGauges;
pub use loader::{Loader, digest, digest_of};
pub use options::options;
pub use registry::{Registry, Statuses};
pub use supervisor::{Supervisor, Timeouts};

pub(crate) use handle::{Command, channel};

use crate::cache::CacheError;
use crate::runtime::RuntimeError;

/// A plugin change could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The module did not load.
    #[error(transparent)]
    Load(#[from] RuntimeError),
    /// The identity the plugin writes as (the operator's, or its own) may not do what it declares.
    #[error(
        "plugin {plugin} {version} declares what its identity ({identity}) is not allowed to do: {denied}; grant it to the operator's service account, or with --plugin-identity-namespace to the plugin's own (wasmop rbac prints it, with --wasm-reconciler for a WasmReconciler's), or drop it from describe()"
    )]
    Forbidden {
        /// The plugin.
        plugin: String,
        /// Its version.
        version: String,
        /// Who it speaks as: its own account's user, or the operator's.
        identity: String,
        /// What the apiserver denied.
        denied: String,
    },
    /// The client speaking as the plugin's own identity could not be built.
    #[error("plugin {plugin}: cannot speak as {user}: {source}")]
    Identity {
        /// The plugin.
        plugin: String,
        /// The user it would impersonate.
        user: String,
        /// Why.
        source: Box<kube::Error>,
    },
    /// The apiserver could not say what the operator may do.
    #[error("plugin {plugin}: asking the apiserver what the operator may do: {source}")]
    AccessReview {
        /// The plugin.
        plugin: String,
        /// The request's error.
        source: Box<kube::Error>,
    },
    /// The plugin file is not signed by a key the operator trusts, which its policy requires.
    #[error(
        "plugin {file} {denied}; sign it with `cosign sign-blob --key KEY --output-signature {file}.sig {file}`"
    )]
    Unsigned {
        /// The file.
        file: String,
        /// The capability check's refusal.
        denied: String,
    },
    /// Another source already supplies a plugin of that name.
    #[error("a plugin named {name} is already loaded from {source_name}")]
    NameTaken {
        /// The name.
        name: String,
        /// The other source.
        source_name: String,
    },
    /// The operator's own source now supplies a plugin of the name this tenant's plugin had.
    #[error(
        "plugin {name} was unloaded: the operator's source {source_name} supplies a plugin of that name, and the operator's plugins always win their names"
    )]
    Evicted {
        /// The name.
        name: String,
        /// The operator's source.
        source_name: String,
    },
    /// Its informers did not start or sync in time.
    #[error("plugin {plugin}: {source}")]
    Start {
        /// The plugin.
        plugin: String,
        /// What the cache said.
        source: Box<CacheError>,
    },
    /// A later change to the same source was asked for before this one could be made.
    #[error("a newer change to {source_name} superseded this one")]
    Superseded {
        /// The source.
        source_name: String,
    },
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
    /// Why the running controller does not see one of its kinds now (a watch failing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// Whether a source's plugin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginState {
    /// Its controller runs (on the leader).
    Running,
    /// Its informers are syncing before its controller starts.
    Starting,
    /// Loaded and ready to run (on a follower, or before the Lease is won).
    Loaded,
    /// No version has loaded, or its controller could not start.
    Failed,
}

/// `statuses` as the table `wasmop plugins` prints.
pub fn table(statuses: &[PluginStatus]) -> String {
    let header = [
        "NAME",
        "VERSION",
        "STATE",
        "QUEUE",
        "RECONCILES",
        "DIGEST",
        "SOURCE",
        "LAST ERROR",
    ];
    let rows: Vec<[String; 8]> = statuses
        .iter()
        .map(|s| {
            let digest = s.digest.as_deref().unwrap_or("-");
            [
                s.name.clone().unwrap_or_else(|| "-".into()),
                s.version.clone().unwrap_or_else(|| "-".into()),
                format!("{:?}", s.state).to_lowercase(),
                s.queue_depth.to_string(),
                s.reconciles.to_string(),
                digest.chars().take(19).collect(),
                s.source.clone(),
                s.last_error
                    .clone()
                    .or_else(|| s.degraded.clone())
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in &rows {
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_aligns_columns_and_shortens_digests() {
        let status = PluginStatus {
            source: "/plugins/webapp.wasm".into(),
            name: Some("webapp".into()),
            version: Some("0.2.0".into()),
            digest: Some(format!("sha256:{}", "ab".repeat(32))),
            state: PluginState::Running,
            queue_depth: 3,
            reconciles: 120,
            last_error: None,
            degraded: None,
        };
        let failed = PluginStatus {
            source: "/plugins/broken.wasm".into(),
            name: None,
            version: None,
            digest: None,
            state: PluginState::Failed,
            queue_depth: 0,
            reconciles: 0,
            last_error: Some("plugin /plugins/broken.wasm is not a component".into()),
            degraded: None,
        };
        let table = table(&[status, failed]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[0].starts_with("NAME    VERSION  STATE"), "{table}");
        assert!(
            lines[1].starts_with("webapp  0.2.0    running  3"),
            "{table}"
        );
        assert!(lines[1].contains("sha256:abababababab "), "{table}");
        assert!(lines[2].ends_with("is not a component"), "{table}");
        let column = |line: &str| line.find("/plugins/");
        assert_eq!(column(lines[1]), column(lines[2]), "{table}");
    }
}
