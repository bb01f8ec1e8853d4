//! `guest-spin`: reconcile never returns, nor does `validate`, which it declares for ConfigMaps.
//! Both busy-loop on a value the optimiser must treat as unknown, so only the host's deadlines
//! (a reconcile timeout of 200 ms, declared here; the webhook timeout) can stop them.

use std::time::Duration;

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::webhooks::{AdmissionRequest, Operation, Verdict, Webhooks};
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
        spin()
    }

    fn webhooks() -> Webhooks {
        Webhooks::none().validating::<ConfigMap>(&[Operation::Create])
    }

    fn validate(_request: &AdmissionRequest) -> Verdict {
        spin()
    }
}

fn spin() -> ! {
    let mut counter = 0u64;
    loop {
        counter = std::hint::black_box(counter.wrapping_add(1));
    }
}
