//! Admission and conversion webhooks a [`Reconciler`] may also serve for its kinds: declare them
//! with [`Reconciler::webhooks`] (built with [`Webhooks::validating`], [`Webhooks::defaulting`] and
//! [`Webhooks::converting`]), then answer [`Reconciler::validate`], [`Reconciler::default`]
//! and [`Reconciler::convert`]. The host calls them when the apiserver asks, in the same sandbox
//! as the reconciles. A reconciler that declares none serves none.
//!
//! [`Reconciler`]: crate::Reconciler
//! [`Reconciler::webhooks`]: crate::Reconciler::webhooks
//! [`Reconciler::validate`]: crate::Reconciler::validate
//! [`Reconciler::default`]: crate::Reconciler::default
//! [`Reconciler::convert`]: crate::Reconciler::convert

use crate::kind::{Gvk, Kind};
use crate::raw::exports::wasmop::reconciler::webhooks as wit;
pub use crate::raw::exports::wasmop::reconciler::webhooks::{
    AdmissionRequest, Denial, Operation, UserInfo, Verdict,
};

/// The webhooks a reconciler serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhooks {
    raw: wit::Registration,
}

impl Webhooks {
    /// Serves no webhook.
    pub fn none() -> Self {
        Webhooks {
            raw: wit::Registration {
                validate: Vec::new(),
                default: Vec::new(),
                convert: Vec::new(),
            },
        }
    }

    /// Validates `K` on these operations.
    pub fn validating<K: Kind>(mut self, operations: &[Operation]) -> Self {
        self.raw.validate.push(rule::<K>(operations));
        self
    }

    /// Defaults `K` on these operations.
    pub fn defaulting<K: Kind>(mut self, operations: &[Operation]) -> Self {
        self.raw.default.push(rule::<K>(operations));
        self
    }

    /// Converts the custom resource `K` between its versions.
    pub fn converting<K: Kind>(mut self) -> Self {
        self.raw.convert.push(K::gvk());
        self
    }

    /// The WIT record.
    pub fn into_raw(self) -> wit::Registration {
        self.raw
    }
}

fn rule<K: Kind>(operations: &[Operation]) -> wit::Rule {
    wit::Rule {
        kind: K::gvk(),
        operations: operations.to_vec(),
    }
}

impl Verdict {
    /// Admitted, without warnings.
    pub fn allowed() -> Self {
        Verdict::Allowed(Vec::new())
    }

    /// Refused with `message`.
    pub fn denied(message: impl Into<String>) -> Self {
        Verdict::Denied(Denial::new(message))
    }
}

impl Denial {
    /// A refusal with `message` and no warnings.
    pub fn new(message: impl Into<String>) -> Self {
        Denial {
            message: message.into(),
            warnings: Vec::new(),
        }
    }
}

/// The kind `gvk` names, for matching a request against a [`Kind`].
pub fn is<K: Kind>(gvk: &Gvk) -> bool {
    let own = K::gvk();
    own.group == gvk.group && own.kind == gvk.kind
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    #[test]
    fn the_builder_fills_the_wit_record() {
        let raw = Webhooks::none()
            .validating::<ConfigMap>(&[Operation::Create, Operation::Update])
            .defaulting::<Deployment>(&[Operation::Create])
            .into_raw();
        assert_eq!(raw.validate[0].kind, ConfigMap::gvk());
        assert_eq!(raw.validate[0].operations.len(), 2);
        assert_eq!(raw.default[0].kind, Deployment::gvk());
        assert!(raw.convert.is_empty());
        let none = Webhooks::none().into_raw();
        assert!(none.validate.is_empty() && none.default.is_empty() && none.convert.is_empty());
        assert!(is::<ConfigMap>(&ConfigMap::gvk()));
        assert!(!is::<Deployment>(&ConfigMap::gvk()));
    }

    #[test]
    fn verdicts_read_as_they_are_meant() {
        assert_eq!(Verdict::allowed(), Verdict::Allowed(vec![]));
        let Verdict::Denied(denial) = Verdict::denied("replicas must be at most 50") else {
            panic!("a denial");
        };
        assert_eq!(denial.message, "replicas must be at most 50");
    }
}
