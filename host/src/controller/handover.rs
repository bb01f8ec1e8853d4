//! A sharded replica's side of moving an object to another replica: when the leader asks it to
//! let an object go (the drain label), the worker that takes the key — so no reconcile of it is
//! in flight here, the queue never hands a key to two workers — removes both shard labels
//! instead of reconciling, and from then on the replica never reconciles that key while its
//! object is not in its share. The object then leaves this replica's label-selected watch and
//! the leader labels it for its new owner, which starts only after that.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use crate::cache::{Cache, View};
use crate::runtime::Plugin;
use crate::shard::ShardLabels;
use wasmop_contract::object::ObjectKey;

/// The field manager of the labels a replica removes when it lets an object go.
const FIELD_MANAGER: &str = "wasmop-shard";

/// What a worker does with a key it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Reconcile it: the object is in this replica's share (or a plain delete left it).
    Reconcile,
    /// Leave it: it was let go, or has just been.
    Skip,
    /// Letting it go failed; try again with backoff.
    Retry(String),
}

/// The shard labels, and the keys this replica has let go and not been given back.
pub struct Handover {
    client: kube::Client,
    cache: Arc<Cache>,
    labels: ShardLabels,
    released: Mutex<HashSet<ObjectKey>>,
}

impl Handover {
    /// Lets objects go through `client`, reading them from `cache`'s shard view.
    pub fn new(client: kube::Client, cache: Arc<Cache>, labels: ShardLabels) -> Self {
        Handover {
            client,
            cache,
            labels,
            released: Mutex::default(),
        }
    }

    /// The label whose change asks the owner to let an object go.
    pub(crate) fn drain_label(&self) -> &str {
        &self.labels.drain
    }

    /// Whether `key` of `plugin`'s primary kind is to be reconciled here; lets it go first when
    /// it carries the drain label.
    pub(crate) async fn turn(&self, plugin: &Plugin, key: &ObjectKey) -> Turn {
        let kind = &plugin.registration().primary;
        let Some(informer) = self.cache.running_in(kind, View::Shard) else {
            return Turn::Reconcile;
        };
        let object = informer.get(key);
        let draining = {
            let mut released = self.released.lock().unwrap_or_else(|e| e.into_inner());
            match object {
                Some(object) if object.labels.get(&self.labels.drain).is_some() => {
                    // Let go from now on, whatever the patch's fate: a retry finds the label.
                    released.insert(key.clone());
                    object
                }
                Some(_) => {
                    released.remove(key);
                    return Turn::Reconcile;
                }
                None if released.contains(key) => return Turn::Skip,
                None => return Turn::Reconcile,
            }
        };
        let api = match informer.namespaced() {
            true => Api::namespaced_with(self.client.clone(), &key.namespace, informer.resource()),
            false => Api::all_with(self.client.clone(), informer.resource()),
        };
        self.release(plugin, &api, key, &draining.resource_version)
            .await
    }

    /// Removes both shard labels from `key`'s object, as this replica last saw it (at
    /// `resource_version`: a newer one, perhaps already given to its new owner, is left alone),
    /// so the leader can give it to its new owner.
    async fn release(
        &self,
        plugin: &Plugin,
        api: &Api<DynamicObject>,
        key: &ObjectKey,
        resource_version: &str,
    ) -> Turn {
        let labels = json!({"metadata": {
            "resourceVersion": resource_version,
            "labels": {&self.labels.owner: null, &self.labels.drain: null},
        }});
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        match api.patch(&key.name, &params, &Patch::Merge(&labels)).await {
            Err(kube::Error::Api(status)) if status.code == 404 => Turn::Skip,
            Ok(_) => {
                tracing::info!(plugin = plugin.name(), %key, "let go to another replica");
                Turn::Skip
            }
            Err(error) => Turn::Retry(format!(
                "plugin {}: letting {key} go to another replica failed: {error}",
                plugin.name()
            )),
        }
    }
}
