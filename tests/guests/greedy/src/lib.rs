//! `guest-greedy`: asks for everything a registration can ask for: `u32::MAX` concurrent
//! reconciles, a reconcile timeout of `u64::MAX` milliseconds, and get and patch on every Secret in
//! every namespace. The host must clamp or refuse what exceeds its own limits. Reconciles do
//! nothing.

use std::time::Duration;

use wasmop_guest::k8s_openapi::api::core::v1::{ConfigMap, Secret};
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request, Verb};

/// The greedy reconciler.
pub struct Greedy;

wasmop_guest::export_reconciler!(Greedy);

impl Reconciler for Greedy {
    fn describe() -> Registration {
        // The builder keeps both limits as given: it only raises a concurrency of 0 to 1, and
        // `u64::MAX` milliseconds converts back to `u64::MAX` exactly.
        Registration::new::<ConfigMap>("guest-greedy", env!("CARGO_PKG_VERSION"))
            .permit::<Secret>(&[Verb::Get, Verb::Patch])
            .max_concurrent_reconciles(u32::MAX)
            .reconcile_timeout(Duration::from_millis(u64::MAX))
    }

    fn reconcile(_: Request) -> Result<Outcome, ReconcileError> {
        Ok(Outcome::Done)
    }
}
