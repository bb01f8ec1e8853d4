//! The reconciler a plugin implements and exports: [`Reconciler`] declares the plugin with a
//! [`Registration`] and reconciles one [`Request`] at a time; [`export_reconciler!`] wires it to
//! the component's `describe`, `reconcile` and `map` exports.
//!
//! [`export_reconciler!`]: crate::export_reconciler

use std::marker::PhantomData;
use std::time::Duration;

use crate::error::ReconcileError;
use crate::kind::{Gvk, Kind, ObjectKey};
use crate::raw;
use crate::raw::exports::wasmop::reconciler::webhooks as wit;
use crate::raw::wasmop::reconciler::plugin;
pub use crate::raw::wasmop::reconciler::plugin::{Mapping, Predicate, Verb};
use crate::webhooks::{AdmissionRequest, Denial, Verdict, Webhooks};

/// One reconcile request: the key of a primary object, which the reconciler reads from the cache.
pub type Request = ObjectKey;

/// A reconciler: what the plugin declares and how it converges one object.
pub trait Reconciler {
    /// Declares the plugin: its name, kinds, mappings, permissions and limits.
    fn describe() -> Registration;

    /// Converges the primary object `request` towards its desired state.
    fn reconcile(request: Request) -> Result<Outcome, ReconcileError>;

    /// Maps a changed object (JSON text) of a kind watched with [`Mapping::Guest`] to requests.
    fn map(kind: &Gvk, object: &str) -> Vec<ObjectKey> {
        let _ = (kind, object);
        Vec::new()
    }

    /// Declares the admission and conversion webhooks the plugin serves; none by default.
    fn webhooks() -> Webhooks {
        Webhooks::none()
    }

    /// Admits or refuses an admission request for a kind declared with [`Webhooks::validating`].
    fn validate(request: &AdmissionRequest) -> Verdict {
        let _ = request;
        Verdict::allowed()
    }

    /// Returns the request's object (JSON text) with its defaults set, for a kind declared with
    /// [`Webhooks::defaulting`]; the host sends the difference to the apiserver as a patch.
    fn default(request: &AdmissionRequest) -> Result<String, Denial> {
        request
            .object
            .clone()
            .ok_or_else(|| Denial::new("no object to default"))
    }

    /// Converts `object` (JSON text) to `api_version`, for a kind declared with
    /// [`Webhooks::converting`].
    fn convert(object: &str, api_version: &str) -> Result<String, String> {
        let _ = object;
        Err(format!("this plugin does not convert to {api_version}"))
    }
}

/// A successful reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Converged: nothing more to do until the next event.
    Done,
    /// Reconcile the same object again after a delay.
    RequeueAfter {
        /// How long to wait.
        after: Duration,
        /// Queue priority; higher runs first. The host's default (0) when `None`.
        priority: Option<i32>,
    },
}

impl Outcome {
    /// Reconcile again after `after`, at the default priority.
    pub fn requeue_after(after: Duration) -> Self {
        Self::RequeueAfter {
            after,
            priority: None,
        }
    }
}

/// Everything the host needs to run the plugin; built from the primary kind with
/// [`Registration::new`] and extended with the builder methods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration(plugin::Registration);

impl Registration {
    /// A plugin named `name` (lowercase letters, digits, dashes) at `version`, reconciling the
    /// kind `K`, one reconcile at a time, with the host's default timeout.
    pub fn new<K: Kind>(name: &str, version: &str) -> Self {
        Self(plugin::Registration {
            name: name.to_owned(),
            version: version.to_owned(),
            primary: K::gvk(),
            predicates: Vec::new(),
            owns: Vec::new(),
            watches: Vec::new(),
            permissions: Vec::new(),
            indexes: Vec::new(),
            max_concurrent_reconciles: 1,
            reconcile_timeout: None,
        })
    }

    /// Drops events on the primary kind that fail `predicate`.
    pub fn predicate(mut self, predicate: Predicate) -> Self {
        self.0.predicates.push(predicate);
        self
    }

    /// Declares that the plugin creates and controls objects of kind `K`; their events reconcile
    /// their controller owner.
    pub fn owns<K: Kind>(mut self) -> Self {
        self.0.owns.push(K::gvk());
        self
    }

    /// Watches kind `K`, mapping its events to primary objects with `mapping`.
    pub fn watches<K: Kind>(self, mapping: Mapping) -> Self {
        self.watches_with::<K>(mapping, &[])
    }

    /// Watches kind `K` with `mapping`, dropping events that fail any of `predicates`.
    pub fn watches_with<K: Kind>(mut self, mapping: Mapping, predicates: &[Predicate]) -> Self {
        self.0.watches.push(plugin::Watch {
            kind: K::gvk(),
            mapping,
            predicates: predicates.to_vec(),
        });
        self
    }

    /// Asks for `verbs` on kind `K` in every namespace.
    pub fn permit<K: Kind>(self, verbs: &[Verb]) -> Self {
        self.permit_in::<K>(verbs, &[])
    }

