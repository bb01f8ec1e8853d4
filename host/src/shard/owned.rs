//! A sharded replica's own writes of the objects its primaries control carry its shard label, so
//! that it sees at once what it wrote (its owned kinds are watched by that label) rather than
//! once the leader's sharder has labelled it.
//!
//! Only whole objects naming a controller of the plugin's primary kind are labelled: exactly
//! those the sharder gives their controller's label, which is the writer's while it reconciles
//! the controller. Anything else is left as the plugin wrote it.

use serde_json::Value;

use crate::cache::Shard;
use wasmop_contract::object::GroupVersionKind;

/// Labels `object` with `shard` if it names a controller of kind `primary`.
pub fn label_controlled(object: &mut Value, primary: &GroupVersionKind, shard: &Shard) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let controlled = metadata
        .get("ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|owner| {
            owner["controller"] == Value::Bool(true)
                && owner["kind"] == primary.kind.as_str()
                && owner["apiVersion"] == primary.api_version().as_str()
        });
    if !controlled {
        return;
    }
    let labels = metadata
        .entry("labels")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(shard.label.clone(), Value::String(shard.member.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn webapp() -> GroupVersionKind {
        GroupVersionKind::gvk("example.wasmop.dev", "v1", "WebApp")
    }

    fn shard() -> Shard {
        Shard {
            label: "shard.wasmop.dev/ops".into(),
            member: "a1".into(),
        }
    }

    fn owned_by(api_version: &str, kind: &str, controller: bool) -> Value {
        json!({"metadata": {"name": "d", "labels": {"app": "x"}, "ownerReferences": [
            {"apiVersion": api_version, "kind": kind, "name": "w", "uid": "u", "controller": controller}
        ]}})
    }

    #[test]
    fn an_object_its_primary_controls_gets_the_writers_label_beside_its_own() {
        let mut object = owned_by("example.wasmop.dev/v1", "WebApp", true);
        label_controlled(&mut object, &webapp(), &shard());
        assert_eq!(
            object["metadata"]["labels"],
            json!({"app": "x", "shard.wasmop.dev/ops": "a1"})
        );
        let mut unlabelled = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "example.wasmop.dev/v1", "kind": "WebApp", "name": "w", "controller": true}
        ]}});
        label_controlled(&mut unlabelled, &webapp(), &shard());
        assert_eq!(
            unlabelled["metadata"]["labels"],
            json!({"shard.wasmop.dev/ops": "a1"})
        );
    }

    #[test]
    fn objects_another_kind_controls_or_merely_owns_are_left_alone() {
        for (api_version, kind, controller) in [
            ("example.wasmop.dev/v1", "WebApp", false),
            ("example.wasmop.dev/v2", "WebApp", true),
            ("apps/v1", "Deployment", true),
        ] {
            let mut object = owned_by(api_version, kind, controller);
            let before = object.clone();
            label_controlled(&mut object, &webapp(), &shard());
            assert_eq!(
                object, before,
                "{api_version} {kind} controller={controller}"
            );
        }
        let mut garbage = json!({"metadata": "x"});
        label_controlled(&mut garbage, &webapp(), &shard());
        assert_eq!(garbage, json!({"metadata": "x"}));
    }
}
