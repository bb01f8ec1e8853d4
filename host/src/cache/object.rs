//! One cached object: its JSON text (what guests receive, never re-serialised per read) beside
//! the few parsed fields the cache indexes and filters on.
//!
//! Decoding streams the apiserver's text straight into the cached text, leaving out
//! `metadata.managedFields`, without building a tree of the object: every other member is copied
//! as it was sent (order and duplicates kept; numbers written back exactly), and only the metadata
//! fields kept parsed are read again from the span just written. The parsed fields never disagree
//! with the text: each is the last occurrence of its member, as a JSON parser reads the text.
//!
//! The apiserver leaves `apiVersion` and `kind` out of the items of a built-in kind's list; the
//! decoder notes which of them an object lacks ([`Untyped`]) and the informer writes them in from
//! the kind it lists ([`WatchedObject::typed`]), so every cached object carries both.
//!
//! An object nested deeper than [`MAX_DEPTH`] (or whose labels, annotations, owners or generation
//! are mistyped) is not held: its key and resourceVersion are read, the rest is skipped without
//! recursion, and it decodes as [`Unreadable`], so one such object never fails the page or the
//! watch event that carried it, however deep it is.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::core::ApiResource;
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use wasmop_contract::depth::MAX_DEPTH;
use wasmop_contract::object::ObjectKey;

use crate::cache::dynamic_resource;

/// An object as the cache holds it: the JSON text and the few fields parsed from it, with labels
/// and annotations shared between the objects of a store that carry equal ones.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedObject {
    /// Namespace and name.
    pub key: ObjectKey,
    /// metadata.resourceVersion.
    pub resource_version: ResourceVersion,
    /// metadata.generation (0 when the kind has none).
    pub generation: i64,
    /// metadata.labels.
    pub labels: StringMap,
    /// metadata.annotations.
    pub annotations: StringMap,
    /// The controller owner, if any.
    pub controller: Option<Box<ControllerRef>>,
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

/// A resourceVersion: opaque text, in one exact allocation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceVersion(Box<str>);

impl ResourceVersion {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for ResourceVersion {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// Labels or annotations, sorted by key in one boxed slice behind one shared pointer: most
/// objects carry only a few, many carry the same ones (a store interns them), and a B-tree map's
/// first node alone costs about half a KiB.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct StringMap(Arc<Pairs>);

/// A [`StringMap`]'s pairs, sorted by key.
type Pairs = Box<[(Box<str>, Box<str>)]>;

impl StringMap {
    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let found = self.0.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
        Some(&self.0[found].1)
    }

    /// The pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }
}

impl From<BTreeMap<String, String>> for StringMap {
    fn from(map: BTreeMap<String, String>) -> Self {
        let pairs = map.into_iter().map(|(k, v)| (k.into(), v.into()));
        StringMap(Arc::new(pairs.collect()))
    }
}

impl FromIterator<(String, String)> for StringMap {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        pairs.into_iter().collect::<BTreeMap<_, _>>().into()
    }
}

/// The distinct label and annotation maps of one store, so objects carrying equal ones share
/// one copy. Maps no object holds any more are dropped whenever the set has doubled.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    maps: HashSet<StringMap>,
    sweep_at: usize,
}

impl Interner {
    /// Maps held before the first sweep.
    const FIRST_SWEEP: usize = 64;

