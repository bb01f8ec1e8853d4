//! An in-memory stand-in for the cache, the apiserver and the event recorder, for offline tests
//! and benchmarks of plugins without a cluster. It keeps objects as JSON, records every write and
//! event in order, and applies writes with the apiserver's essentials: resourceVersion conflicts,
//! generation bumps on spec changes, the status subresource, finalizers delaying deletion.
//! Server-side apply is approximated by a merge of the applied fields.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::fixture::{FixtureWrite, RecordedWrite, Rejection, object_ref};
use wasmop_contract::imports::{
    ApiError, ApiErrorKind, ApiWriter, CacheReader, Event, EventRecorder, Json, ListOptions,
    NoTransport, Patch, Services, Write,
};
use wasmop_contract::object::{GroupVersionKind, ObjectKey, ObjectRef};
use wasmop_contract::selector::FieldSelector;
use wasmop_contract::{FieldIndex, Registration};

/// Objects, writes and events held in memory.
#[derive(Default)]
pub struct MemoryHost {
    state: Mutex<State>,
    /// The field indexes `list-by-index` serves, as the plugin declared them.
    indexes: Mutex<Vec<FieldIndex>>,
}

#[derive(Default)]
struct State {
    objects: HashMap<(GroupVersionKind, ObjectKey), Stored>,
    writes: Vec<RecordedWrite>,
    events: Vec<Event>,
    revision: u64,
    /// The answers to come for writes to each target (by [`FixtureWrite::target`]): an error
    /// to answer with, or `None` to apply the write.
    answers: HashMap<String, VecDeque<Option<ApiError>>>,
}

struct Stored {
    value: Value,
    json: Json,
}

impl MemoryHost {
    /// An empty host.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// The services a plugin loaded against this host uses.
    pub fn services(self: &Arc<Self>) -> Services {
        Services {
            cache: self.clone(),
            writer: self.clone(),
            transport: Arc::new(NoTransport),
            events: self.clone(),
            observer: Arc::new(()),
            rights: None,
        }
    }

    /// The services for a plugin that declared `registration`: its field indexes are served.
    pub fn services_for(self: &Arc<Self>, registration: &Registration) -> Services {
        let mut indexes = self.indexes.lock().unwrap_or_else(|e| e.into_inner());
        indexes.clone_from(&registration.indexes);
        drop(indexes);
        self.services()
    }

    /// Puts an object in place as if it had been created (not recorded as a write), keeping the
    /// uid, resourceVersion and generation it has and giving it those it lacks.
    pub fn insert(&self, object: Value) {
        let target = object_ref(&object).expect("inserted objects have apiVersion, kind and name");
        self.lock().seed(&target, object);
    }

    /// Forgets every object, write and event, then holds `objects` (as [`MemoryHost::insert`]).
    pub fn reset(&self, objects: impl IntoIterator<Item = Value>) {
        *self.lock() = State::default();
        for object in objects {
            self.insert(object);
        }
    }

    /// Answers the writes to come as `expected` were answered: the n-th write to a target gets
    /// the n-th expected write's rejection, if it had one; other writes are applied.
    pub fn answer_as(&self, expected: &[FixtureWrite]) {
        let mut state = self.lock();
        state.answers.clear();
        for write in expected {
            let answer = write.rejected.as_ref().map(Rejection::error);
            state
                .answers
                .entry(write.target())
                .or_default()
                .push_back(answer);
        }
    }

    /// The current object, if any.
    pub fn get(&self, kind: &GroupVersionKind, key: &ObjectKey) -> Option<Value> {
        self.lock()
            .objects
            .get(&(kind.clone(), key.clone()))
            .map(|s| s.value.clone())
    }

    /// Every write so far, in order.
    pub fn writes(&self) -> Vec<RecordedWrite> {
        self.lock().writes.clone()
    }

    /// The writes so far, forgetting them.
    pub fn take_writes(&self) -> Vec<RecordedWrite> {
        std::mem::take(&mut self.lock().writes)
    }

