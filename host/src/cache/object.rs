//! One cached object: its JSON text (what guests receive, never re-serialised per read) beside
//! the few parsed fields the cache indexes and filters on.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{ApiResource, Resource};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::object::ObjectKey;

/// An object as the cache holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedObject {
    /// Namespace and name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: String,
    /// metadata.resourceVersion.
    pub resource_version: String,
    /// metadata.generation (0 when the kind has none).
    pub generation: i64,
    /// metadata.labels.
    pub labels: StringMap,
    /// metadata.annotations.
    pub annotations: StringMap,
    /// The controller owner, if any.
    pub controller: Option<ControllerRef>,
    /// The whole object without managedFields, as JSON text.
    pub json: Arc<str>,
}

impl CachedObject {
    /// The object's JSON parsed again, for the rare reader that needs a field not kept here.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }

    /// The string at a dotted path (`spec.nodeName`), for field selectors and indexes.
    pub fn field(&self, path: &str) -> Option<String> {
        self.field_in(path, &std::cell::OnceCell::new())
    }

    /// Like [`CachedObject::field`], parsing the JSON at most once into `parsed` across calls, so
    /// a selector of several requirements reads one object in one parse.
    pub fn field_in(&self, path: &str, parsed: &std::cell::OnceCell<Value>) -> Option<String> {
        match path {
            "metadata.name" => Some(self.key.name.clone()),
            "metadata.namespace" => Some(self.key.namespace.clone()),
            _ => {
                let value = parsed.get_or_init(|| self.value());
                let found = path.split('.').try_fold(value, |v, key| v.get(key))?;
                found.as_str().map(str::to_owned)
            }
        }
    }
}

/// Labels or annotations, sorted by key in one boxed slice: most objects carry only a few, and
/// a B-tree map's first node alone costs about half a KiB.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StringMap(Box<[(String, String)]>);

impl StringMap {
    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let found = self.0.binary_search_by(|(k, _)| k.as_str().cmp(key)).ok()?;
        Some(self.0[found].1.as_str())
    }

    /// The pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl From<BTreeMap<String, String>> for StringMap {
    fn from(map: BTreeMap<String, String>) -> Self {
        StringMap(map.into_iter().collect())
    }
}

impl FromIterator<(String, String)> for StringMap {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        pairs.into_iter().collect::<BTreeMap<_, _>>().into()
    }
}

/// An object's controller owner reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRef {
    /// The owner's apiVersion.
    pub api_version: String,
    /// The owner's kind.
    pub kind: String,
    /// The owner's name (in the object's namespace).
    pub name: String,
    /// The owner's UID.
    pub uid: String,
}

/// What the watcher decodes each object into: metadata for its bookkeeping, and the JSON text
/// with managedFields stripped.
#[derive(Debug, Clone)]
pub(crate) struct WatchedObject {
    pub meta: ObjectMeta,
    pub json: Arc<str>,
}

impl<'de> Deserialize<'de> for WatchedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut value = Value::deserialize(deserializer)?;
        if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        let meta = ObjectMeta::deserialize(&value["metadata"]).map_err(serde::de::Error::custom)?;
        Ok(WatchedObject {
            meta,
            json: value.to_string().into(),
        })
    }
}

impl Resource for WatchedObject {
    type DynamicType = ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.kind.as_str().into()
    }
    fn group(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.group.as_str().into()
    }
    fn version(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.version.as_str().into()
    }
    fn api_version(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.api_version.as_str().into()
    }
    fn plural(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.plural.as_str().into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

impl From<WatchedObject> for CachedObject {
    fn from(object: WatchedObject) -> Self {
        let meta = object.meta;
        let controller = meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        CachedObject {
            key: ObjectKey::new(
                meta.namespace.clone().unwrap_or_default(),
                meta.name.clone().unwrap_or_default(),
            ),
            uid: meta.uid.unwrap_or_default(),
            resource_version: meta.resource_version.unwrap_or_default(),
            generation: meta.generation.unwrap_or_default(),
            controller: controller.map(|o| ControllerRef {
                api_version: o.api_version.clone(),
                kind: o.kind.clone(),
                name: o.name.clone(),
                uid: o.uid.clone(),
            }),
            labels: meta.labels.unwrap_or_default().into(),
            annotations: meta.annotations.unwrap_or_default().into(),
            json: object.json,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_fields_are_stripped_and_metadata_kept() {
        let json = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop",
            "uid":"u1","resourceVersion":"7","generation":3,"labels":{"app":"web"},
            "ownerReferences":[{"apiVersion":"example.wasmop.dev/v1alpha1","kind":"WebApp","name":"web","uid":"owner","controller":true}],
            "managedFields":[{"manager":"kubectl","operation":"Apply"}]},"spec":{"replicas":2}}"#;
        let cached = CachedObject::from(serde_json::from_str::<WatchedObject>(json).unwrap());
        assert!(!cached.json.contains("managedFields"));
        assert_eq!(cached.key, ObjectKey::new("shop", "web"));
        assert_eq!(
            (
                cached.uid.as_str(),
                cached.resource_version.as_str(),
                cached.generation
            ),
            ("u1", "7", 3)
        );
        let owner = cached.controller.as_ref().unwrap();
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("WebApp", "web", "owner")
        );
        assert_eq!(cached.labels.get("app"), Some("web"));
        assert_eq!(cached.labels.get("tier"), None);
        assert_eq!(
            cached.field("spec.replicas"),
            None,
            "only string fields are indexable"
        );
        assert_eq!(cached.field("metadata.name").as_deref(), Some("web"));
    }

    #[test]
    fn numbers_come_back_as_the_apiserver_sent_them() {
        // Found by the fuzz target (host/src/fuzz/cache.rs): without serde_json's exact float
        // parsing, this number came back one unit in the last place off.
        let json =
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{},"x":-4.2611357284857228e+68}"#;
        let cached = CachedObject::from(serde_json::from_str::<WatchedObject>(json).unwrap());
        assert_eq!(cached.value()["x"].as_f64(), Some(-4.2611357284857228e+68));
    }
}
