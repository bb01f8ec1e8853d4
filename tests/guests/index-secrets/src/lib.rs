//! `guest-index-secrets`: a plugin that reconciles ConfigMaps and declares a field index on
//! Secrets by their type, with no permission to read Secrets. An index needs an informer, which
//! lists and watches as the operator; the host must refuse the plugin at load instead of caching
//! every Secret for it.

use wasmop_guest::k8s_openapi::api::core::v1::{ConfigMap, Secret};
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request};

/// The index-on-Secrets plugin.
pub struct IndexSecrets;

wasmop_guest::export_reconciler!(IndexSecrets);

impl Reconciler for IndexSecrets {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-index-secrets", env!("CARGO_PKG_VERSION"))
            .index::<Secret>("by-type", "type")
    }

    fn reconcile(_: Request) -> Result<Outcome, ReconcileError> {
        Ok(Outcome::Done)
    }
}
