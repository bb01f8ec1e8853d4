//! Helpers over object metadata: controller owner references and finalizers.
//!
//! They only change the object in memory; the reconciler writes the change (e.g. with
//! [`finalizers_patch`] and [`Client::patch_merge`](crate::Client::patch_merge)).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{Value, json};

use crate::kind::Object;

/// The controller owner reference pointing at `owner`, for the objects it creates; `None` when the
/// owner has no name or UID yet (it was never stored).
pub fn controller_owner_ref<K: Object>(owner: &K) -> Option<OwnerReference> {
    let meta = owner.metadata();
    Some(OwnerReference {
        api_version: K::API_VERSION.to_owned(),
        kind: K::KIND.to_owned(),
        name: meta.name.clone()?,
        uid: meta.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The controller owner reference in `meta`, if any.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// Whether `owner` is the controller of the object with metadata `meta` (same kind and UID).
pub fn is_controlled_by<K: Object>(meta: &ObjectMeta, owner: &K) -> bool {
    controller_of(meta).is_some_and(|r| {
        r.kind == K::KIND
            && r.api_version == K::API_VERSION
            && Some(&r.uid) == owner.metadata().uid.as_ref()
    })
}

/// Whether the object carries the finalizer.
pub fn has_finalizer<K: Object>(obj: &K, finalizer: &str) -> bool {
    obj.metadata()
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

/// Adds the finalizer; returns whether it was missing.
pub fn add_finalizer<K: Object>(obj: &mut K, finalizer: &str) -> bool {
    if has_finalizer(obj, finalizer) {
        return false;
    }
    obj.metadata_mut()
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(finalizer.to_owned());
    true
}

/// Removes the finalizer; returns whether it was present.
pub fn remove_finalizer<K: Object>(obj: &mut K, finalizer: &str) -> bool {
    let Some(finalizers) = obj.metadata_mut().finalizers.as_mut() else {
        return false;
    };
    let before = finalizers.len();
    finalizers.retain(|f| f != finalizer);
    before != finalizers.len()
}

/// Whether the object is being deleted (it has a deletionTimestamp).
pub fn is_deleting<K: Object>(obj: &K) -> bool {
    obj.metadata().deletion_timestamp.is_some()
}

/// A JSON merge patch that sets the object's finalizers to its current list, guarded by its
/// resourceVersion so that it fails with a conflict instead of dropping a concurrent change.
pub fn finalizers_patch<K: Object>(obj: &K) -> Value {
    let meta = obj.metadata();
    json!({
        "metadata": {
            "finalizers": meta.finalizers.clone().unwrap_or_default(),
            "resourceVersion": meta.resource_version,
        }
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn stored_deployment() -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("shop".into()),
                uid: Some("uid-1".into()),
                resource_version: Some("7".into()),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        }
    }

    #[test]
    fn controller_owner_ref_points_at_the_owner() {
        let owner = controller_owner_ref(&stored_deployment()).unwrap();
        assert_eq!(owner.api_version, "apps/v1");
        assert_eq!(owner.kind, "Deployment");
        assert_eq!(owner.name, "web");
        assert_eq!(owner.uid, "uid-1");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
    }

    #[test]
    fn controller_owner_ref_needs_a_stored_owner() {
        assert!(controller_owner_ref(&Deployment::default()).is_none());
    }

    #[test]
    fn is_controlled_by_compares_kind_and_uid() {
        let owner = stored_deployment();
        let mut child = ConfigMap::default();
        assert!(!is_controlled_by(&child.metadata, &owner));
        child.metadata.owner_references = Some(vec![controller_owner_ref(&owner).unwrap()]);
        assert!(is_controlled_by(&child.metadata, &owner));

        let mut other = stored_deployment();
        other.metadata.uid = Some("uid-2".into());
        assert!(!is_controlled_by(&child.metadata, &other));
    }

    #[test]
    fn add_finalizer_is_idempotent() {
        let mut obj = stored_deployment();
        assert!(add_finalizer(&mut obj, "example.wasmop.dev/cleanup"));
        assert!(!add_finalizer(&mut obj, "example.wasmop.dev/cleanup"));
        assert_eq!(
            obj.metadata.finalizers.as_deref(),
            Some(&["example.wasmop.dev/cleanup".to_owned()][..])
        );
        assert!(has_finalizer(&obj, "example.wasmop.dev/cleanup"));
    }

    #[test]
    fn remove_finalizer_keeps_the_others() {
        let mut obj = stored_deployment();
        obj.metadata.finalizers = Some(vec!["a".into(), "b".into()]);
        assert!(remove_finalizer(&mut obj, "a"));
        assert!(!remove_finalizer(&mut obj, "a"));
        assert_eq!(obj.metadata.finalizers, Some(vec!["b".to_owned()]));
        assert!(!remove_finalizer(&mut Deployment::default(), "a"));
    }

    #[test]
    fn finalizers_patch_is_guarded_by_the_resource_version() {
        let mut obj = stored_deployment();
        add_finalizer(&mut obj, "f");
        assert_eq!(
            finalizers_patch(&obj),
            json!({"metadata": {"finalizers": ["f"], "resourceVersion": "7"}})
        );
        remove_finalizer(&mut obj, "f");
        assert_eq!(finalizers_patch(&obj)["metadata"]["finalizers"], json!([]));
    }
}
