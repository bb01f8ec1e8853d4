//! `guest-slow`: reconciles every ConfigMap by reading it and waiting 50 ms, the way a reconcile
//! that waits on the apiserver would; it lets tests see events merge while a key is queued.

use std::time::Duration;

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::{
    OptionalExt, Outcome, ReconcileError, Reconciler, Registration, Request, cache,
};

/// How long each reconcile takes.
pub const WORK: Duration = Duration::from_millis(50);

/// The slow reconciler.
pub struct Slow;

wasmop_guest::export_reconciler!(Slow);

impl Reconciler for Slow {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-slow", env!("CARGO_PKG_VERSION"))
            .max_concurrent_reconciles(1)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        cache()
            .get::<ConfigMap>(&req.namespace, &req.name)
            .optional()?;
        std::thread::sleep(WORK);
        Ok(Outcome::Done)
    }
}