    /// Every event recorded so far.
    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// The events so far, forgetting them.
    pub fn take_events(&self) -> Vec<Event> {
        std::mem::take(&mut self.lock().events)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.pointer("/metadata/labels")?.get(key)?.as_str()
}

fn field<'a>(object: &'a Value, path: &str) -> Option<&'a str> {
    path.split('.')
        .try_fold(object, |value, key| value.get(key))?
        .as_str()
}

/// JSON merge patch (RFC 7386).
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let target = target.as_object_mut().expect("made an object above");
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

fn spec_of(object: &Value) -> Value {
    let mut spec = object.clone();
    if let Some(map) = spec.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    spec
}

/// Whether the apiserver gives `object` a `metadata.generation`: kinds with a spec have one,
/// kinds of bare data (ConfigMap, Secret) have none, so a recording of them replays alike.
fn has_generation(object: &Value) -> bool {
    object.get("spec").is_some()
}

impl State {
    /// Stores `object` as given, filling in the uid, resourceVersion and (for a kind with a spec)
    /// generation it lacks.
    fn seed(&mut self, target: &ObjectRef, mut object: Value) {
        self.revision += 1;
        if !object["metadata"].is_object() {
            object["metadata"] = json!({});
        }
        let generated = has_generation(&object);
        let meta = &mut object["metadata"];
        let missing = |meta: &Value, field: &str| meta.get(field).is_none_or(Value::is_null);
        if missing(meta, "uid") {
            meta["uid"] = json!(format!("uid-{}", self.revision));
        }
        if missing(meta, "resourceVersion") {
            meta["resourceVersion"] = json!(self.revision.to_string());
        }
        if generated && missing(meta, "generation") {
            meta["generation"] = json!(1);
        }
        let json: Json = object.to_string().into();
        let key = (target.kind.clone(), target.key.clone());
        self.objects.insert(
            key,
            Stored {
                value: object,
                json,
            },
        );
    }

