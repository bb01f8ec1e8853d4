//! Rust bindings of the `wasmop:reconciler` world, and conversions between its types and the
//! host's own.

use std::time::Duration;

use wasmop_contract::imports::{ApiError, ApiErrorKind, DeniedBy};
use wasmop_contract::object::{GroupVersionKind, ObjectKey};
use wasmop_contract::registration as reg;

mod generated {
    wasmtime::component::bindgen!({
        world: "reconciler",
        path: "../wit",
        imports: {
            "wasmop:reconciler/client": async,
            "wasmop:reconciler/transport": async,
            "wasmop:reconciler/events": async,
            "wasmop:reconciler/log": async,
        },
        exports: { default: async },
    });
}

/// The `handler-reconciler` world, for its `webhooks` and `handlers` exports only: its imports
/// are the ones above.
mod generated_exports {
    wasmtime::component::bindgen!({
        world: "handler-reconciler",
        path: "../wit",
        exports: { default: async },
        with: {
            "wasmop:reconciler/types": super::generated::wasmop::reconciler::types,
            "wasmop:reconciler/cache": super::generated::wasmop::reconciler::cache,
            "wasmop:reconciler/client": super::generated::wasmop::reconciler::client,
            "wasmop:reconciler/transport": super::generated::wasmop::reconciler::transport,
            "wasmop:reconciler/events": super::generated::wasmop::reconciler::events,
            "wasmop:reconciler/log": super::generated::wasmop::reconciler::log,
            "wasmop:reconciler/plugin": super::generated::wasmop::reconciler::plugin,
        },
    });
}

pub(crate) use generated::wasmop::reconciler::{
    cache, client, events, log, plugin, transport, types,
};
pub(crate) use generated::{Reconciler, ReconcilerIndices};
pub(crate) use generated_exports::exports::wasmop::reconciler::{handlers, webhooks};

/// The WIT package this host speaks; components must import the same major version.
pub(crate) const WIT_PACKAGE: &str = "wasmop:reconciler";
/// The WIT package's version.
pub(crate) const WIT_VERSION: &str = "0.1.3";

impl From<types::Gvk> for GroupVersionKind {
    fn from(gvk: types::Gvk) -> Self {
        GroupVersionKind {
            group: gvk.group,
            version: gvk.version,
            kind: gvk.kind,
        }
    }
}

impl From<&GroupVersionKind> for types::Gvk {
    fn from(gvk: &GroupVersionKind) -> Self {
        types::Gvk {
            group: gvk.group.clone(),
            version: gvk.version.clone(),
            kind: gvk.kind.clone(),
        }
    }
}

impl From<types::ObjectKey> for ObjectKey {
    fn from(key: types::ObjectKey) -> Self {
        ObjectKey {
            namespace: key.namespace,
            name: key.name,
        }
    }
}

impl From<&ObjectKey> for types::ObjectKey {
    fn from(key: &ObjectKey) -> Self {
        types::ObjectKey {
            namespace: key.namespace.clone(),
            name: key.name.clone(),
        }
    }
}

impl From<ApiError> for types::Error {
    fn from(error: ApiError) -> Self {
        let status = types::Status {
            code: error.code,
            reason: error.reason,
            message: error.message,
        };
        match error.kind {
            ApiErrorKind::NotFound => types::Error::NotFound(status),
            ApiErrorKind::Conflict => types::Error::Conflict(status),
            ApiErrorKind::AlreadyExists => types::Error::AlreadyExists(status),
            ApiErrorKind::Forbidden(DeniedBy::Apiserver) => {
                types::Error::Forbidden((types::DeniedBy::Apiserver, status))
            }
            ApiErrorKind::Forbidden(DeniedBy::DeclaredPermissions) => {
                types::Error::Forbidden((types::DeniedBy::DeclaredPermissions, status))
            }
            ApiErrorKind::Invalid => types::Error::Invalid(status),
            ApiErrorKind::Timeout => types::Error::Timeout(status),
            ApiErrorKind::Unavailable => types::Error::Unavailable(status),
            ApiErrorKind::Other => types::Error::Other(status),
        }
    }
}

impl From<plugin::Registration> for reg::Registration {
    fn from(r: plugin::Registration) -> Self {
        reg::Registration {
            name: r.name,
            version: r.version,
            primary: r.primary.into(),
            predicates: r.predicates.into_iter().map(Into::into).collect(),
            owns: r.owns.into_iter().map(Into::into).collect(),
            watches: r.watches.into_iter().map(Into::into).collect(),
            permissions: r.permissions.into_iter().map(Into::into).collect(),
            indexes: r.indexes.into_iter().map(Into::into).collect(),
            max_concurrent_reconciles: r.max_concurrent_reconciles,
            reconcile_timeout: r.reconcile_timeout.map(Duration::from_millis),
            handled: vec![],
        }
    }
}

impl From<plugin::Predicate> for reg::Predicate {
    fn from(p: plugin::Predicate) -> Self {
        match p {
            plugin::Predicate::GenerationChanged => reg::Predicate::GenerationChanged,
            plugin::Predicate::LabelsChanged => reg::Predicate::LabelsChanged,
            plugin::Predicate::AnnotationsChanged => reg::Predicate::AnnotationsChanged,
        }
    }
}

impl From<plugin::Watch> for reg::Watch {
    fn from(w: plugin::Watch) -> Self {
        let mapping = match w.mapping {
            plugin::Mapping::ControllerOwner => reg::Mapping::ControllerOwner,
            plugin::Mapping::Label(label) => reg::Mapping::Label(label),
            plugin::Mapping::Guest => reg::Mapping::Guest,
        };
        reg::Watch {
            kind: w.kind.into(),
            mapping,
            predicates: w.predicates.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<plugin::Permission> for reg::Permission {
    fn from(p: plugin::Permission) -> Self {
        let verbs = p.verbs.into_iter().map(|verb| match verb {
            plugin::Verb::Get => reg::Verb::Get,
            plugin::Verb::List => reg::Verb::List,
            plugin::Verb::Watch => reg::Verb::Watch,
            plugin::Verb::Create => reg::Verb::Create,
            plugin::Verb::Update => reg::Verb::Update,
            plugin::Verb::Patch => reg::Verb::Patch,
            plugin::Verb::Delete => reg::Verb::Delete,
            plugin::Verb::Status => reg::Verb::Status,
        });
        reg::Permission {
            kind: p.kind.into(),
            verbs: verbs.collect(),
            namespaces: p.namespaces,
        }
    }
}

impl From<plugin::FieldIndex> for reg::FieldIndex {
    fn from(i: plugin::FieldIndex) -> Self {
        reg::FieldIndex {
            name: i.name,
            kind: i.kind.into(),
            field: i.field,
        }
    }
}
