//! The cache-backed client a plugin's guests use: reads come from the shared informer cache,
//! writes go straight to the apiserver through kube's dynamic API with the plugin's field
//! manager `wasmop/<plugin>`, and API errors become the WIT error variant.
//!
//! A write is sent as the runtime built and checked it, but for the shard label a sharded
//! replica gives the owned objects it writes ([`shard::label_controlled`]); one whose namespace
//! does not fit its kind's scope (a namespace for a cluster-scoped kind, none for a namespaced
//! one) is refused as `invalid` before anything is sent.
//!
//! Read-your-writes: after a write, the plugin's reads of that object return the written version
//! until the cache catches up with it (or passes it), so a guest never acts on a state older than
//! its own write. Objects it deleted read as not found until the cache has seen the deletion. An
//! entry ends once the cache has seen through the write's resourceVersion, also when the object
//! has changed or gone since, so a later change by someone else is never hidden by it.
//!
//! A plugin's own client's raw requests ([`raw`]) are sent as the runtime checked them.
//!
//! Imports: the contract, `cache` (reads back its own writes) and `shard` (which replica owns an
//! object); never the runtime, `plugins` or `manager`.

mod raw;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::api::{
    Api, DeleteParams, DynamicObject, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use kube::core::ApiResource;
use kube::discovery::{self, Scope};
use serde_json::Value;

use crate::cache::{Cache, Informer, View};
use crate::shard;
use wasmop_contract::imports::{
    Answer, AnswerRoom, ApiError, ApiErrorKind, ApiWriter, CacheReader, DeniedBy, Forward, Json,
    ListOptions, Patch, Propagation, ResourceKind, Transport, Write,
};
use wasmop_contract::object::{GroupVersionKind, ObjectKey, ObjectRef};

/// What the plugin last wrote to one object.
#[derive(Debug, Clone)]
enum Written {
    Stored {
        resource_version: u64,
        json: Json,
    },
    /// Deleted: the uid of the object deleted, when the apiserver's answer named it.
    Deleted {
        uid: Option<String>,
    },
}

/// What the apiserver answered a write.
enum Sent {
    /// The object as stored.
    Stored(Box<DynamicObject>),
    /// A deletion, of the object with this uid if the answer named it.
    Deleted { uid: Option<String> },
}

/// The overlay of a plugin's writes the cache has not caught up with yet.
#[derive(Debug)]
struct Overlay {
    writes: HashMap<(GroupVersionKind, ObjectKey), Written>,
    /// The size at which caught-up entries are next dropped.
    prune_at: usize,
}

impl Default for Overlay {
    fn default() -> Self {
        Overlay {
            writes: HashMap::new(),
            prune_at: MIN_PRUNE,
        }
    }
}

/// The overlay size below which nothing is pruned: what an idle plugin may still hold of writes
/// the cache has long caught up with.
const MIN_PRUNE: usize = 16;

type Writes = Arc<Mutex<Overlay>>;

/// A resource of the apiserver: group, version and plural.
type Resource = (String, String, String);

/// One plugin's view of the cluster: cache reads and apiserver writes.
#[derive(Clone)]
pub struct PluginClient {
    client: kube::Client,
    cache: Arc<Cache>,
    field_manager: String,
    resources: Arc<Mutex<HashMap<GroupVersionKind, (ApiResource, bool)>>>,
    /// The kinds of the resources its raw requests named.
    kinds: Arc<Mutex<HashMap<Resource, ResourceKind>>>,
    written: Writes,
    /// The plugin's primary kind, once it is known to be sharded.
    primary: Option<GroupVersionKind>,
    /// The kinds its primaries control.
    owned: Arc<[GroupVersionKind]>,
}

impl PluginClient {
    /// A client for plugin `plugin`.
    pub fn new(client: kube::Client, cache: Arc<Cache>, plugin: &str) -> Self {
        PluginClient {
            client,
            cache,
            field_manager: format!("wasmop/{plugin}"),
            resources: Arc::default(),
            kinds: Arc::default(),
            written: Arc::default(),
            primary: None,
            owned: Arc::new([]),
        }
    }

    /// The same client for a plugin whose primaries are of kind `primary` and control objects of
    /// kinds `owned`: it reads them in the cache's [`View::Shard`] (of which a sharded replica
    /// holds only its share) and labels what it writes of the owned kinds with the replica's
    /// shard ([`shard::label_controlled`]).
    pub fn sharding(mut self, primary: &GroupVersionKind, owned: &[GroupVersionKind]) -> Self {
        self.primary = Some(primary.clone());
        self.owned = owned.into();
        self
    }

