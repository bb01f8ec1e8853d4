//! The sharder's view of the objects it labels: one metadata-only list+watch per kind (one per
//! namespace when the operator watches a list of them), keeping per object only its key, its
//! shard labels and its controller's name, so the leader holds a few dozen bytes per object
//! whatever the objects carry. Each object is read as that metadata alone ([`Meta`]); everything
//! else is skipped without recursion, so no object's depth fails a list or a watch.
//!
//! A kind is watched in a task of its own from the first plugin naming it until the last lets go
//! ([`Watches::set`]); every change wakes the sharder. A (re)list replaces its namespace's objects
//! only once it is whole, so a store is never a mix of two lists.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::Api;
use kube::core::ApiResource;
use kube::discovery::{self, Scope};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::cache::Namespaces;
use wasmop_contract::object::{GroupVersionKind, ObjectKey};

use crate::cache::dynamic_resource;
use crate::shard::assign::ShardLabels;

/// The longest wait between two discoveries of a kind the apiserver does not serve (yet).
const DISCOVERY_BACKOFF: Duration = Duration::from_secs(60);

/// What the watch reads of each object: the metadata the sharder keeps. Every other member (the
/// spec, and managedFields, which nest as deep as the object) is skipped without recursion.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(from = "Read")]
struct Meta {
    metadata: ObjectMeta,
}

/// [`Meta`] as it is read.
#[derive(serde::Deserialize)]
struct Read {
    #[serde(default)]
    metadata: Fields,
}

/// The metadata fields the sharder reads.
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fields {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
    labels: Option<std::collections::BTreeMap<String, String>>,
    owner_references: Option<Vec<OwnerReference>>,
}

impl From<Read> for Meta {
    fn from(read: Read) -> Self {
        let Fields {
            name,
            namespace,
            resource_version,
            labels,
            owner_references,
        } = read.metadata;
        let metadata = ObjectMeta {
            name,
            namespace,
            resource_version,
            labels,
            owner_references,
            ..ObjectMeta::default()
        };
        Meta { metadata }
    }
}

dynamic_resource!(Meta, metadata);

/// An object's shard labels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Shard {
    /// The owner label's value.
    pub owner: Option<String>,
    /// Whether it carries the drain label.
    pub draining: bool,
}

/// The object that controls another, as its controller ownerReference names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Controller {
    /// Its apiVersion.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its name (in the controlled object's namespace, unless its kind is cluster-scoped).
    pub name: String,
}

/// What the sharder keeps of one object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Tracked {
    /// Its shard labels.
    pub shard: Shard,
    /// Its controller, if any.
    pub controller: Option<Box<Controller>>,
}

impl Tracked {
    /// What the sharder keeps of the object `meta` describes, with `labels`' values.
    fn new(meta: ObjectMeta, labels: &ShardLabels) -> (ObjectKey, Tracked) {
        let key = ObjectKey::new(
            meta.namespace.unwrap_or_default(),
            meta.name.unwrap_or_default(),
        );
        let mut all = meta.labels.unwrap_or_default();
        let shard = Shard {
            owner: all.remove(&labels.owner),
            draining: all.contains_key(&labels.drain),
        };
        let controller = meta
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .find(|o| o.controller == Some(true))
            .map(|o| {
                Box::new(Controller {
                    api_version: o.api_version,
                    kind: o.kind,
                    name: o.name,
                })
            });
        (key, Tracked { shard, controller })
    }
}

/// The objects of one kind as last listed and watched.
#[derive(Debug, Default)]
pub(super) struct Objects {
    /// How to reach the kind, once discovery has found it.
    pub resource: Option<ApiResource>,
    /// The objects, by key.
    pub objects: HashMap<ObjectKey, Tracked>,
}

impl Objects {
    /// The object a controller ownerReference names from an object in `namespace`.
    pub fn controller(&self, namespace: &str, name: &str) -> Option<&Tracked> {
        self.objects
            .get(&ObjectKey::new(namespace, name))
            .or_else(|| self.objects.get(&ObjectKey::new("", name)))
    }

    /// Replaces the objects of `scope` (one namespace, or all when `None`) with `listed`.
    fn relisted(&mut self, scope: Option<&str>, listed: Vec<(ObjectKey, Tracked)>) {
        match scope {
            Some(namespace) => self.objects.retain(|key, _| key.namespace != namespace),
            None => self.objects.clear(),
        }
        self.objects.extend(listed);
    }
}