    /// Stores `object` as the new state of `target`, maintaining resourceVersion, uid and
    /// generation; an object being deleted disappears once its finalizers are gone.
    fn store(&mut self, target: &ObjectRef, mut object: Value, created: bool) -> Json {
        self.revision += 1;
        let key = (target.kind.clone(), target.key.clone());
        let old = self.objects.get(&key).map(|s| s.value.clone());
        let meta = object["metadata"]
            .as_object_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut meta = Value::Object(meta);
        meta["resourceVersion"] = json!(self.revision.to_string());
        let generated = has_generation(&object);
        match &old {
            Some(old) if !created => {
                meta["uid"] = old["metadata"]["uid"].clone();
                let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
                let bumped = spec_of(old) != spec_of(&object);
                if generated || old["metadata"].get("generation").is_some() {
                    meta["generation"] = json!(if bumped { generation + 1 } else { generation });
                }
                if meta.get("deletionTimestamp").is_none()
                    && old["metadata"].get("deletionTimestamp").is_some()
                {
                    meta["deletionTimestamp"] = old["metadata"]["deletionTimestamp"].clone();
                }
            }
            _ => {
                meta["uid"] = json!(format!("uid-{}", self.revision));
                if generated {
                    meta["generation"] = json!(1);
                }
            }
        }
        object["metadata"] = meta;
        let finalizers = object["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        let json: Json = object.to_string().into();
        if object["metadata"].get("deletionTimestamp").is_some() && !finalizers {
            self.objects.remove(&key);
        } else {
            self.objects.insert(
                key,
                Stored {
                    value: object,
                    json: json.clone(),
                },
            );
        }
        json
    }

    fn current(&self, target: &ObjectRef) -> Result<Value, ApiError> {
        let key = (target.kind.clone(), target.key.clone());
        self.objects
            .get(&key)
            .map(|s| s.value.clone())
            .ok_or_else(|| ApiError::not_found(target))
    }

    fn apply(&mut self, target: &ObjectRef, write: Write) -> Result<Option<Json>, ApiError> {
        let stored = |state: &mut Self, object| Ok(Some(state.store(target, object, false)));
        match write {
            Write::Create(object) => {
                if self.current(target).is_ok() {
                    return Err(ApiError::new(
                        ApiErrorKind::AlreadyExists,
                        format!("{target} already exists"),
                    ));
                }
                Ok(Some(self.store(target, object, true)))
            }
            Write::Update(mut object) => {
                let current = self.check_version(target, &object)?;
                object["status"] = current["status"].clone();
                stored(self, object)
            }
            Write::UpdateStatus(object) => {
                let mut current = self.check_version(target, &object)?;
                current["status"] = object["status"].clone();
                stored(self, current)
            }
            Write::Patch { patch, status } => {
                let current = match (&patch, self.current(target)) {
                    (Patch::Apply { .. }, Err(_)) => json!({}),
                    (_, current) => current?,
                };
                let mut patched = current.clone();
                match &patch {
                    Patch::Merge(p) | Patch::Apply { object: p, .. } => merge(&mut patched, p),
                    Patch::Json(ops) => {
                        let ops: json_patch::Patch = serde_json::from_value(ops.clone())
                            .map_err(|e| ApiError::new(ApiErrorKind::Invalid, e.to_string()))?;
                        json_patch::patch(&mut patched, &ops)
                            .map_err(|e| ApiError::new(ApiErrorKind::Invalid, e.to_string()))?;
                    }
                }
                if status {
                    let mut only_status = current;
                    only_status["status"] = patched["status"].clone();
                    patched = only_status;
                } else if !current.is_null() && current.get("status").is_some() {
                    patched["status"] = current["status"].clone();
                }
                stored(self, patched)
            }
            Write::Delete(options) => {
                let mut current = self.current(target)?;
                let meta = &current["metadata"];
                let stale = |given: &Option<String>, field: &str| {
                    given.as_deref().is_some_and(|g| meta[field] != g)
                };
                if stale(&options.uid, "uid") || stale(&options.resource_version, "resourceVersion")
                {
                    return Err(ApiError::new(
                        ApiErrorKind::Conflict,
                        format!("{target}: precondition failed"),
                    ));
                }
                current["metadata"]["deletionTimestamp"] = json!("1970-01-01T00:00:00Z");
                self.store(target, current, false);
                Ok(None)
            }
        }
    }

    fn check_version(&self, target: &ObjectRef, object: &Value) -> Result<Value, ApiError> {
        let current = self.current(target)?;
        let given = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        if given.is_some_and(|given| current["metadata"]["resourceVersion"] != given) {
            return Err(ApiError::new(
                ApiErrorKind::Conflict,
                format!(
                    "{target}: the object has been modified; apply your changes to the latest version"
                ),
            ));
        }
        Ok(current)
    }
}

impl CacheReader for MemoryHost {
    fn get(&self, kind: &GroupVersionKind, namespace: &str, name: &str) -> Result<Json, ApiError> {
        let target = ObjectRef::new(kind, namespace, name);
        let state = self.lock();
        let stored = state
            .objects
            .get(&(target.kind.clone(), target.key.clone()));
        stored
            .map(|s| s.json.clone())
            .ok_or_else(|| ApiError::not_found(&target))
    }

    fn list(&self, kind: &GroupVersionKind, options: &ListOptions) -> Result<Vec<Json>, ApiError> {
        let (selector, fields) = (&options.labels, &options.fields);
        let state = self.lock();
        let mut found: Vec<_> = state
            .objects
            .iter()
            .filter(|((k, key), _)| {
                k == kind
                    && options
                        .namespace
                        .as_ref()
                        .is_none_or(|ns| *ns == key.namespace)
            })
            .filter(|(_, s)| selector.matches(|k| label(&s.value, k)))
            .filter(|(_, s)| fields.matches(|path| field(&s.value, path).map(str::to_owned)))
            .map(|((_, key), s)| (key.clone(), s.json.clone()))
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(found.into_iter().map(|(_, json)| json).collect())
    }