    /// The running informer the plugin reads `kind` from.
    fn informer(&self, kind: &GroupVersionKind) -> Option<Arc<Informer>> {
        let view = match self.primary.as_ref() == Some(kind) || self.owned.contains(kind) {
            true => View::Shard,
            false => View::All,
        };
        self.cache.running_in(kind, view)
    }

    /// `write` as sent: an owned object its primary controls gains the replica's shard label.
    fn labelled(&self, target: &ObjectRef, mut write: Write) -> Write {
        let (Some(shard), Some(primary)) = (self.cache.shard(), &self.primary) else {
            return write;
        };
        if !self.owned.contains(&target.kind) {
            return write;
        }
        if let Write::Create(object)
        | Write::Update(object)
        | Write::Patch {
            patch: Patch::Apply { object, .. },
            status: false,
        } = &mut write
        {
            shard::label_controlled(object, primary, shard);
        }
        write
    }

    async fn api(&self, target: &ObjectRef) -> Result<Api<DynamicObject>, ApiError> {
        let known = self
            .resources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&target.kind)
            .cloned();
        let (resource, namespaced) = match known {
            Some(found) => found,
            None => {
                let (resource, capabilities) = discovery::pinned_kind(&self.client, &target.kind)
                    .await
                    .map_err(api_error)?;
                let found = (resource, capabilities.scope == Scope::Namespaced);
                self.resources
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(target.kind.clone(), found.clone());
                found
            }
        };
        let scoped = |message: &str| {
            let kind = &target.kind.kind;
            Err(ApiError::new(
                ApiErrorKind::Invalid,
                format!("{kind} {message}"),
            ))
        };
        match (namespaced, target.key.namespace.is_empty()) {
            (true, true) => scoped("is namespaced: a write must name its namespace"),
            (false, false) => scoped("is cluster-scoped: its namespace must be empty"),
            (true, false) => Ok(Api::namespaced_with(
                self.client.clone(),
                &target.key.namespace,
                &resource,
            )),
            (false, true) => Ok(Api::all_with(self.client.clone(), &resource)),
        }
    }

    async fn send(&self, target: &ObjectRef, write: Write) -> Result<Sent, ApiError> {
        let api = self.api(target).await?;
        let write = self.labelled(target, write);
        self.perform(&api, &target.key.name, write)
            .await
            .map_err(api_error)
    }

    async fn perform(
        &self,
        api: &Api<DynamicObject>,
        name: &str,
        write: Write,
    ) -> Result<Sent, kube::Error> {
        let post = PostParams {
            field_manager: Some(self.field_manager.clone()),
            ..PostParams::default()
        };
        let object = |value: Value| {
            serde_json::from_value::<DynamicObject>(value).map_err(kube::Error::SerdeError)
        };
        Ok(Sent::Stored(Box::new(match write {
            Write::Create(value) => api.create(&post, &object(value)?).await?,
            Write::Update(value) => api.replace(name, &post, &object(value)?).await?,
            Write::UpdateStatus(value) => api.replace_status(name, &post, &object(value)?).await?,
            Write::Patch { patch, status } => {
                let mut params = PatchParams {
                    field_manager: Some(self.field_manager.clone()),
                    ..PatchParams::default()
                };
                let patch = match patch {
                    Patch::Merge(value) => kube::api::Patch::Merge(value),
                    Patch::Json(ops) => kube::api::Patch::Json(
                        serde_json::from_value(ops).map_err(kube::Error::SerdeError)?,
                    ),
                    Patch::Apply { object, force } => {
                        params.force = force;
                        kube::api::Patch::Apply(object)
                    }
                };
                if status {
                    api.patch_status(name, &params, &patch).await?
                } else {
                    api.patch(name, &params, &patch).await?
                }
            }
            Write::Delete(options) => {
                let params = DeleteParams {
                    preconditions: (options.uid.is_some() || options.resource_version.is_some())
                        .then_some(Preconditions {
                            uid: options.uid,
                            resource_version: options.resource_version,
                        }),
                    propagation_policy: options.propagation.map(|p| match p {
                        Propagation::Background => PropagationPolicy::Background,
                        Propagation::Foreground => PropagationPolicy::Foreground,
                        Propagation::Orphan => PropagationPolicy::Orphan,
                    }),
                    ..DeleteParams::default()
                };
                let uid = api.delete(name, &params).await?.either(
                    |object| object.metadata.uid,
                    |status| status.details.map(|details| details.uid),
                );
                let uid = uid.filter(|uid| !uid.is_empty());
                return Ok(Sent::Deleted { uid });
            }
        })))
    }