/// The objects each watch of a kind has listed so far in a (re)list not yet whole, by scope.
type Listing = HashMap<Option<String>, Vec<(ObjectKey, Tracked)>>;

/// A kind's objects, shared between its watch task and the sharder.
pub(super) type SharedObjects = Arc<Mutex<Objects>>;

/// Locks `objects`; no lock is held across an await, so a poisoned one is still consistent.
pub(super) fn lock(objects: &SharedObjects) -> MutexGuard<'_, Objects> {
    objects.lock().unwrap_or_else(|e| e.into_inner())
}

/// One kind's watch task and what it feeds; dropping it stops the task.
struct Watch {
    objects: SharedObjects,
    task: JoinHandle<()>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The kinds being watched; dropping it stops every watch.
pub(super) struct Watches {
    client: kube::Client,
    namespaces: Namespaces,
    labels: ShardLabels,
    changed: Arc<Notify>,
    kinds: HashMap<GroupVersionKind, Watch>,
}

impl Watches {
    /// No watches yet; each will notify `changed` when its objects change.
    pub fn new(
        client: kube::Client,
        namespaces: Namespaces,
        labels: ShardLabels,
        changed: Arc<Notify>,
    ) -> Self {
        Watches {
            client,
            namespaces,
            labels,
            changed,
            kinds: HashMap::new(),
        }
    }

    /// Watches exactly `kinds`: starts those not watched yet and stops the others.
    pub fn set(&mut self, kinds: &[&GroupVersionKind]) {
        self.kinds.retain(|kind, _| kinds.contains(&kind));
        for &kind in kinds {
            if !self.kinds.contains_key(kind) {
                let watch = self.start(kind.clone());
                self.kinds.insert(kind.clone(), watch);
            }
        }
    }

    /// The objects of `kind`, if it is watched.
    pub fn objects(&self, kind: &GroupVersionKind) -> Option<&SharedObjects> {
        self.kinds.get(kind).map(|watch| &watch.objects)
    }

    fn start(&self, kind: GroupVersionKind) -> Watch {
        let objects = SharedObjects::default();
        let feed = Feed {
            client: self.client.clone(),
            namespaces: self.namespaces.clone(),
            labels: self.labels.clone(),
            objects: objects.clone(),
            changed: self.changed.clone(),
        };
        let task = tokio::spawn(feed.run(kind));
        Watch { objects, task }
    }
}

/// What one kind's watch task needs.
struct Feed {
    client: kube::Client,
    namespaces: Namespaces,
    labels: ShardLabels,
    objects: SharedObjects,
    changed: Arc<Notify>,
}

impl Feed {
    /// Finds the kind, then keeps its objects up to date until aborted.
    async fn run(self, kind: GroupVersionKind) {
        let (resource, namespaced) = discover(&self.client, &kind).await;
        lock(&self.objects).resource = Some(resource.clone());
        let streams = self
            .namespaces
            .scopes(namespaced)
            .into_iter()
            .map(|scope| self.stream(&resource, scope));
        let mut events = futures::stream::select_all(streams);
        let mut listing = Listing::new();
        while let Some((scope, event)) = events.next().await {
            match event {
                Ok(event) => {
                    if self.apply(scope, event, &mut listing) {
                        self.changed.notify_one();
                    }
                }
                Err(error) => {
                    tracing::warn!(kind = %kind.kind, "sharder watch failed, retrying with backoff: {error}");
                }
            }
        }
    }

    /// Applies one event of `scope`'s watch; true when the sharder has something new to see.
    fn apply(&self, scope: Option<String>, event: Event<Meta>, listing: &mut Listing) -> bool {
        match event {
            Event::Init => {
                listing.insert(scope, Vec::new());
                false
            }
            Event::InitApply(object) => {
                let tracked = Tracked::new(object.metadata, &self.labels);
                listing.entry(scope).or_default().push(tracked);
                false
            }
            Event::InitDone => {
                let listed = listing.remove(&scope).unwrap_or_default();
                lock(&self.objects).relisted(scope.as_deref(), listed);
                true
            }
            Event::Apply(object) => {
                let (key, tracked) = Tracked::new(object.metadata, &self.labels);
                let previous = lock(&self.objects).objects.insert(key, tracked.clone());
                previous.as_ref() != Some(&tracked)
            }
            Event::Delete(object) => {
                let (key, _) = Tracked::new(object.metadata, &self.labels);
                lock(&self.objects).objects.remove(&key).is_some()
            }
        }
    }

