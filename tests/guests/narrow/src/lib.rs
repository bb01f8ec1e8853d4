//! `guest-narrow`: may write ConfigMaps only in the namespace [`HOME`], yet records a Normal
//! event `Seen` about every ConfigMap it reconciles, in whatever namespace. The host must publish
//! only the events in namespaces the plugin may write.

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::{
    Outcome, ReconcileError, Reconciler, Registration, Request, Verb, cache, events,
};

/// The one namespace the plugin may write in.
pub const HOME: &str = "narrow-home";

/// The narrow plugin.
pub struct Narrow;

wasmop_guest::export_reconciler!(Narrow);

impl Reconciler for Narrow {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-narrow", env!("CARGO_PKG_VERSION"))
            .permit_in::<ConfigMap>(&[Verb::Patch], &[HOME])
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        if let Ok(seen) = cache().get::<ConfigMap>(&req.namespace, &req.name) {
            events().normal(&seen, "Seen", "reconciled by guest-narrow");
        }
        Ok(Outcome::Done)
    }
}
