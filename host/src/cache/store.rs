//! The objects of one kind and their indexes: by namespace, by controller owner UID, by label
//! (key=value) and by each declared field index. Every change updates the object map and all
//! indexes together, under one lock held by the informer.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::sync::Arc;

use crate::cache::object::CachedObject;
use crate::object::ObjectKey;
use crate::selector::LabelSelector;

/// The keys under one index value, in key order. Most values name one object (an owner's UID, a
/// label unique to its object), so a lone key is held inline: a B-tree's first node alone costs
/// about half a KiB.
#[derive(Debug)]
enum Keys {
    One(ObjectKey),
    Many(BTreeSet<ObjectKey>),
}

impl Keys {
    fn insert(&mut self, key: ObjectKey) {
        match self {
            Keys::One(one) if *one == key => {}
            Keys::One(_) => {
                let Keys::One(first) = std::mem::replace(self, Keys::Many(BTreeSet::new())) else {
                    unreachable!("matched One above")
                };
                *self = Keys::Many(BTreeSet::from([first, key]));
            }
            Keys::Many(set) => {
                set.insert(key);
            }
        }
    }

    /// Removes `key`; returns whether no key is left.
    fn remove(&mut self, key: &ObjectKey) -> bool {
        match self {
            Keys::One(one) => one == key,
            Keys::Many(set) => {
                set.remove(key);
                let empty = set.is_empty();
                if set.len() == 1 {
                    let last = set.pop_first().expect("one key left");
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

    fn iter(&self) -> impl Iterator<Item = &ObjectKey> {
        let (one, many) = match self {
            Keys::One(key) => (Some(key), None),
            Keys::Many(set) => (None, Some(set)),
        };
        one.into_iter().chain(many.into_iter().flatten())
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
    objects: HashMap<ObjectKey, Arc<CachedObject>>,
    by_namespace: HashMap<String, Keys>,
    by_owner: HashMap<String, Keys>,
    by_label: HashMap<(String, String), Keys>,
    fields: HashMap<String, (IndexSpec, HashMap<String, Keys>)>,
}

fn index<V: Eq + Hash>(map: &mut HashMap<V, Keys>, value: V, key: &ObjectKey) {
    match map.entry(value) {
        Entry::Occupied(mut keys) => keys.get_mut().insert(key.clone()),
        Entry::Vacant(slot) => {
            slot.insert(Keys::One(key.clone()));
        }
    }
}

fn unindex<V: Eq + Hash>(map: &mut HashMap<V, Keys>, value: &V, key: &ObjectKey) {
    if map.get_mut(value).is_some_and(|keys| keys.remove(key)) {
        map.remove(value);
    }
}

impl Store {
    /// Inserts or replaces an object; returns the previous version.
    pub(crate) fn apply(&mut self, object: Arc<CachedObject>) -> Option<Arc<CachedObject>> {
        let old = self.remove(&object.key);
        let key = &object.key;
        index(&mut self.by_namespace, key.namespace.clone(), key);
        if let Some(owner) = &object.controller {
            index(&mut self.by_owner, owner.uid.clone(), key);
        }
        for (label, value) in object.labels.iter() {
            index(
                &mut self.by_label,
                (label.to_owned(), value.to_owned()),
                key,
            );
        }
        for (spec, values) in self.fields.values_mut() {
            if let Some(value) = object.field(&spec.field) {
                index(values, value, key);
            }
        }
        self.objects.insert(key.clone(), object);
        old
    }

    /// Removes an object; returns it.
    pub(crate) fn remove(&mut self, key: &ObjectKey) -> Option<Arc<CachedObject>> {
        let old = self.objects.remove(key)?;
        unindex(&mut self.by_namespace, &key.namespace, key);
        if let Some(owner) = &old.controller {
            unindex(&mut self.by_owner, &owner.uid, key);
        }
        for (label, value) in old.labels.iter() {
            unindex(
                &mut self.by_label,
                &(label.to_owned(), value.to_owned()),
                key,
            );
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
        let mut values = HashMap::new();
        for object in self.objects.values() {
            if let Some(value) = object.field(&spec.field) {
                index(&mut values, value, &object.key);
            }
        }
        self.fields.insert(spec.name.clone(), (spec, values));
    }

    pub(crate) fn get(&self, key: &ObjectKey) -> Option<Arc<CachedObject>> {
        self.objects.get(key).cloned()
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.objects.keys()
    }

    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    /// Bytes of JSON held, the bulk of the store's memory.
    pub(crate) fn json_bytes(&self) -> usize {
        self.objects.values().map(|o| o.json.len()).sum()
    }

    /// Objects controlled by the owner with this UID.
    pub(crate) fn owned_by(&self, uid: &str) -> Vec<Arc<CachedObject>> {
        self.resolve(self.by_owner.get(uid))
    }

    /// Objects whose field index `name` has `value`; `None` if no such index.
    pub(crate) fn by_index(&self, name: &str, value: &str) -> Option<Vec<Arc<CachedObject>>> {
        let (_, values) = self.fields.get(name)?;
        Some(self.resolve(values.get(value)))
    }

    /// Objects in `namespace` (all when `None`) matching `selector`, sorted by key. Starts from
    /// the smallest index that applies: the namespace or a label equality.
    pub(crate) fn list(
        &self,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Arc<CachedObject>> {
        let matches = |o: &&Arc<CachedObject>| {
            namespace.is_none_or(|ns| o.key.namespace == ns)
                && selector.matches(|k| o.labels.get(k))
        };
        let mut sources: Vec<Option<&Keys>> = namespace
            .map(|ns| self.by_namespace.get(ns))
            .into_iter()
            .collect();
        let labels = selector
            .equalities()
            .map(|(k, v)| self.by_label.get(&(k.to_owned(), v.to_owned())));
        sources.extend(labels);
        if sources.is_empty() {
            let mut all: Vec<_> = self.objects.values().filter(matches).cloned().collect();
            all.sort_by(|a, b| a.key.cmp(&b.key));
            return all;
        }
        // An index without an entry for the value means nothing can match.
        let Some(smallest) = sources
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .and_then(|s| s.into_iter().min_by_key(|k| k.len()))
        else {
            return Vec::new();
        };
        smallest
            .iter()
            .filter_map(|k| self.objects.get(k))
            .filter(matches)
            .cloned()
            .collect()
    }

    fn resolve(&self, keys: Option<&Keys>) -> Vec<Arc<CachedObject>> {
        keys.into_iter()
            .flat_map(Keys::iter)
            .filter_map(|k| self.objects.get(k))
            .cloned()
            .collect()
    }
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
    ) -> Arc<CachedObject> {
        let json = format!(r#"{{"metadata":{{"name":"{name}"}},"spec":{{"nodeName":"{node}"}}}}"#);
        Arc::new(CachedObject {
            key: ObjectKey::new(ns, name),
            uid: format!("uid-{name}"),
            resource_version: "1".into(),
            generation: 1,
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            annotations: Default::default(),
            controller: owner.map(|uid| ControllerRef {
                api_version: "v1".into(),
                kind: "Owner".into(),
                name: "owner".into(),
                uid: uid.into(),
            }),
            json: json.into(),
        })
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
    fn index_entries_grow_from_one_key_and_shrink_back() {
        let (a, b) = (ObjectKey::new("ns", "a"), ObjectKey::new("ns", "b"));
        let mut keys = Keys::One(b.clone());
        keys.insert(b.clone());
        assert_eq!(keys.len(), 1, "a key inserted twice is held once");
        keys.insert(a.clone());
        assert_eq!(keys.iter().collect::<Vec<_>>(), [&a, &b]);
        assert!(!keys.remove(&b));
        assert!(matches!(&keys, Keys::One(k) if *k == a));
        assert!(!keys.remove(&b), "removing an absent key leaves the rest");
        assert!(keys.remove(&a));
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