    /// Keeps the plugin's write for its reads until the cache catches up. Only kinds the cache
    /// holds are kept (reads of other kinds fail anyway), and entries the cache has caught up with
    /// are dropped whenever the overlay doubles (and the room they took with them), so it stays as
    /// small as the cache's lag.
    fn remember(&self, target: &ObjectRef, written: Written) {
        if self.informer(&target.kind).is_none() {
            return;
        }
        let key = (target.kind.clone(), target.key.clone());
        let mut overlay = self.written.lock().unwrap_or_else(|e| e.into_inner());
        overlay.writes.insert(key, written);
        if overlay.writes.len() >= overlay.prune_at {
            overlay.writes.retain(|(kind, key), written| {
                self.informer(kind)
                    .is_some_and(|informer| !caught_up(written, &informer, key))
            });
            overlay.prune_at = (overlay.writes.len() * 2).max(MIN_PRUNE);
            let room = overlay.prune_at;
            overlay.writes.shrink_to(room);
        }
    }

    /// The plugin's own write of `key` if `informer`, its kind's, has not caught up with it yet.
    fn own_write(&self, informer: &Informer, key: &ObjectKey) -> Option<Written> {
        let mut overlay = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let entry = (informer.kind().clone(), key.clone());
        if caught_up(overlay.writes.get(&entry)?, informer, key) {
            overlay.writes.remove(&entry);
            return None;
        }
        overlay.writes.get(&entry).cloned()
    }
}

/// Whether `informer` reflects a write of `key`: it has seen through the write's resourceVersion
/// (whatever happened to the object since) or holds a version at least as new; for a deletion, it
/// no longer holds the deleted object (nothing, or one created since, with another uid).
fn caught_up(written: &Written, informer: &Informer, key: &ObjectKey) -> bool {
    let cached = informer.get(key);
    match written {
        Written::Stored {
            resource_version, ..
        } => {
            informer.seen_through(&key.namespace) >= *resource_version
                || cached
                    .and_then(|o| o.resource_version.parse::<u64>().ok())
                    .is_some_and(|cached| cached >= *resource_version)
        }
        Written::Deleted { uid } => cached.is_none_or(|o| {
            uid.as_ref()
                .is_some_and(|uid| o.field("metadata.uid").as_ref() != Some(uid))
        }),
    }
}

#[async_trait::async_trait]
impl ApiWriter for PluginClient {
    async fn write(&self, target: &ObjectRef, write: Write) -> Result<Option<Json>, ApiError> {
        match self.send(target, write).await? {
            Sent::Stored(mut object) => {
                object.metadata.managed_fields = None;
                let resource_version = object
                    .metadata
                    .resource_version
                    .as_deref()
                    .and_then(|rv| rv.parse().ok());
                let json: Json = serde_json::to_string(&object)
                    .map_err(|e| ApiError::new(ApiErrorKind::Other, e.to_string()))?
                    .into();
                let name = object.metadata.name.clone().unwrap_or_default();
                let target = ObjectRef {
                    kind: target.kind.clone(),
                    key: ObjectKey::new(target.key.namespace.clone(), name),
                };
                if let Some(resource_version) = resource_version {
                    self.remember(
                        &target,
                        Written::Stored {
                            resource_version,
                            json: json.clone(),
                        },
                    );
                }
                Ok(Some(json))
            }
            Sent::Deleted { uid } => {
                self.remember(target, Written::Deleted { uid });
                Ok(None)
            }
        }
    }
}