    fn list_by_index(
        &self,
        kind: &GroupVersionKind,
        index: &str,
        value: &str,
    ) -> Result<Vec<Json>, ApiError> {
        let indexes = self.indexes.lock().unwrap_or_else(|e| e.into_inner());
        let declared = indexes.iter().find(|i| i.name == index && i.kind == *kind);
        let Some(field) = declared.map(|i| i.field.clone()) else {
            return Err(ApiError::new(
                ApiErrorKind::Invalid,
                format!("no field index {index:?} was declared for {}", kind.kind),
            ));
        };
        drop(indexes);
        let options = ListOptions {
            fields: FieldSelector::equals(&field, value),
            ..ListOptions::default()
        };
        self.list(kind, &options)
    }
}

#[async_trait::async_trait]
impl ApiWriter for MemoryHost {
    async fn write(&self, target: &ObjectRef, write: Write) -> Result<Option<Json>, ApiError> {
        let mut state = self.lock();
        let mut recorded = RecordedWrite {
            target: target.clone(),
            write: write.clone(),
            rejected: None,
        };
        recorded.rejected = state
            .answers
            .get_mut(&FixtureWrite::from(&recorded).target())
            .and_then(VecDeque::pop_front)
            .flatten();
        let answer = recorded.rejected.clone();
        state.writes.push(recorded);
        match answer {
            Some(error) => Err(error),
            None => state.apply(target, write),
        }
    }
}

impl EventRecorder for MemoryHost {
    fn record(&self, _plugin: &str, event: Event) -> bool {
        self.lock().events.push(event);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmop_contract::selector::LabelSelector;

    fn configmap(name: &str, data: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ns", "name": name}, "data": {"k": data}})
    }

    fn target(name: &str) -> ObjectRef {
        ObjectRef {
            kind: GroupVersionKind::gvk("", "v1", "ConfigMap"),
            key: ObjectKey::new("ns", name),
        }
    }

    #[tokio::test]
    async fn only_kinds_with_a_spec_are_given_a_generation() {
        let host = MemoryHost::new();
        host.insert(configmap("a", "1"));
        let seeded = host.get(&target("a").kind, &target("a").key).unwrap();
        assert!(seeded["metadata"].get("generation").is_none(), "{seeded}");
        let mut fresh = seeded.clone();
        fresh["data"]["k"] = json!("2");
        host.write(&target("a"), Write::Update(fresh))
            .await
            .unwrap();
        let after = host.get(&target("a").kind, &target("a").key).unwrap();
        assert!(after["metadata"].get("generation").is_none(), "{after}");
        let mut specced = configmap("b", "1");
        specced["spec"] = json!({"replicas": 1});
        host.insert(specced);
        let seeded = host.get(&target("b").kind, &target("b").key).unwrap();
        assert_eq!(seeded["metadata"]["generation"], 1);
    }

    #[tokio::test]
    async fn stale_updates_conflict_and_fresh_ones_bump_generation() {
        let host = MemoryHost::new();
        let mut stated = configmap("a", "1");
        stated["metadata"]["generation"] = json!(1);
        host.insert(stated);
        let current = host.get(&target("a").kind, &target("a").key).unwrap();
        let mut fresh = current.clone();
        fresh["data"]["k"] = json!("2");
        host.write(&target("a"), Write::Update(fresh))
            .await
            .unwrap();
        let after = host.get(&target("a").kind, &target("a").key).unwrap();
        assert_eq!(after["metadata"]["generation"], 2);
        let conflict = host
            .write(&target("a"), Write::Update(current))
            .await
            .unwrap_err();
        assert_eq!(conflict.kind, ApiErrorKind::Conflict);
    }

    #[tokio::test]
    async fn a_write_given_a_rejection_is_answered_with_it_and_not_applied() {
        let host = MemoryHost::new();
        host.insert(configmap("a", "1"));
        let patch = |data: &str| Write::Patch {
            patch: Patch::Merge(json!({"data": {"k": data}})),
            status: false,
        };
        let recorded = RecordedWrite {
            target: target("a"),
            write: patch("2"),
            rejected: None,
        };
        let mut rejected = FixtureWrite::from(&recorded);
        rejected.rejected = Some(Rejection {
            reason: "Conflict".into(),
            message: "stale".into(),
        });
        host.answer_as(&[rejected, FixtureWrite::from(&recorded)]);
        let first = host.write(&target("a"), patch("2")).await.unwrap_err();
        assert_eq!(first.kind, ApiErrorKind::Conflict);
        let current = host.get(&target("a").kind, &target("a").key).unwrap();
        assert_eq!(current["data"]["k"], "1");
        host.write(&target("a"), patch("3")).await.unwrap();
        let current = host.get(&target("a").kind, &target("a").key).unwrap();
        assert_eq!(current["data"]["k"], "3");
        assert_eq!(host.writes().len(), 2);
    }

    #[test]
    fn list_by_index_serves_the_declared_fields_and_refuses_other_indexes() {
        let host = MemoryHost::new();
        host.insert(configmap("a", "1"));
        host.insert(configmap("b", "1"));
        let kind = GroupVersionKind::gvk("", "v1", "ConfigMap");
        let mut registration = wasmop_contract::Registration::minimal("indexed");
        registration.indexes.push(FieldIndex {
            name: "by-data".into(),
            kind: kind.clone(),
            field: "data.k".into(),
        });
        let _ = host.services_for(&registration);
        assert_eq!(host.list_by_index(&kind, "by-data", "1").unwrap().len(), 2);
        assert!(
            host.list_by_index(&kind, "by-data", "2")
                .unwrap()
                .is_empty()
        );
        let undeclared = host.list_by_index(&kind, "data.k", "1").unwrap_err();
        assert_eq!(undeclared.kind, ApiErrorKind::Invalid);
    }

    #[tokio::test]
    async fn finalizers_hold_deletion_until_removed() {
        let host = MemoryHost::new();
        let mut held = configmap("held", "1");
        held["metadata"]["finalizers"] = json!(["example.com/cleanup"]);
        host.insert(held);
        host.write(&target("held"), Write::Delete(Default::default()))
            .await
            .unwrap();
        let deleting = host.get(&target("held").kind, &target("held").key).unwrap();
        assert!(deleting["metadata"]["deletionTimestamp"].is_string());
        let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
        host.write(
            &target("held"),
            Write::Patch {
                patch: release,
                status: false,
            },
        )
        .await
        .unwrap();
        assert!(
            host.get(&target("held").kind, &target("held").key)
                .is_none()
        );
    }

    #[test]
    fn lists_filter_by_namespace_labels_and_fields() {
        let host = MemoryHost::new();
        let mut labelled = configmap("labelled", "1");
        labelled["metadata"]["labels"] = json!({"sync": "true"});
        host.insert(labelled);
        host.insert(configmap("plain", "1"));
        let kind = GroupVersionKind::gvk("", "v1", "ConfigMap");
        let by_label = ListOptions {
            labels: LabelSelector::parse("sync=true").unwrap(),
            ..Default::default()
        };
        assert_eq!(host.list(&kind, &by_label).unwrap().len(), 1);
        let by_field = ListOptions {
            fields: FieldSelector::parse("metadata.name=plain").unwrap(),
            ..Default::default()
        };
        assert_eq!(host.list(&kind, &by_field).unwrap().len(), 1);
        let elsewhere = ListOptions {
            namespace: Some("other".into()),
            ..Default::default()
        };
        assert!(host.list(&kind, &elsewhere).unwrap().is_empty());
    }
}
