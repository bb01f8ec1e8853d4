//! Why a plugin change could not be made: its load, its identity's rights, its signature, its
//! name, or its informers.

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
