//! The objects of one kind and their indexes: by key, in key order (so a namespace's objects
//! are one range), by controller owner UID, by label (key, then value) and by each declared field
//! index. Every change updates the object map and all indexes together, under one lock held by
//! the informer.
//!
//! Indexes hold the objects themselves (one pointer each), ordered by key, never copies of keys;
//! equal label and annotation maps are shared through the store's [`Interner`].

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::sync::Arc;

use crate::cache::object::{CachedObject, Interner};
use wasmop_contract::object::ObjectKey;
use wasmop_contract::selector::LabelSelector;

/// A stored object, compared, ordered and hashed by its key.
#[derive(Debug, Clone)]
struct Entry(Arc<CachedObject>);

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key.cmp(&other.0.key)
    }
}

impl Hash for Entry {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.key.hash(state);
    }
}

impl Borrow<ObjectKey> for Entry {
    fn borrow(&self) -> &ObjectKey {
        &self.0.key
    }
}

/// The objects under one index value, in key order. Most values name one object (an owner's
/// UID, a label unique to its object), so a lone object is held inline: a B-tree's first node
/// costs more than the pointer.
#[derive(Debug)]
enum Keys {
    One(Entry),
    Many(BTreeSet<Entry>),
}

impl Keys {
    fn insert(&mut self, entry: Entry) {
        match self {
            Keys::One(one) if *one == entry => *one = entry,
            Keys::One(one) => {
                let first = one.clone();
                *self = Keys::Many(BTreeSet::from([first, entry]));
            }
            Keys::Many(set) => {
                set.replace(entry);
            }
        }
    }