    /// The shared copy of `map`.
    pub(crate) fn intern(&mut self, map: StringMap) -> StringMap {
        if let Some(shared) = self.maps.get(&map) {
            return shared.clone();
        }
        self.maps.insert(map.clone());
        if self.maps.len() >= self.sweep_at.max(Self::FIRST_SWEEP) {
            self.maps.retain(|m| Arc::strong_count(&m.0) > 1);
            self.sweep_at = self.maps.len() * 2;
        }
        map
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

/// What the watcher decodes each object into: metadata holding only its resourceVersion, all
/// kube's watcher reads of it, and the cached object or why the cache cannot hold it. An object
/// the cache cannot hold still decodes (when its name and resourceVersion can be read), so it
/// never fails the list page or the watch that carried it.
#[derive(Debug, Clone)]
pub(crate) struct WatchedObject {
    pub meta: ObjectMeta,
    pub object: Result<CachedObject, Unreadable>,
    pub untyped: Untyped,
}

/// Which of `apiVersion` and `kind` an object's text lacks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Untyped {
    /// It has no `apiVersion`.
    pub api_version: bool,
    /// It has no `kind`.
    pub kind: bool,
}

/// An object the cache does not hold: nested deeper than [`MAX_DEPTH`], or with a kept metadata
/// field of the wrong type. Its key and resourceVersion were read; the rest was skipped.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unreadable {
    /// Namespace and name.
    pub key: ObjectKey,
    /// metadata.resourceVersion.
    pub resource_version: ResourceVersion,
    /// Why it is not held.
    pub reason: String,
}

impl WatchedObject {
    /// The object's namespace and name.
    pub(crate) fn key(&self) -> &ObjectKey {
        match &self.object {
            Ok(object) => &object.key,
            Err(unreadable) => &unreadable.key,
        }
    }

    /// The object's resourceVersion.
    pub(crate) fn resource_version(&self) -> &ResourceVersion {
        match &self.object {
            Ok(object) => &object.resource_version,
            Err(unreadable) => &unreadable.resource_version,
        }
    }

    /// The object to cache, with the `apiVersion` and `kind` of `resource` (the kind it was
    /// listed or watched as) written first in its text when it lacks them; or why the cache
    /// cannot hold it.
    pub(crate) fn typed(self, resource: &ApiResource) -> Result<CachedObject, Unreadable> {
        let mut object = self.object?;
        let Untyped { api_version, kind } = self.untyped;
        let missing: Vec<(&str, &str)> = [
            (api_version, "apiVersion", &resource.api_version),
            (kind, "kind", &resource.kind),
        ]
        .into_iter()
        .filter_map(|(missing, name, value)| missing.then_some((name, value.as_str())))
        .collect();
        if !missing.is_empty() {
            object.json = prepend(&object.json, &missing);
        }
        Ok(object)
    }
}

/// `json`, an object's text as the decoder wrote it (`{` first), with the string `members`
/// written before its own.
fn prepend(json: &str, members: &[(&str, &str)]) -> Arc<str> {
    use std::fmt::Write as _;
    let own = json.strip_prefix('{').unwrap_or(json);
    let mut out = String::with_capacity(json.len() + 64);
    out.push('{');
    for (name, value) in members {
        let _ = write!(out, "\"{name}\":{},", Value::from(*value));
    }
    if own == "}" {
        out.pop();
    }
    out.push_str(own);
    out.into()
}

impl<'de> Deserialize<'de> for WatchedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// The metadata fields kept parsed, each from its last occurrence, and the first problem met.
#[derive(Default)]
struct Metadata {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    owners: Option<Vec<OwnerReference>>,
    problem: Option<String>,
}

