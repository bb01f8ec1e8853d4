//! What makes a ConfigMap a source, a copy or a target namespace, and what a copy looks like.

use std::collections::BTreeMap;

use wasmop_guest::ObjectKey;
use wasmop_guest::k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The label that makes a ConfigMap a source.
pub const SOURCE_LABEL: &str = "configmap-sync.wasmop.dev/source";
/// The label that makes a namespace a target.
pub const TARGET_LABEL: &str = "configmap-sync.wasmop.dev/target";
/// The label on a copy naming its source's namespace.
pub const SOURCE_NAMESPACE_LABEL: &str = "configmap-sync.wasmop.dev/source-namespace";
/// The label on a copy naming its source.
pub const SOURCE_NAME_LABEL: &str = "configmap-sync.wasmop.dev/source-name";
/// The label selector of all sources.
pub const SOURCE_SELECTOR: &str = "configmap-sync.wasmop.dev/source=true";

fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

/// Whether the ConfigMap is a source: labelled and not being deleted.
pub fn is_source(configmap: &ConfigMap) -> bool {
    label(&configmap.metadata, SOURCE_LABEL) == Some("true")
        && configmap.metadata.deletion_timestamp.is_none()
}

/// Whether the namespace takes copies: labelled and not being deleted.
pub fn is_target(namespace: &Namespace) -> bool {
    label(&namespace.metadata, TARGET_LABEL) == Some("true")
        && namespace.metadata.deletion_timestamp.is_none()
}

/// The source a copy was made from, when the ConfigMap is a copy (same name as its source).
pub fn source_of(configmap: &ConfigMap) -> Option<ObjectKey> {
    let meta = &configmap.metadata;
    let name = label(meta, SOURCE_NAME_LABEL)?;
    if meta.name.as_deref() != Some(name) {
        return None;
    }
    Some(ObjectKey::new(label(meta, SOURCE_NAMESPACE_LABEL)?, name))
}

/// The label selector of the copies of `source`.
pub fn copy_selector(source: &ObjectKey) -> String {
    format!(
        "{SOURCE_NAMESPACE_LABEL}={},{SOURCE_NAME_LABEL}={}",
        source.namespace, source.name
    )
}

/// The copy of `source` that belongs in `namespace`.
pub fn copy(source: &ConfigMap, namespace: &str) -> ConfigMap {
    let key = ObjectKey::of(source);
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(key.name.clone()),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([
                (SOURCE_NAMESPACE_LABEL.to_owned(), key.namespace),
                (SOURCE_NAME_LABEL.to_owned(), key.name),
            ])),
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        ..ConfigMap::default()
    }
}

/// Whether the copy holds the source's data and binaryData (absent and empty are the same).
pub fn data_matches(copy: &ConfigMap, source: &ConfigMap) -> bool {
    fn or_empty<V: PartialEq>(map: &Option<BTreeMap<String, V>>) -> impl PartialEq + '_ {
        map.iter().flatten().collect::<Vec<_>>()
    }
    or_empty(&copy.data) == or_empty(&source.data)
        && or_empty(&copy.binary_data) == or_empty(&source.binary_data)
}

#[cfg(test)]
mod tests {
    use wasmop_guest::k8s_openapi::ByteString;

    use super::*;

    fn source() -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".into()),
                namespace: Some("platform".into()),
                labels: Some(BTreeMap::from([(SOURCE_LABEL.into(), "true".into())])),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("mode".into(), "fast".into())])),
            binary_data: Some(BTreeMap::from([("blob".into(), ByteString(vec![1, 2]))])),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn a_copy_names_its_source_and_is_not_a_source() {
        let copy = copy(&source(), "team-a");
        assert_eq!(copy.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(
            source_of(&copy),
            Some(ObjectKey::new("platform", "settings"))
        );
        assert!(!is_source(&copy));
        assert!(data_matches(&copy, &source()));
        assert_eq!(source_of(&source()), None);
    }

    #[test]
    fn a_renamed_copy_is_not_a_copy() {
        let mut copy = copy(&source(), "team-a");
        copy.metadata.name = Some("other".into());
        assert_eq!(source_of(&copy), None);
    }

    #[test]
    fn data_drift_is_detected_but_empty_equals_absent() {
        let mut copy = copy(&source(), "team-a");
        copy.binary_data = None;
        assert!(!data_matches(&copy, &source()));

        let mut empty = source();
        empty.binary_data = Some(BTreeMap::new());
        copy.binary_data = None;
        assert!(data_matches(&copy, &empty));
    }

    #[test]
    fn terminating_namespaces_are_not_targets() {
        let mut ns = Namespace {
            metadata: ObjectMeta {
                labels: Some(BTreeMap::from([(TARGET_LABEL.into(), "true".into())])),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        assert!(is_target(&ns));
        ns.metadata.deletion_timestamp = Some(wasmop_guest::conditions::now());
        assert!(!is_target(&ns));
    }

    #[test]
    fn the_copy_selector_matches_both_labels() {
        assert_eq!(
            copy_selector(&ObjectKey::new("platform", "settings")),
            "configmap-sync.wasmop.dev/source-namespace=platform,configmap-sync.wasmop.dev/source-name=settings"
        );
    }
}
