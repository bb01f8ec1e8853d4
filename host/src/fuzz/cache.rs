//! Fuzzes what the informer cache makes of the apiserver's object JSON (`cache/object.rs`). An
//! accepted object is kept without its managedFields and otherwise unchanged; its key, labels,
//! annotations and controller are the metadata's; its label lookup finds every label; field
//! lookups by any path never panic and agree with the JSON; and it nests no deeper than the
//! bound (a deeper one decodes as unreadable, with a short reason).

use proptest::prelude::*;
use serde_json::{Value, json};

use super::boundary::json_value;
use super::{MAX_ERROR, fuzz, hostile_text, mangled, parse};
use crate::cache::WatchedObject;
use wasmop_contract::depth::{self, MAX_DEPTH};

#[test]
fn fuzz_cached_objects() {
    fuzz(
        "cached-objects",
        (object_text(), prop::collection::vec(path(), 0..4)),
        |(text, paths)| {
            let decoded = parse(text.len(), || {
                serde_json::from_str::<WatchedObject>(&text).map(|watched| watched.object)
            })?;
            let cached = match decoded {
                Ok(Ok(cached)) => cached,
                Ok(Err(unreadable)) => {
                    prop_assert!(unreadable.reason.len() <= MAX_ERROR);
                    return Ok(());
                }
                Err(_) => return Ok(()),
            };
            prop_assert!(
                depth::of_text(cached.json.as_bytes()) <= MAX_DEPTH,
                "the cache holds an object deeper than the bound"
            );
            let mut sent: Value = serde_json::from_str(&text).expect("the watcher's JSON parsed");
            if let Some(metadata) = sent.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("managedFields");
            }
            prop_assert_eq!(
                &cached.value(),
                &sent,
                "the cache changed more than managedFields"
            );
            let meta = &sent["metadata"];
            let text_at = |key: &str| meta[key].as_str().unwrap_or_default().to_owned();
            prop_assert_eq!(&cached.key.namespace, &text_at("namespace"));
            prop_assert_eq!(&cached.key.name, &text_at("name"));
            for (field, map) in [
                ("labels", &cached.labels),
                ("annotations", &cached.annotations),
            ] {
                let given = meta[field].as_object().cloned().unwrap_or_default();
                prop_assert_eq!(map.iter().count(), given.len());
                let keys: Vec<&str> = map.iter().map(|(k, _)| k).collect();
                prop_assert!(keys.windows(2).all(|w| w[0] < w[1]), "{field} out of order");
                for (key, value) in &given {
                    prop_assert_eq!(map.get(key), value.as_str(), "{} {:?}", field, key);
                }
            }
            let controller = meta["ownerReferences"]
                .as_array()
                .and_then(|owners| owners.iter().find(|o| o["controller"] == json!(true)));
            prop_assert_eq!(
                cached.controller.as_ref().map(|c| c.uid.as_str()),
                controller.map(|o| o["uid"].as_str().unwrap_or_default())
            );
            for path in paths {
                let expected = match path.as_str() {
                    "metadata.name" => Some(cached.key.name.clone()),
                    "metadata.namespace" => Some(cached.key.namespace.clone()),
                    _ => path
                        .split('.')
                        .try_fold(&sent, |v, key| v.get(key))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                };
                prop_assert_eq!(cached.field(&path), expected, "field {:?}", path);
            }
            Ok(())
        },
    );
}

/// Objects as an apiserver (or something posing as one) might send them, sometimes mangled.
fn object_text() -> impl Strategy<Value = String> {
    let text = || prop_oneof![4 => "[a-z0-9.-]{0,20}", 1 => hostile_text()];
    let map = || {
        prop_oneof![
            4 => prop::collection::btree_map(text(), text(), 0..5)
                .prop_map(|m| json!(m)),
            1 => json_value(),
        ]
    };
    let owner = (text(), text(), prop_oneof![Just(json!(true)), Just(json!(false)), json_value()])
        .prop_map(|(name, uid, controller)| {
            json!({"apiVersion": "v1", "kind": "X", "name": name, "uid": uid, "controller": controller})
        });
    let owners = prop_oneof![
        4 => prop::collection::vec(owner, 0..4).prop_map(Value::Array),
        1 => json_value(),
    ];
    let timestamp = prop_oneof![
        Just(json!("2026-01-02T03:04:05Z")),
        "[0-9TZ:.+-]{0,30}".prop_map(Value::from),
        json_value(),
    ];
    let generation = prop_oneof![any::<i64>().prop_map(Value::from), json_value()];
    let meta = (
        (text(), text(), text(), text()),
        (generation, map(), map(), owners, timestamp, json_value()),
    );
    // Now and then data nested around the bound, or far past serde_json's recursion limit.
    let data = prop_oneof![
        8 => json_value(),
        1 => (MAX_DEPTH - 4..MAX_DEPTH + 4).prop_map(nested),
        1 => (0..400usize).prop_map(nested),
    ];
    let object = (meta, data, any::<u8>()).prop_map(|(meta, data, present)| {
        let ((name, namespace, uid, version), rest) = meta;
        let (generation, labels, annotations, owners, created, managed) = rest;
        let fields = [
            ("name", Value::from(name)),
            ("namespace", Value::from(namespace)),
            ("uid", Value::from(uid)),
            ("resourceVersion", Value::from(version)),
            ("generation", generation),
            ("labels", labels),
            ("annotations", annotations),
            ("ownerReferences", owners),
            ("creationTimestamp", created),
            ("managedFields", managed),
        ];
        let mut metadata = serde_json::Map::new();
        for (i, (key, value)) in fields.into_iter().enumerate() {
            if present.rotate_left(i as u32) & 0b11 != 0 {
                metadata.insert(key.to_owned(), value);
            }
        }
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data})
            .to_string()
    });
    prop_oneof![8 => mangled(object), 1 => json_value().prop_map(|v| v.to_string())]
}

/// An array nested `depth` levels deep.
fn nested(depth: usize) -> Value {
    (0..depth).fold(Value::Null, |inner, _| Value::Array(vec![inner]))
}

/// Field paths: real ones, and hostile text.
fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "metadata.name",
            "metadata.namespace",
            "metadata.uid",
            "data",
            "metadata.labels.app",
            "",
            ".",
            "..",
        ])
        .prop_map(str::to_owned),
        "[a-z]{1,8}(\\.[a-zA-Z]{1,8}){0,3}",
        hostile_text(),
    ]
}