/// Decodes the top-level object: copies every member, the metadata through [`MetadataSeed`],
/// each at most [`MAX_DEPTH`] levels deep with the object around it.
struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = WatchedObject;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WatchedObject, A::Error> {
        let mut out = vec![b'{'];
        let mut metadata = None;
        let mut fits = true;
        let mut untyped = Untyped {
            api_version: true,
            kind: true,
        };
        // The object is one level; what it holds may nest the rest.
        let room = MAX_DEPTH - 1;
        while let Some(key) = map.next_key_seed(KeySeed {
            out: &mut out,
            skip: None,
        })? {
            match key {
                Member::ApiVersion => untyped.api_version = false,
                Member::Kind => untyped.kind = false,
                _ => {}
            }
            if key == Member::Metadata {
                metadata = Some(map.next_value_seed(MetadataSeed {
                    out: &mut out,
                    room,
                })?);
            } else {
                fits &= map.next_value_seed(Copy {
                    out: &mut out,
                    room,
                })?;
            }
        }
        out.push(b'}');
        let metadata: Metadata = metadata.ok_or_else(|| de::Error::missing_field("metadata"))?;
        let resource_version: Box<str> = metadata.resource_version.unwrap_or_default().into();
        let meta = ObjectMeta {
            resource_version: Some(resource_version.to_string()),
            ..ObjectMeta::default()
        };
        let key = ObjectKey::new(
            metadata.namespace.unwrap_or_default(),
            metadata.name.unwrap_or_default(),
        );
        let resource_version = ResourceVersion(resource_version);
        let problem = match fits {
            false => Some(format!("it is nested deeper than {MAX_DEPTH} levels")),
            true => metadata.problem,
        };
        if let Some(reason) = problem {
            let unreadable = Unreadable {
                key,
                resource_version,
                reason,
            };
            return Ok(WatchedObject {
                meta,
                object: Err(unreadable),
                untyped,
            });
        }
        let json = String::from_utf8(out).map_err(de::Error::custom)?;
        let controller = metadata
            .owners
            .into_iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        let object = CachedObject {
            key,
            resource_version,
            generation: metadata.generation.unwrap_or_default(),
            labels: metadata.labels.unwrap_or_default().into(),
            annotations: metadata.annotations.unwrap_or_default().into(),
            controller: controller.map(|o| {
                Box::new(ControllerRef {
                    api_version: o.api_version,
                    kind: o.kind,
                    name: o.name,
                    uid: o.uid,
                })
            }),
            json: json.into(),
        };
        Ok(WatchedObject {
            meta,
            object: Ok(object),
            untyped,
        })
    }
}

/// The members the decoder treats apart.
#[derive(Debug, PartialEq, Eq)]
enum Member {
    ApiVersion,
    Kind,
    Metadata,
    ManagedFields,
    Name,
    Namespace,
    ResourceVersion,
    Generation,
    Labels,
    Annotations,
    OwnerReferences,
    Other,
}

impl Member {
    fn of(key: &str) -> Member {
        match key {
            "apiVersion" => Member::ApiVersion,
            "kind" => Member::Kind,
            "metadata" => Member::Metadata,
            "managedFields" => Member::ManagedFields,
            "name" => Member::Name,
            "namespace" => Member::Namespace,
            "resourceVersion" => Member::ResourceVersion,
            "generation" => Member::Generation,
            "labels" => Member::Labels,
            "annotations" => Member::Annotations,
            "ownerReferences" => Member::OwnerReferences,
            _ => Member::Other,
        }
    }
}

/// Reads a member's key and, unless it is the member `skip`, writes it (after a comma when a
/// member came before) to `out`; says which member it is.
struct KeySeed<'a> {
    out: &'a mut Vec<u8>,
    skip: Option<Member>,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Member;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Member, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Member;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Member, E> {
        let member = Member::of(key);
        if self.skip.as_ref() != Some(&member) {
            if self.out.last() != Some(&b'{') {
                self.out.push(b',');
            }
            write(self.out, key)?;
            self.out.push(b':');
        }
        Ok(member)
    }
}

/// Writes `value` as JSON to `out`.
fn write<T: serde::Serialize + ?Sized, E: de::Error>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), E> {
    serde_json::to_writer(out, value).map_err(E::custom)
}

/// Decodes the metadata: copies every member but managedFields, and parses the kept fields
/// again from the span just written. The name, namespace and resourceVersion must parse (without
/// them the object cannot be told apart); any other problem is noted and decoding goes on.
struct MetadataSeed<'a> {
    out: &'a mut Vec<u8>,
    /// The containers the metadata may nest, itself included.
    room: usize,
}