    /// Asks for `verbs` on kind `K` in `namespaces` only (all when empty).
    pub fn permit_in<K: Kind>(mut self, verbs: &[Verb], namespaces: &[&str]) -> Self {
        self.0.permissions.push(plugin::Permission {
            kind: K::gvk(),
            verbs: verbs.to_vec(),
            namespaces: namespaces.iter().map(|&ns| ns.to_owned()).collect(),
        });
        self
    }

    /// Declares a field index `name` over kind `K` on the dotted string field `field`, for
    /// [`Cache::list_by_index`](crate::Cache::list_by_index).
    pub fn index<K: Kind>(mut self, name: &str, field: &str) -> Self {
        self.0.indexes.push(plugin::FieldIndex {
            name: name.to_owned(),
            kind: K::gvk(),
            field: field.to_owned(),
        });
        self
    }

    /// How many reconciles may run at once (at least 1).
    pub fn max_concurrent_reconciles(mut self, n: u32) -> Self {
        self.0.max_concurrent_reconciles = n.max(1);
        self
    }

    /// How long one reconcile may take before the host interrupts it.
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.0.reconcile_timeout = Some(millis(timeout));
        self
    }

    /// The registration as the WIT record the host receives.
    pub fn into_raw(self) -> plugin::Registration {
        self.0
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl From<Outcome> for plugin::Outcome {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Done => Self::Done,
            Outcome::RequeueAfter { after, priority } => Self::RequeueAfter(plugin::Requeue {
                after: millis(after),
                priority,
            }),
        }
    }
}

impl From<ReconcileError> for plugin::ReconcileError {
    fn from(err: ReconcileError) -> Self {
        if err.is_terminal() {
            Self::Terminal(err.message().to_owned())
        } else {
            Self::Retryable(err.message().to_owned())
        }
    }
}

/// The component's exports for the reconciler `R`; use it through [`export_reconciler!`].
///
/// [`export_reconciler!`]: crate::export_reconciler
#[doc(hidden)]
pub struct Export<R>(PhantomData<R>);

impl<R: Reconciler> raw::Guest for Export<R> {
    fn describe() -> plugin::Registration {
        R::describe().into_raw()
    }

    fn reconcile(req: Request) -> Result<plugin::Outcome, plugin::ReconcileError> {
        R::reconcile(req).map(Into::into).map_err(Into::into)
    }

    fn map(kind: Gvk, obj: String) -> Vec<ObjectKey> {
        R::map(&kind, &obj)
    }
}

impl<R: Reconciler> wit::Guest for Export<R> {
    fn describe_webhooks() -> wit::Registration {
        R::webhooks().into_raw()
    }

    fn validate(req: AdmissionRequest) -> Verdict {
        R::validate(&req)
    }

    fn default(req: AdmissionRequest) -> Result<String, Denial> {
        R::default(&req)
    }

    fn convert(obj: String, api_version: String) -> Result<String, String> {
        R::convert(&obj, &api_version)
    }
}

/// Exports a [`Reconciler`] as the component's `describe`, `reconcile` and `map`. Use it once,
/// in the plugin's library crate.
#[macro_export]
macro_rules! export_reconciler {
    ($reconciler:ty) => {
        #[doc(hidden)]
        type __WasmopExportedReconciler = $crate::Export<$reconciler>;
        $crate::raw::export!(__WasmopExportedReconciler with_types_in $crate::raw);
    };
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    use super::*;

    #[test]
    fn registration_builder_fills_the_wit_record() {
        let reg = Registration::new::<ConfigMap>("sync", "1.0.0")
            .owns::<Deployment>()
            .watches::<Namespace>(Mapping::Guest)
            .permit::<ConfigMap>(&[Verb::Create, Verb::Delete])
            .permit_in::<Deployment>(&[Verb::Patch], &["shop"])
            .max_concurrent_reconciles(0)
            .reconcile_timeout(Duration::from_millis(1500))
            .into_raw();
        assert_eq!(reg.primary, ConfigMap::gvk());
        assert_eq!(reg.owns, vec![Deployment::gvk()]);
        assert_eq!(reg.watches[0].mapping, Mapping::Guest);
        assert_eq!(reg.permissions[1].namespaces, vec!["shop".to_owned()]);
        assert_eq!(reg.max_concurrent_reconciles, 1);
        assert_eq!(reg.reconcile_timeout, Some(1500));
    }

    #[test]
    fn outcomes_and_errors_convert_to_their_wit_variants() {
        assert_eq!(plugin::Outcome::from(Outcome::Done), plugin::Outcome::Done);
        assert_eq!(
            plugin::Outcome::from(Outcome::requeue_after(Duration::from_secs(2))),
            plugin::Outcome::RequeueAfter(plugin::Requeue {
                after: 2000,
                priority: None
            })
        );
        assert_eq!(
            plugin::ReconcileError::from(ReconcileError::retryable("later")),
            plugin::ReconcileError::Retryable("later".into())
        );
        assert_eq!(
            plugin::ReconcileError::from(ReconcileError::terminal("never")),
            plugin::ReconcileError::Terminal("never".into())
        );
    }
}
