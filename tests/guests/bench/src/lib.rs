//! `guest-bench`: the cheapest reconciles, to measure the host's per-reconcile cost. A request
//! with an empty namespace returns at once without a host call (the floor); any other request
//! makes one raw cache read of its ConfigMap, without parsing it.

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::raw::wasmop::reconciler::cache;
use wasmop_guest::{Error, Kind, Outcome, ReconcileError, Reconciler, Registration, Request};

/// The benchmark reconciler.
pub struct Bench;

wasmop_guest::export_reconciler!(Bench);

impl Reconciler for Bench {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-bench", env!("CARGO_PKG_VERSION"))
            .max_concurrent_reconciles(1)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        if req.namespace.is_empty() {
            return Ok(Outcome::Done);
        }
        let object =
            cache::get(&ConfigMap::gvk(), &req.namespace, &req.name).map_err(Error::from)?;
        if object.is_empty() {
            return Err(ReconcileError::terminal(
                "the cache returned an empty object",
            ));
        }
        Ok(Outcome::Done)
    }
}
