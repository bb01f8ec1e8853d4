//! `guest-veto`: a plugin that may only read ConfigMaps and declares a validating webhook on
//! them that denies every create and update. A validating webhook is a read, so it loads; the
//! host must keep it out of kube-system and its own namespace unless the operator's policy names
//! them for it, so it cannot veto the control plane's writes.

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::webhooks::{AdmissionRequest, Operation, Verdict, Webhooks};
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request, Verb};

/// What every write it sees is denied with.
pub const VETO: &str = "vetoed by guest-veto";

/// The vetoing plugin.
pub struct Veto;

wasmop_guest::export_reconciler!(Veto);

impl Reconciler for Veto {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-veto", env!("CARGO_PKG_VERSION"))
            .permit::<ConfigMap>(&[Verb::Get])
    }

    fn reconcile(_: Request) -> Result<Outcome, ReconcileError> {
        Ok(Outcome::Done)
    }

    fn webhooks() -> Webhooks {
        Webhooks::none().validating::<ConfigMap>(&[Operation::Create, Operation::Update])
    }

    fn validate(_: &AdmissionRequest) -> Verdict {
        Verdict::denied(VETO)
    }
}
