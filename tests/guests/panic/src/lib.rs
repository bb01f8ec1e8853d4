//! `guest-panic`: reconcile panics. The standard panic hook writes the message to stderr before
//! the trap, so the host can show it.

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request};

/// The panicking reconciler.
pub struct Panic;

wasmop_guest::export_reconciler!(Panic);

impl Reconciler for Panic {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-panic", env!("CARGO_PKG_VERSION"))
            .max_concurrent_reconciles(1)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        panic!(
            "guest-panic: deliberate panic for {}/{}",
            req.namespace, req.name
        );
    }
}
