//! The shared informer cache: one list+watch per kind for the whole process, shared by every
//! plugin that needs the kind and stopped when the last of them lets go.
//!
//! A cache may be scoped to a list of namespaces: namespaced kinds are then watched with one
//! list+watch per namespace feeding the same store, and cluster-scoped kinds as usual.
//!
//! When the replica owns a shard ([`Cache::with_shard`]), a kind may be informed in two views:
//! [`View::Shard`], only the objects labelled with the replica's shard (what a plugin's primary
//! and owned kinds use), and [`View::All`] (what every other read uses); a kind is watched once
//! per view in use. Without a shard both views are the same informer.
//!
//! Kinds are resolved through discovery (any built-in kind or CRD); a kind named without a
//! version is informed at the version the apiserver prefers. Objects are kept as their
//! JSON text (managedFields stripped, streamed from the response without building a tree) beside
//! the few parsed fields the indexes use, so a guest gets its JSON without re-serialisation.
//!
//! Memory, measured by `cargo bench -p wasmop --bench cache` (the informer against an in-process
//! apiserver; RSS per object over the JSON it holds): 10,000 ConfigMaps of about 750 bytes of JSON
//! with two labels and an annotation of their own cost about 1.35 KiB each, 1.8 times their JSON
//! (the host against a real apiserver, without the annotation: 1.2 KiB, 1.6 times). Beside the
//! text (rounded up to the allocator's size class), an object costs its key, resourceVersion and
//! a few pointers; equal label and annotation maps are shared within a store; indexes hold one
//! pointer per object and value, never a copy of a key.
//!
//! This module knows kube but neither plugins nor the runtime.
//!
//! Imports: the contract only; every other module may read the cache, so it imports none of them.

mod gauges;
mod informer;
mod object;
mod resource;
mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use kube::Client;
use kube::core::ApiResource;
use kube::discovery::{self, ApiCapabilities, Scope};

pub use gauges::CacheGauges;
pub use informer::{Change, Handler, Informer, Subscription};
#[cfg(test)]
pub(crate) use object::WatchedObject;
pub use object::{CachedObject, ControllerRef, ResourceVersion, StringMap};
pub(crate) use resource::dynamic_resource;
pub use store::IndexSpec;

use wasmop_contract::object::{GroupVersionKind, shown_api_version};

/// The cache could not serve a kind.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Discovery did not find the kind (a CRD not installed, a typo in the group or version).
    #[error("the apiserver does not serve {kind} in {api_version}: {source}")]
    Discovery {
        /// The kind.
        kind: String,
        /// Its apiVersion.
        api_version: String,
        /// The discovery error.
        source: kube::Error,
    },
    /// The kind's informer did not list everything within the time allowed.
    #[error("{kind} in {api_version} did not sync within {after:?}: {reason}")]
    NotSynced {
        /// The kind.
        kind: String,
        /// Its apiVersion.
        api_version: String,
        /// The time allowed.
        after: std::time::Duration,
        /// The watch's last failure, or what was still awaited.
        reason: String,
    },
    /// The plugin the informer was for may not have the host list and watch the kind.
    #[error("the host does not inform {kind} in {api_version} for the plugin: it {reason}")]
    Refused {
        /// The kind.
        kind: String,
        /// Its apiVersion.
        api_version: String,
        /// What the capability check refused.
        reason: String,
    },
}

impl CacheError {
    /// Informing `kind` was refused for `reason`.
    pub(crate) fn refused(kind: &GroupVersionKind, reason: String) -> Self {
        CacheError::Refused {
            kind: kind.kind.clone(),
            api_version: shown_api_version(kind),
            reason,
        }
    }

    /// `kind` did not sync within `after`, for `reason`.
    pub(crate) fn not_synced(
        kind: &GroupVersionKind,
        after: std::time::Duration,
        reason: String,
    ) -> Self {
        CacheError::NotSynced {
            kind: kind.kind.clone(),
            api_version: shown_api_version(kind),
            after,
            reason,
        }
    }
}

/// Which namespaces the cache watches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Namespaces {
    /// Every namespace, with one cluster-wide watch per kind.
    #[default]
    All,
    /// Only these, with one watch per namespace and kind.
    Only(Vec<String>),
}

impl Namespaces {
    /// Whether objects in `namespace` are watched.
    pub fn contains(&self, namespace: &str) -> bool {
        match self {
            Namespaces::All => true,
            Namespaces::Only(namespaces) => namespaces.iter().any(|n| n == namespace),
        }
    }

    /// The watches a kind needs: one per namespace for a namespaced kind when only some are
    /// watched, else one cluster-wide (`None`).
    pub fn scopes(&self, namespaced: bool) -> Vec<Option<String>> {
        match (self, namespaced) {
            (Namespaces::Only(namespaces), true) => namespaces.iter().cloned().map(Some).collect(),
            _ => vec![None],
        }
    }
}

impl std::fmt::Display for Namespaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Namespaces::All => f.write_str("all namespaces"),
            Namespaces::Only(namespaces) => write!(f, "{}", namespaces.join(", ")),
        }
    }
}

/// Which of a kind's objects an informer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum View {
    /// Every object in the cache's namespaces.
    All,
    /// Only those labelled with the replica's shard (every object when it owns no shard).
    Shard,
}

/// The objects a replica owns: those whose label `label` is `member`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// The shard label's key.
    pub label: String,
    /// The replica's member id, the label's value on its objects.
    pub member: String,
}