#[async_trait::async_trait]
impl Transport for PluginClient {
    async fn resource_kind(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Result<ResourceKind, ApiError> {
        self.discover(group, version, resource).await
    }

    async fn forward(&self, request: Forward, room: &dyn AnswerRoom) -> Result<Answer, ApiError> {
        self.send_raw(request, room).await
    }
}

impl CacheReader for PluginClient {
    fn get(&self, kind: &GroupVersionKind, namespace: &str, name: &str) -> Result<Json, ApiError> {
        let target = ObjectRef::new(kind, namespace, name);
        let informer = self.informer(kind).ok_or_else(|| not_cached(kind))?;
        self.watched(&informer, Some(namespace))?;
        match self.own_write(&informer, &target.key) {
            Some(Written::Stored { json, .. }) => Ok(json),
            Some(Written::Deleted { .. }) => Err(ApiError::not_found(&target)),
            None => informer
                .get(&target.key)
                .map(|o| o.json.clone())
                .ok_or_else(|| ApiError::not_found(&target)),
        }
    }

    fn list(&self, kind: &GroupVersionKind, options: &ListOptions) -> Result<Vec<Json>, ApiError> {
        let informer = self.informer(kind).ok_or_else(|| not_cached(kind))?;
        self.watched(&informer, options.namespace.as_deref())?;
        let objects = informer.list(options.namespace.as_deref(), &options.labels);
        let matching = objects.into_iter().filter(|o| {
            let parsed = std::cell::OnceCell::new();
            options.fields.matches(|path| o.field_in(path, &parsed))
        });
        Ok(matching.map(|o| o.json.clone()).collect())
    }

    fn list_by_index(
        &self,
        kind: &GroupVersionKind,
        index: &str,
        value: &str,
    ) -> Result<Vec<Json>, ApiError> {
        let informer = self.informer(kind).ok_or_else(|| not_cached(kind))?;
        let objects = informer.by_index(index, value).ok_or_else(|| {
            ApiError::new(
                ApiErrorKind::Invalid,
                format!("no field index {index:?} was declared for {}", kind.kind),
            )
        })?;
        Ok(objects.iter().map(|o| o.json.clone()).collect())
    }
}

impl PluginClient {
    /// Refuses reads of a namespace the cache does not watch, rather than reporting not found.
    fn watched(&self, informer: &Informer, namespace: Option<&str>) -> Result<(), ApiError> {
        let namespaces = self.cache.namespaces();
        match namespace {
            Some(namespace) if informer.namespaced() && !namespaces.contains(namespace) => {
                Err(ApiError::new(
                    ApiErrorKind::Invalid,
                    format!(
                        "cannot read {} in namespace {namespace:?}: the operator watches only {namespaces}",
                        informer.kind().kind
                    ),
                ))
            }
            _ => Ok(()),
        }
    }
}

fn not_cached(kind: &GroupVersionKind) -> ApiError {
    ApiError::new(
        ApiErrorKind::Unavailable,
        format!(
            "{} is not in the cache (its informer is not running)",
            kind.kind
        ),
    )
}

/// Maps a kube error to the WIT error variant.
pub fn api_error(error: kube::Error) -> ApiError {
    let kube::Error::Api(status) = error else {
        return ApiError {
            kind: ApiErrorKind::Unavailable,
            code: 0,
            reason: "Unavailable".into(),
            message: error.to_string(),
        };
    };
    let kind = match (status.code, status.reason.as_str()) {
        (404, _) => ApiErrorKind::NotFound,
        (409, "AlreadyExists") => ApiErrorKind::AlreadyExists,
        (409, _) => ApiErrorKind::Conflict,
        (403, _) => ApiErrorKind::Forbidden(DeniedBy::Apiserver),
        (400 | 422, _) => ApiErrorKind::Invalid,
        (408 | 504, _) => ApiErrorKind::Timeout,
        (429 | 503, _) => ApiErrorKind::Unavailable,
        _ => ApiErrorKind::Other,
    };
    ApiError {
        kind,
        code: status.code,
        reason: status.reason.clone(),
        message: status.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_statuses_map_to_the_wit_variant() {
        let status = |code, reason: &str| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                reason: reason.into(),
                message: "m".into(),
                ..Default::default()
            }))
        };
        assert_eq!(
            api_error(status(409, "AlreadyExists")).kind,
            ApiErrorKind::AlreadyExists
        );
        assert_eq!(
            api_error(status(409, "Conflict")).kind,
            ApiErrorKind::Conflict
        );
        assert_eq!(
            api_error(status(403, "Forbidden")).kind,
            ApiErrorKind::Forbidden(DeniedBy::Apiserver)
        );
        assert_eq!(
            api_error(status(422, "Invalid")).kind,
            ApiErrorKind::Invalid
        );
        assert_eq!(api_error(status(429, "TooManyRequests")).code, 429);
    }
}