    /// Removes `key`; returns whether no object is left.
    fn remove(&mut self, key: &ObjectKey) -> bool {
        match self {
            Keys::One(one) => one.0.key == *key,
            Keys::Many(set) => {
                set.remove(key);
                let empty = set.is_empty();
                if set.len() == 1 {
                    let last = set.pop_first().expect("one object left");
                    *self = Keys::One(last);
                }
                empty
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Keys::One(_) => 1,
            Keys::Many(set) => set.len(),
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Arc<CachedObject>> {
        let (one, many) = match self {
            Keys::One(entry) => (Some(entry), None),
            Keys::Many(set) => (None, Some(set)),
        };
        one.into_iter()
            .chain(many.into_iter().flatten())
            .map(|e| &e.0)
    }
}

/// Index values and the objects under each.
type Index = HashMap<Box<str>, Keys>;

fn index(index: &mut Index, value: &str, entry: &Entry) {
    match index.get_mut(value) {
        Some(keys) => keys.insert(entry.clone()),
        None => {
            index.insert(value.into(), Keys::One(entry.clone()));
        }
    }
}

fn unindex(index: &mut Index, value: &str, key: &ObjectKey) {
    if index.get_mut(value).is_some_and(|keys| keys.remove(key)) {
        index.remove(value);
    }
}

/// A declared field index: its name and the dotted path of a string field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IndexSpec {
    /// The name readers use.
    pub name: String,
    /// The indexed field, e.g. `spec.nodeName`.
    pub field: String,
}

/// Objects of one kind with their indexes.
#[derive(Default)]
pub(crate) struct Store {
    objects: HashSet<Entry>,
    ordered: BTreeSet<Entry>,
    /// Objects per namespace, to pick the smallest index for a list.
    namespaces: HashMap<Box<str>, usize>,
    by_owner: Index,
    by_label: HashMap<Box<str>, Index>,
    fields: HashMap<String, (IndexSpec, Index)>,
    interner: Interner,
}

impl Store {
    /// Inserts or replaces an object, sharing its labels and annotations with equal ones held;
    /// returns it as stored and the previous version.
    pub(crate) fn apply(
        &mut self,
        mut object: CachedObject,
    ) -> (Arc<CachedObject>, Option<Arc<CachedObject>>) {
        let old = self.remove(&object.key);
        object.labels = self.interner.intern(std::mem::take(&mut object.labels));
        object.annotations = self
            .interner
            .intern(std::mem::take(&mut object.annotations));
        let entry = Entry(Arc::new(object));
        let object = &entry.0;
        match self.namespaces.get_mut(object.key.namespace.as_str()) {
            Some(count) => *count += 1,
            None => {
                self.namespaces
                    .insert(object.key.namespace.as_str().into(), 1);
            }
        }
        if let Some(owner) = &object.controller {
            index(&mut self.by_owner, &owner.uid, &entry);
        }
        for (label, value) in object.labels.iter() {
            if !self.by_label.contains_key(label) {
                self.by_label.insert(label.into(), Index::new());
            }
            let values = self.by_label.get_mut(label).expect("inserted above");
            index(values, value, &entry);
        }
        for (spec, values) in self.fields.values_mut() {
            if let Some(value) = object.field(&spec.field) {
                index(values, &value, &entry);
            }
        }
        self.ordered.insert(entry.clone());
        let stored = entry.0.clone();
        self.objects.insert(entry);
        (stored, old)
    }

    /// Removes an object; returns it.
    pub(crate) fn remove(&mut self, key: &ObjectKey) -> Option<Arc<CachedObject>> {
        let Entry(old) = self.objects.take(key)?;
        self.ordered.remove(key);
        let namespace = key.namespace.as_str();
        if self.namespaces.get_mut(namespace).is_some_and(|count| {
            *count -= 1;
            *count == 0
        }) {
            self.namespaces.remove(namespace);
        }
        if let Some(owner) = &old.controller {
            unindex(&mut self.by_owner, &owner.uid, key);
        }
        for (label, value) in old.labels.iter() {
            if let Some(values) = self.by_label.get_mut(label) {
                unindex(values, value, key);
                if values.is_empty() {
                    self.by_label.remove(label);
                }
            }
        }
        for (spec, values) in self.fields.values_mut() {
            if let Some(value) = old.field(&spec.field) {
                unindex(values, &value, key);
            }
        }
        Some(old)
    }

    /// Adds a field index (idempotent) and indexes the objects already held.
    pub(crate) fn add_index(&mut self, spec: IndexSpec) {
        if self.fields.contains_key(&spec.name) {
            return;
        }
        let mut values = Index::new();
        for entry in &self.objects {
            if let Some(value) = entry.0.field(&spec.field) {
                index(&mut values, &value, entry);
            }
        }
        self.fields.insert(spec.name.clone(), (spec, values));
    }

    pub(crate) fn get(&self, key: &ObjectKey) -> Option<Arc<CachedObject>> {
        self.objects.get(key).map(|e| e.0.clone())
    }

    /// The objects in `namespace` (all when `None`), in key order.
    pub(crate) fn in_namespace(
        &self,
        namespace: Option<&str>,
    ) -> impl Iterator<Item = &Arc<CachedObject>> {
        let from = match namespace {
            Some(ns) => Bound::Included(ObjectKey::new(ns, "")),
            None => Bound::Unbounded,
        };
        self.ordered
            .range((from, Bound::Unbounded))
            .map(|e| &e.0)
            .take_while(move |o| namespace.is_none_or(|ns| o.key.namespace == ns))
    }

    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    /// Bytes of JSON held, the bulk of the store's memory.
    pub(crate) fn json_bytes(&self) -> usize {
        self.objects.iter().map(|e| e.0.json.len()).sum()
    }

    /// Objects controlled by the owner with this UID.
    pub(crate) fn owned_by(&self, uid: &str) -> Vec<Arc<CachedObject>> {
        resolve(self.by_owner.get(uid))
    }

    /// Objects whose field index `name` has `value`; `None` if no such index.
    pub(crate) fn by_index(&self, name: &str, value: &str) -> Option<Vec<Arc<CachedObject>>> {
        let (_, values) = self.fields.get(name)?;
        Some(resolve(values.get(value)))
    }

    /// Objects in `namespace` (all when `None`) matching `selector`, sorted by key. Starts from
    /// the smallest index that applies: the namespace's range or a label equality.
    pub(crate) fn list(
        &self,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Arc<CachedObject>> {
        let matches = |o: &&Arc<CachedObject>| {
            namespace.is_none_or(|ns| o.key.namespace == ns)
                && selector.matches(|k| o.labels.get(k))
        };
        let in_namespace = match namespace {
            Some(ns) => self.namespaces.get(ns).copied().unwrap_or_default(),
            None => self.len(),
        };
        // An index without an entry for the value means nothing can match.
        let labels: Option<Vec<&Keys>> = selector
            .equalities()
            .map(|(k, v)| self.by_label.get(k)?.get(v))
            .collect();
        let Some(labels) = labels else {
            return Vec::new();
        };
        match labels.into_iter().min_by_key(|keys| keys.len()) {
            Some(smallest) if smallest.len() < in_namespace => {
                smallest.iter().filter(matches).cloned().collect()
            }
            _ => self
                .in_namespace(namespace)
                .filter(matches)
                .cloned()
                .collect(),
        }
    }
}

fn resolve(keys: Option<&Keys>) -> Vec<Arc<CachedObject>> {
    keys.into_iter().flat_map(Keys::iter).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::object::ControllerRef;

    fn object(
        ns: &str,
        name: &str,
        labels: &[(&str, &str)],
        owner: Option<&str>,
        node: &str,
    ) -> CachedObject {
        let json = format!(r#"{{"metadata":{{"name":"{name}"}},"spec":{{"nodeName":"{node}"}}}}"#);
        CachedObject {
            key: ObjectKey::new(ns, name),
            resource_version: Default::default(),
            generation: 1,
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            annotations: Default::default(),
            controller: owner.map(|uid| {
                Box::new(ControllerRef {
                    api_version: "v1".into(),
                    kind: "Owner".into(),
                    name: "owner".into(),
                    uid: uid.into(),
                })
            }),
            json: json.into(),
        }
    }

    fn names(objects: Vec<Arc<CachedObject>>) -> Vec<String> {
        objects.iter().map(|o| o.key.name.clone()).collect()
    }

    #[test]
    fn indexes_follow_every_change() {
        let mut store = Store::default();
        store.add_index(IndexSpec {
            name: "node".into(),
            field: "spec.nodeName".into(),
        });
        store.apply(object("a", "one", &[("app", "web")], Some("owner-1"), "n1"));
        store.apply(object("a", "two", &[("app", "db")], Some("owner-1"), "n2"));
        store.apply(object("b", "three", &[("app", "web")], None, "n1"));

        let web = LabelSelector::parse("app=web").unwrap();
        assert_eq!(names(store.list(None, &web)), ["one", "three"]);
        assert_eq!(names(store.list(Some("a"), &web)), ["one"]);
        assert_eq!(
            names(store.list(Some("missing"), &LabelSelector::default())),
            Vec::<String>::new()
        );
        assert_eq!(names(store.owned_by("owner-1")), ["one", "two"]);
        assert_eq!(
            names(store.by_index("node", "n1").unwrap()),
            ["one", "three"]
        );
        assert!(store.by_index("undeclared", "n1").is_none());

        store.apply(object("a", "one", &[("app", "db")], None, "n2"));
        assert_eq!(names(store.list(None, &web)), ["three"]);
        assert_eq!(names(store.owned_by("owner-1")), ["two"]);
        assert_eq!(names(store.by_index("node", "n2").unwrap()), ["one", "two"]);

        store.remove(&ObjectKey::new("b", "three"));
        assert!(store.list(None, &web).is_empty());
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn index_entries_grow_from_one_object_and_shrink_back() {
        let entry = |name| Entry(Arc::new(object("ns", name, &[], None, "n1")));
        let (a, b) = (entry("a"), entry("b"));
        let mut keys = Keys::One(b.clone());
        keys.insert(b.clone());
        assert_eq!(keys.len(), 1, "an object inserted twice is held once");
        keys.insert(a.clone());
        assert_eq!(keys.iter().collect::<Vec<_>>(), [&a.0, &b.0]);
        assert!(!keys.remove(&b.0.key));
        assert!(matches!(&keys, Keys::One(k) if *k == a));
        assert!(
            !keys.remove(&b.0.key),
            "removing an absent key leaves the rest"
        );
        assert!(keys.remove(&a.0.key));
    }

    #[test]
    fn equal_label_maps_are_shared_and_lists_run_in_key_order() {
        let mut store = Store::default();
        let (one, _) = store.apply(object("b", "one", &[("app", "web")], None, "n1"));
        let (two, _) = store.apply(object("a", "two", &[("app", "web")], None, "n1"));
        let held = |o: &CachedObject| o.labels.iter().next().map(|(k, _)| k.as_ptr());
        assert_eq!(held(&one), held(&two), "equal labels held twice");
        store.apply(object("a", "three", &[], None, "n1"));
        let all = LabelSelector::default();
        assert_eq!(names(store.list(None, &all)), ["three", "two", "one"]);
        assert_eq!(names(store.list(Some("a"), &all)), ["three", "two"]);
        let web = LabelSelector::parse("app=web").unwrap();
        assert_eq!(names(store.list(Some("a"), &web)), ["two"]);
        let keys: Vec<_> = store
            .in_namespace(Some("b"))
            .map(|o| o.key.clone())
            .collect();
        assert_eq!(keys, [ObjectKey::new("b", "one")]);
    }

    #[test]
    fn an_index_added_later_covers_existing_objects() {
        let mut store = Store::default();
        store.apply(object("a", "one", &[], None, "n1"));
        store.add_index(IndexSpec {
            name: "node".into(),
            field: "spec.nodeName".into(),
        });
        assert_eq!(names(store.by_index("node", "n1").unwrap()), ["one"]);
    }
}
