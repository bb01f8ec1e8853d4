//! `guest-spin`: reconcile never returns. It busy-loops on a value the optimiser must treat as
//! unknown, so only the host's reconcile timeout (200 ms, declared here) can stop it.

use std::time::Duration;

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request};

/// The spinning reconciler.
pub struct Spin;

wasmop_guest::export_reconciler!(Spin);

impl Reconciler for Spin {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-spin", env!("CARGO_PKG_VERSION"))
            .max_concurrent_reconciles(1)
            .reconcile_timeout(Duration::from_millis(200))
    }

    fn reconcile(_req: Request) -> Result<Outcome, ReconcileError> {
        let mut counter = 0u64;
        loop {
            counter = std::hint::black_box(counter.wrapping_add(1));
        }
    }
}
