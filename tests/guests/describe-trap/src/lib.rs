//! `guest-describe-trap`: a component with every export whose `describe` panics, so loading it
//! fails the way a plugin bug at start-up would.

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request};

/// The reconciler that cannot describe itself.
pub struct DescribeTrap;

wasmop_guest::export_reconciler!(DescribeTrap);

impl Reconciler for DescribeTrap {
    fn describe() -> Registration {
        panic!(
            "no configuration for {}",
            std::any::type_name::<ConfigMap>()
        )
    }

    fn reconcile(_: Request) -> Result<Outcome, ReconcileError> {
        Ok(Outcome::Done)
    }
}