impl<'de> DeserializeSeed<'de> for MetadataSeed<'_> {
    type Value = Metadata;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Metadata, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetadataSeed<'_> {
    type Value = Metadata;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Metadata, A::Error> {
        let out = self.out;
        out.push(b'{');
        let mut metadata = Metadata::default();
        while let Some(member) = map.next_key_seed(KeySeed {
            out: &mut *out,
            skip: Some(Member::ManagedFields),
        })? {
            if member == Member::ManagedFields {
                map.next_value::<de::IgnoredAny>()?;
                continue;
            }
            let start = out.len();
            let room = self.room.saturating_sub(1);
            if !map.next_value_seed(Copy {
                out: &mut *out,
                room,
            })? {
                let deep = format!("it is nested deeper than {MAX_DEPTH} levels");
                metadata.problem.get_or_insert(deep);
                continue;
            }
            let written = &out[start..];
            let problem = &mut metadata.problem;
            match member {
                Member::Name => metadata.name = parse(written)?,
                Member::Namespace => metadata.namespace = parse(written)?,
                Member::ResourceVersion => metadata.resource_version = parse(written)?,
                Member::Generation => {
                    keep(written, "generation", &mut metadata.generation, problem)
                }
                Member::Labels => keep(written, "labels", &mut metadata.labels, problem),
                Member::Annotations => {
                    keep(written, "annotations", &mut metadata.annotations, problem)
                }
                Member::OwnerReferences => {
                    keep(written, "ownerReferences", &mut metadata.owners, problem)
                }
                Member::ApiVersion
                | Member::Kind
                | Member::Metadata
                | Member::ManagedFields
                | Member::Other => {}
            }
        }
        out.push(b'}');
        Ok(metadata)
    }
}

/// Parses a kept field from the text just written for it into `slot`, or notes in `problem` that
/// it is mistyped.
fn keep<T: DeserializeOwned>(
    written: &[u8],
    field: &str,
    slot: &mut Option<T>,
    problem: &mut Option<String>,
) {
    match serde_json::from_slice(written) {
        Ok(value) => *slot = value,
        Err(_) => {
            problem.get_or_insert_with(|| format!("metadata.{field} is not of its type"));
        }
    }
}

/// Parses a member's value from the text just written for it.
fn parse<T: DeserializeOwned, E: de::Error>(written: &[u8]) -> Result<T, E> {
    serde_json::from_slice(written).map_err(E::custom)
}

/// Copies one value to `out` as compact JSON, nesting at most `room` containers; says whether it
/// fit. A value that does not fit is read to its end without recursion (serde_json skips it
/// iteratively, past its own recursion limit) and what was written of it is garbage.
struct Copy<'a> {
    out: &'a mut Vec<u8>,
    room: usize,
}

impl<'de> DeserializeSeed<'de> for Copy<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Copy<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        write(self.out, &v).map(|()| true)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        write(self.out, &v).map(|()| true)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        write(self.out, &v).map(|()| true)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        write(self.out, &v).map(|()| true)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        write(self.out, v).map(|()| true)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        self.out.extend_from_slice(b"null");
        Ok(true)
    }

    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let Some(room) = self.room.checked_sub(1) else {
            while seq.next_element::<de::IgnoredAny>()?.is_some() {}
            return Ok(false);
        };
        let out = self.out;
        out.push(b'[');
        let mut first = true;
        loop {
            let comma = out.len();
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            match seq.next_element_seed(Copy {
                out: &mut *out,
                room,
            })? {
                None => {
                    out.truncate(comma);
                    break;
                }
                Some(true) => {}
                Some(false) => {
                    while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                    return Ok(false);
                }
            }
        }
        out.push(b']');
        Ok(true)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let Some(room) = self.room.checked_sub(1) else {
            while map
                .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                .is_some()
            {}
            return Ok(false);
        };
        let out = self.out;
        out.push(b'{');
        let mut fits = true;
        while map
            .next_key_seed(KeySeed {
                out: &mut *out,
                skip: None,
            })?
            .is_some()
        {
            if fits {
                fits = map.next_value_seed(Copy {
                    out: &mut *out,
                    room,
                })?;
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        out.push(b'}');
        Ok(fits)
    }
}