    /// The metadata-only watch of `scope`, its events tagged with it.
    fn stream(
        &self,
        resource: &ApiResource,
        scope: Option<String>,
    ) -> BoxStream<'static, (Option<String>, watcher::Result<Event<Meta>>)> {
        let api: Api<Meta> = match &scope {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, resource),
            None => Api::all_with(self.client.clone(), resource),
        };
        watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .map(move |event| (scope.clone(), event))
            .boxed()
    }
}

/// The kind's resource and whether it is namespaced, retrying with backoff until the apiserver
/// serves it (a CRD may be installed after the plugin that names it).
async fn discover(client: &kube::Client, kind: &GroupVersionKind) -> (ApiResource, bool) {
    let mut wait = Duration::from_secs(1);
    loop {
        match discovery::pinned_kind(client, kind).await {
            Ok((resource, capabilities)) => {
                return (resource, capabilities.scope == Scope::Namespaced);
            }
            Err(error) => {
                tracing::warn!(kind = %kind.kind, "the sharder cannot find the kind, retrying in {wait:?}: {error}");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(DISCOVERY_BACKOFF);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(namespace: &str, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            namespace: Some(namespace.into()),
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn an_object_is_kept_as_its_shard_labels_and_its_controller() {
        let labels = ShardLabels::new("op");
        let reference = |name: &str, controller| OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            controller,
            ..Default::default()
        };
        let mut secret = meta(
            "shop",
            "web-tls",
            &[
                (&labels.owner, "a"),
                (&labels.drain, "true"),
                ("app", "web"),
            ],
        );
        secret.owner_references =
            Some(vec![reference("other", None), reference("web", Some(true))]);
        let (key, tracked) = Tracked::new(secret, &labels);
        assert_eq!(key, ObjectKey::new("shop", "web-tls"));
        let shard = Shard {
            owner: Some("a".into()),
            draining: true,
        };
        assert_eq!(tracked.shard, shard);
        assert_eq!(tracked.controller.unwrap().name, "web");
        let (_, bare) = Tracked::new(meta("shop", "web", &[]), &labels);
        assert_eq!(bare, Tracked::default());
    }

    #[test]
    fn an_object_of_any_depth_is_read_as_its_metadata() {
        let deep = wasmop_contract::depth::nested(100_000);
        let page = format!(
            r#"{{"kind":"List","apiVersion":"v1","metadata":{{}},"items":[{{"metadata":{{"name":"deep",
            "namespace":"a","resourceVersion":"3","labels":{{"app":"x"}},"managedFields":[{{"fieldsV1":{deep}}}]}},
            "spec":{deep}}}]}}"#
        );
        let list: kube::core::ObjectList<Meta> = serde_json::from_str(&page).unwrap();
        let metadata = &list.items[0].metadata;
        assert_eq!(
            (
                metadata.name.as_deref(),
                metadata.resource_version.as_deref()
            ),
            (Some("deep"), Some("3"))
        );
        assert_eq!(metadata.labels.as_ref().unwrap()["app"], "x");
    }

    #[test]
    fn a_relist_replaces_only_its_own_namespace() {
        let labels = ShardLabels::new("op");
        let mut objects = Objects::default();
        let tracked = |namespace, name| Tracked::new(meta(namespace, name, &[]), &labels);
        objects.relisted(Some("a"), vec![tracked("a", "one"), tracked("a", "two")]);
        objects.relisted(Some("b"), vec![tracked("b", "one")]);
        objects.relisted(Some("a"), vec![tracked("a", "three")]);
        let mut keys: Vec<String> = objects.objects.keys().map(|k| k.to_string()).collect();
        keys.sort();
        assert_eq!(keys, ["a/three", "b/one"]);
        assert!(objects.controller("b", "one").is_some());
        objects.relisted(None, vec![tracked("", "node")]);
        assert!(objects.controller("b", "node").is_some());
        assert_eq!(objects.objects.len(), 1);
    }
}
