//! Identity of Kubernetes objects, shared by every part of the host.

use std::fmt;

pub use kube_core::GroupVersionKind;

/// A namespaced object's key, `namespace/name`; the namespace is empty for cluster-scoped kinds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ObjectKey {
    /// The namespace, or empty for cluster-scoped objects.
    pub namespace: String,
    /// The object's name.
    pub name: String,
}

impl ObjectKey {
    /// The key of `name` in `namespace`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
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

/// One object of one kind: what a write or an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// The object's kind.
    pub kind: GroupVersionKind,
    /// Its namespace and name.
    pub key: ObjectKey,
}

impl ObjectRef {
    /// The object `name` of `kind` in `namespace`.
    pub fn new(kind: &GroupVersionKind, namespace: &str, name: &str) -> Self {
        ObjectRef {
            kind: kind.clone(),
            key: ObjectKey::new(namespace, name),
        }
    }
}

/// Whether `declared`, a kind as a plugin's permission names it, includes `kind`: the same group
/// and kind, at the same version or at any (an empty version declares every version the
/// apiserver serves, as an RBAC rule does).
pub fn includes(declared: &GroupVersionKind, kind: &GroupVersionKind) -> bool {
    declared.group == kind.group
        && declared.kind == kind.kind
        && (declared.version.is_empty() || declared.version == kind.version)
}

/// `kind` as messages name it: `Kind.apiVersion` ([`shown_api_version`]).
pub fn shown(kind: &GroupVersionKind) -> String {
    format!("{}.{}", kind.kind, shown_api_version(kind))
}

/// `kind`'s apiVersion as messages name it: `group/*` (`*` in the core group) when it names every
/// version.
pub fn shown_api_version(kind: &GroupVersionKind) -> String {
    match (kind.version.is_empty(), kind.group.is_empty()) {
        (false, _) => kind.api_version(),
        (true, true) => "*".to_owned(),
        (true, false) => format!("{}/*", kind.group),
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, api_version) = (&self.kind.kind, self.kind.api_version());
        write!(f, "{kind}.{api_version} {}", self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_refs_print_as_kubectl_names_them() {
        assert_eq!(ObjectKey::new("", "node-1").to_string(), "node-1");
        let web = ObjectRef {
            kind: GroupVersionKind::gvk("apps", "v1", "Deployment"),
            key: ObjectKey::new("shop", "web"),
        };
        assert_eq!(web.to_string(), "Deployment.apps/v1 shop/web");
    }

    #[test]
    fn a_kind_without_a_version_includes_every_version_of_it() {
        let lease = |version| GroupVersionKind::gvk("coordination.k8s.io", version, "Lease");
        assert!(includes(&lease(""), &lease("v1")));
        assert!(includes(&lease(""), &lease("v1beta1")));
        assert!(includes(&lease("v1"), &lease("v1")));
        assert!(!includes(&lease("v1"), &lease("v1beta1")));
        let elsewhere = GroupVersionKind::gvk("example.com", "v1", "Lease");
        assert!(!includes(&lease(""), &elsewhere));
        let other = GroupVersionKind::gvk("coordination.k8s.io", "v1", "LeaseCandidate");
        assert!(!includes(&lease(""), &other));
        assert_eq!(shown(&lease("")), "Lease.coordination.k8s.io/*");
        assert_eq!(shown(&lease("v1")), "Lease.coordination.k8s.io/v1");
        assert_eq!(
            shown(&GroupVersionKind::gvk("", "", "ConfigMap")),
            "ConfigMap.*"
        );
    }
}