dynamic_resource!(WatchedObject, meta);

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(json: &str) -> CachedObject {
        let watched: WatchedObject = serde_json::from_str(json).unwrap();
        watched.object.unwrap()
    }

    fn unreadable(json: &str) -> Unreadable {
        let watched: WatchedObject = serde_json::from_str(json).unwrap();
        watched.object.unwrap_err()
    }

    #[test]
    fn managed_fields_are_stripped_and_metadata_kept() {
        let json = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop",
            "uid":"u1","resourceVersion":"7","generation":3,"labels":{"app":"web"},
            "ownerReferences":[{"apiVersion":"example.wasmop.dev/v1alpha1","kind":"WebApp","name":"web","uid":"owner","controller":true}],
            "managedFields":[{"manager":"kubectl","operation":"Apply"}]},"spec":{"replicas":2}}"#;
        let cached = cached(json);
        assert!(!cached.json.contains("managedFields"));
        assert_eq!(cached.key, ObjectKey::new("shop", "web"));
        assert_eq!(
            (cached.resource_version.as_str(), cached.generation),
            ("7", 3)
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
        let cached = cached(json);
        assert_eq!(cached.value()["x"].as_f64(), Some(-4.2611357284857228e+68));
    }

    #[test]
    fn members_are_copied_as_sent_and_the_last_occurrence_is_the_one_parsed() {
        let json = r#"{"kind":"ConfigMap","metadata":{"managedFields":[{"manager":"a"}],"name":"a","labels":{"x":"1"},
            "managedFields":null,"name":"b","labels":{"x":"2"}},"data":{"k":"v\"\u00e9","n":[1,2.5,-3,true,null,{}]},"apiVersion":"v1"}"#;
        let cached = cached(json);
        assert_eq!(
            &*cached.json,
            r#"{"kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"1"},"name":"b","labels":{"x":"2"}},"data":{"k":"v\"é","n":[1,2.5,-3,true,null,{}]},"apiVersion":"v1"}"#
        );
        assert_eq!(cached.key.name, "b");
        assert_eq!(cached.labels.get("x"), Some("2"));
        assert_eq!(cached.value()["metadata"]["name"], "b");
    }

    #[test]
    fn objects_without_metadata_or_a_readable_name_fail_to_decode() {
        for json in [
            r#"{"kind":"ConfigMap"}"#,
            r#"{"metadata":null}"#,
            r#"{"metadata":{"name":7}}"#,
            r#"{"metadata":{"resourceVersion":{}}}"#,
            r#"[]"#,
        ] {
            assert!(
                serde_json::from_str::<WatchedObject>(json).is_err(),
                "{json}"
            );
        }
    }

    #[test]
    fn objects_with_mistyped_fields_decode_as_unreadable() {
        for (json, reason) in [
            (
                r#"{"metadata":{"name":"a","labels":{"a":1}}}"#,
                "metadata.labels is not of its type",
            ),
            (
                r#"{"metadata":{"name":"a","generation":"3"}}"#,
                "metadata.generation is not of its type",
            ),
        ] {
            let unreadable = unreadable(json);
            assert_eq!(
                (unreadable.key.name.as_str(), unreadable.reason.as_str()),
                ("a", reason)
            );
        }
    }

    /// A list page as the apiserver sends it, with `items` in it.
    fn page(items: &[String]) -> String {
        format!(
            r#"{{"kind":"List","apiVersion":"v1","metadata":{{"resourceVersion":"9"}},"items":[{}]}}"#,
            items.join(",")
        )
    }

    fn object(name: &str, spec: &str) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"Blob","metadata":{{"namespace":"n","name":"{name}","resourceVersion":"5",
            "managedFields":[{{"fieldsV1":{spec}}}]}},"spec":{spec}}}"#
        )
    }

    #[test]
    fn listed_objects_get_the_api_version_and_kind_they_lack_from_their_kind() {
        let deployments = kube::api::GroupVersionKind::gvk("apps", "v1", "Deployment");
        let resource = ApiResource::from_gvk(&deployments);
        let items = [
            r#"{"metadata":{"name":"listed","resourceVersion":"3"},"spec":{"replicas":2}}"#,
            r#"{"kind":"Deployment","metadata":{"name":"half"}}"#,
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"watched"}}"#,
        ]
        .map(str::to_owned);
        let list: kube::core::ObjectList<WatchedObject> =
            serde_json::from_str(&page(&items)).unwrap();
        let typed: Vec<CachedObject> = list
            .items
            .into_iter()
            .map(|item| item.typed(&resource).unwrap())
            .collect();
        assert_eq!(
            &*typed[0].json,
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"listed","resourceVersion":"3"},"spec":{"replicas":2}}"#
        );
        assert_eq!(
            &*typed[1].json,
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"half"}}"#
        );
        assert_eq!(&*typed[2].json, items[2], "a typed object is kept as sent");
        for object in &typed {
            let value = object.value();
            assert_eq!(
                (&value["apiVersion"], &value["kind"]),
                (&"apps/v1".into(), &"Deployment".into())
            );
        }
        let bare: WatchedObject =
            serde_json::from_str(r#"{"metadata":{"name":"a","labels":{"a":1}}}"#).unwrap();
        assert!(
            bare.typed(&resource).is_err(),
            "an object the cache cannot hold stays unheld"
        );
    }

    #[test]
    fn a_deep_object_is_skipped_and_never_fails_its_page() {
        use wasmop_contract::depth::nested;
        // The object is one level around its spec: a spec one level shallower than the bound fits.
        let fits = nested(MAX_DEPTH - 1);
        for deep in [MAX_DEPTH, 126, 302, 100_000] {
            let items = [
                object("before", "{}"),
                object("deep", &nested(deep)),
                object("fits", &fits),
            ];
            let list: kube::core::ObjectList<WatchedObject> =
                serde_json::from_str(&page(&items)).unwrap();
            let [before, too_deep, after] = &list.items[..] else {
                panic!("three items");
            };
            assert_eq!(before.object.as_ref().unwrap().key.name, "before");
            let skipped = too_deep.object.as_ref().unwrap_err();
            assert_eq!(
                (skipped.key.name.as_str(), skipped.resource_version.as_str()),
                ("deep", "5")
            );
            assert_eq!(skipped.reason, "it is nested deeper than 64 levels");
            assert_eq!(too_deep.meta.resource_version.as_deref(), Some("5"));
            let after = after.object.as_ref().unwrap();
            assert_eq!(
                wasmop_contract::depth::of_text(after.json.as_bytes()),
                MAX_DEPTH
            );
        }
        let event = format!(
            r#"{{"type":"MODIFIED","object":{}}}"#,
            object("deep", &nested(500))
        );
        let event: kube::core::WatchEvent<WatchedObject> = serde_json::from_str(&event).unwrap();
        let kube::core::WatchEvent::Modified(watched) = event else {
            panic!("a modification");
        };
        assert_eq!(watched.key().name, "deep");
        assert!(watched.object.is_err());
    }

    #[test]
    fn equal_maps_are_interned_and_unused_ones_dropped() {
        let mut interner = Interner::default();
        let map = |i: usize| StringMap::from_iter([("app".to_owned(), i.to_string())]);
        let first = interner.intern(map(0));
        let again = interner.intern(map(0));
        assert!(Arc::ptr_eq(&first.0, &again.0));
        for i in 1..1000 {
            interner.intern(map(i));
        }
        assert!(
            interner.maps.len() < 200,
            "{} maps kept",
            interner.maps.len()
        );
        assert!(interner.maps.contains(&first), "a map in use was dropped");
    }
}
