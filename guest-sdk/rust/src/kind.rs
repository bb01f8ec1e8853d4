//! Resource kinds and their objects: the GVK of a Rust type, and the conversion of objects to and
//! from the JSON text that crosses the component boundary.
//!
//! Every `k8s_openapi::Resource` is a [`Kind`]; a custom resource becomes one with
//! [`custom_resource!`](crate::custom_resource), which implements `k8s_openapi::Resource` and
//! `k8s_openapi::Metadata` for a plain serde struct.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;
pub use crate::raw::wasmop::reconciler::types::{Gvk, ObjectKey};

/// A Rust type that stands for one Kubernetes resource kind. Every `k8s_openapi::Resource` is
/// one, with the GVK from its `GROUP`, `VERSION` and `KIND`.
pub trait Kind {
    /// The kind's group, version and kind as the host takes them.
    fn gvk() -> Gvk;
}

impl<T: k8s_openapi::Resource> Kind for T {
    fn gvk() -> Gvk {
        Gvk {
            group: T::GROUP.to_owned(),
            version: T::VERSION.to_owned(),
            kind: T::KIND.to_owned(),
        }
    }
}

/// A typed object the cache and client can read and write: a [`Kind`] with standard metadata.
pub trait Object:
    Kind + k8s_openapi::Metadata<Ty = ObjectMeta> + Serialize + DeserializeOwned
{
}

impl<T> Object for T where
    T: Kind + k8s_openapi::Metadata<Ty = ObjectMeta> + Serialize + DeserializeOwned
{
}

impl Gvk {
    /// The GVK of a typed kind.
    pub fn of<K: Kind>() -> Self {
        K::gvk()
    }

    /// Whether this GVK is the one of the typed kind `K`.
    pub fn is<K: Kind>(&self) -> bool {
        *self == K::gvk()
    }

    /// The `apiVersion` string: `version` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.kind)
    }
}

impl ObjectKey {
    /// A key from a namespace (empty for cluster-scoped kinds) and a name.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of an object, from its metadata.
    pub fn of<K: k8s_openapi::Metadata<Ty = ObjectMeta>>(obj: &K) -> Self {
        let meta = obj.metadata();
        Self::new(
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// Serialises an object to the JSON text the host takes, adding `apiVersion` and `kind` when the
/// type does not write them itself (custom resource structs usually do not).
pub fn to_json<K: Kind + Serialize>(obj: &K) -> Result<String, Error> {
    let mut value = serde_json::to_value(obj).map_err(|source| Error::Serialize {
        kind: K::gvk(),
        source,
    })?;
    if let Some(map) = value.as_object_mut() {
        let gvk = K::gvk();
        map.entry("apiVersion").or_insert(gvk.api_version().into());
        map.entry("kind").or_insert(gvk.kind.into());
    }
    Ok(value.to_string())
}

/// Parses an object of kind `K` from the JSON text the host returned.
pub fn from_json<K: Kind + DeserializeOwned>(text: &str) -> Result<K, Error> {
    serde_json::from_str(text).map_err(|source| Error::Deserialize {
        kind: K::gvk(),
        source,
    })
}

/// Implements `k8s_openapi::Resource` and `k8s_openapi::Metadata` for a custom resource struct
/// with a `metadata: ObjectMeta` field, which makes it an [`Object`] the cache and client take.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// #[derive(Clone, Debug, Default, Serialize, Deserialize)]
/// struct Backup {
///     metadata: ObjectMeta,
///     spec: BackupSpec,
/// }
///
/// #[derive(Clone, Debug, Default, Serialize, Deserialize)]
/// struct BackupSpec {
///     schedule: String,
/// }
///
/// wasmop_guest::custom_resource!(Backup {
///     group: "example.wasmop.dev",
///     version: "v1",
///     kind: "Backup",
///     plural: "backups",
///     scope: Namespaced,
/// });
///
/// use wasmop_guest::{Gvk, Kind};
/// assert_eq!(Backup::gvk().api_version(), "example.wasmop.dev/v1");
/// assert!(Gvk::of::<Backup>().is::<Backup>());
/// ```
#[macro_export]
macro_rules! custom_resource {
    ($ty:ty {
        group: $group:literal,
        version: $version:literal,
        kind: $kind:literal,
        plural: $plural:literal,
        scope: $scope:ident $(,)?
    }) => {
        impl $crate::k8s_openapi::Resource for $ty {
            const API_VERSION: &'static str = concat!($group, "/", $version);
            const GROUP: &'static str = $group;
            const KIND: &'static str = $kind;
            const VERSION: &'static str = $version;
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = $crate::__scope!($scope);
        }

        impl $crate::k8s_openapi::Metadata for $ty {
            type Ty = $crate::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }
    };
}

/// The `k8s_openapi` scope type for `Namespaced` or `Cluster`.
#[doc(hidden)]
#[macro_export]
macro_rules! __scope {
    (Namespaced) => {
        $crate::k8s_openapi::NamespaceResourceScope
    };
    (Cluster) => {
        $crate::k8s_openapi::ClusterResourceScope
    };
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Default, Serialize, Deserialize)]
    struct Widget {
        metadata: ObjectMeta,
    }

    crate::custom_resource!(Widget {
        group: "example.wasmop.dev",
        version: "v1",
        kind: "Widget",
        plural: "widgets",
        scope: Namespaced,
    });

    #[test]
    fn k8s_openapi_resources_have_their_gvk() {
        assert_eq!(
            Deployment::gvk(),
            Gvk {
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into()
            }
        );
        assert_eq!(ConfigMap::gvk().api_version(), "v1");
        assert_eq!(Deployment::gvk().to_string(), "apps/v1/Deployment");
    }

    #[test]
    fn to_json_adds_api_version_and_kind_to_custom_resources() {
        let text = to_json(&Widget::default()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["apiVersion"], "example.wasmop.dev/v1");
        assert_eq!(value["kind"], "Widget");
    }

    #[test]
    fn from_json_names_the_kind_it_could_not_parse() {
        let err = from_json::<ConfigMap>("{\"metadata\": 3}").unwrap_err();
        assert!(matches!(err, Error::Deserialize { .. }));
        assert!(err.to_string().contains("v1/ConfigMap"), "{err}");
    }

    #[test]
    fn object_key_displays_cluster_scoped_keys_without_a_slash() {
        assert_eq!(ObjectKey::new("", "node-1").to_string(), "node-1");
        assert_eq!(ObjectKey::new("ns", "a").to_string(), "ns/a");
    }
}