impl Shard {
    /// The label selector of the shard's objects.
    pub fn selector(&self) -> String {
        format!("{}={}", self.label, self.member)
    }
}

/// The process's informers, by kind and view.
pub struct Cache {
    client: Client,
    namespaces: Namespaces,
    shard: Option<Shard>,
    informers: Mutex<HashMap<(GroupVersionKind, View), Weak<Informer>>>,
}

impl Cache {
    /// An empty cache that will watch every namespace through `client`.
    pub fn new(client: Client) -> Self {
        Cache::scoped(client, Namespaces::All)
    }

    /// An empty cache that will watch `namespaces` through `client`.
    pub fn scoped(client: Client, namespaces: Namespaces) -> Self {
        Cache {
            client,
            namespaces,
            shard: None,
            informers: Mutex::default(),
        }
    }

    /// The same cache, whose [`View::Shard`] informers hold only the objects of `shard`.
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = Some(shard);
        self
    }

    /// The replica's shard, if it owns one.
    pub fn shard(&self) -> Option<&Shard> {
        self.shard.as_ref()
    }

    /// `view` as this cache serves it: without a shard, a shard's view is the whole kind.
    fn served(&self, view: View) -> View {
        match self.shard {
            Some(_) => view,
            None => View::All,
        }
    }

    /// Its size per kind as gauges, for the process's metrics.
    pub fn gauges(self: &Arc<Self>) -> CacheGauges {
        CacheGauges::new(self)
    }

    /// The namespaces it watches.
    pub fn namespaces(&self) -> &Namespaces {
        &self.namespaces
    }

    /// The informer of every object of `kind`, started on first use; it runs while any handle to
    /// it lives.
    pub async fn informer(&self, kind: &GroupVersionKind) -> Result<Arc<Informer>, CacheError> {
        self.informer_in(kind, View::All).await
    }

    /// The informer of `kind` in `view`, started on first use; it runs while any handle to it
    /// lives.
    pub async fn informer_in(
        &self,
        kind: &GroupVersionKind,
        view: View,
    ) -> Result<Arc<Informer>, CacheError> {
        if let Some(informer) = self.running_in(kind, view) {
            return Ok(informer);
        }
        let (resource, capabilities) =
            discover(&self.client, kind)
                .await
                .map_err(|source| CacheError::Discovery {
                    kind: kind.kind.clone(),
                    api_version: shown_api_version(kind),
                    source,
                })?;
        let kind = &GroupVersionKind::gvk(&resource.group, &resource.version, &resource.kind);
        let key = (kind.clone(), self.served(view));
        let mut informers = self.informers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(informer) = informers.get(&key).and_then(Weak::upgrade) {
            return Ok(informer);
        }
        let namespaced = capabilities.scope == Scope::Namespaced;
        let scope = self.namespaces.scopes(namespaced);
        let selector = match key.1 {
            View::All => None,
            View::Shard => self.shard.as_ref().map(Shard::selector),
        };
        let informer = Informer::start(
            self.client.clone(),
            kind.clone(),
            resource,
            namespaced,
            (&scope, selector),
        );
        informers.insert(key, Arc::downgrade(&informer));
        Ok(informer)
    }

    /// The informer of every object of `kind`, if one is running.
    pub fn running(&self, kind: &GroupVersionKind) -> Option<Arc<Informer>> {
        self.running_in(kind, View::All)
    }

    /// The informer of `kind` in `view`, if one is running.
    pub fn running_in(&self, kind: &GroupVersionKind, view: View) -> Option<Arc<Informer>> {
        self.informers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(kind.clone(), self.served(view)))
            .and_then(Weak::upgrade)
    }

    /// The kinds being watched now (in any view).
    pub fn kinds(&self) -> Vec<GroupVersionKind> {
        let mut kinds: Vec<GroupVersionKind> =
            self.informers().iter().map(|i| i.kind().clone()).collect();
        kinds.dedup();
        kinds
    }

    /// The informers running now, sorted by kind.
    pub fn informers(&self) -> Vec<Arc<Informer>> {
        let mut informers = self.informers.lock().unwrap_or_else(|e| e.into_inner());
        informers.retain(|_, informer| informer.strong_count() > 0);
        let mut running: Vec<Arc<Informer>> =
            informers.values().filter_map(Weak::upgrade).collect();
        let order = |i: &Arc<Informer>| {
            let kind = i.kind();
            (kind.group.clone(), kind.version.clone(), kind.kind.clone())
        };
        running.sort_by_key(order);
        running
    }
}

/// The resource of `kind` the apiserver serves: at its version, or, when it names none (a
/// permission of every version), at its group's preferred version if that serves the kind, else at
/// the most stable version that does.
pub async fn discover(
    client: &Client,
    kind: &GroupVersionKind,
) -> Result<(ApiResource, ApiCapabilities), kube::Error> {
    if !kind.version.is_empty() {
        return discovery::pinned_kind(client, kind).await;
    }
    let group = discovery::group(client, &kind.group).await?;
    let most_stable = || {
        (group.resources_by_stability().into_iter())
            .find(|(resource, _)| resource.kind == kind.kind)
    };
    group
        .recommended_kind(&kind.kind)
        .or_else(most_stable)
        .ok_or_else(|| {
            let missing = format!("{} in group {:?}", kind.kind, kind.group);
            kube::Error::Discovery(kube::error::DiscoveryError::MissingKind(missing))
        })
}
