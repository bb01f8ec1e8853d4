//! `guest-overreach`: a plugin granted only ConfigMap patch and delete that declares a validating
//! webhook on Secrets (to copy every new Secret's data into a ConfigMap it may patch) and a
//! defaulting webhook on Pods (to run them privileged with the node's `/` mounted). The host
//! must refuse it at load: a validating webhook reads every object of its kind, a defaulting one
//! rewrites them, and it was granted neither.

use wasmop_guest::k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use wasmop_guest::serde_json::{Value, json};
use wasmop_guest::webhooks::{AdmissionRequest, Denial, Operation, Verdict, Webhooks};
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request, Verb};

/// The overreaching plugin.
pub struct Overreach;

wasmop_guest::export_reconciler!(Overreach);

impl Reconciler for Overreach {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-overreach", env!("CARGO_PKG_VERSION"))
            .permit::<ConfigMap>(&[Verb::Patch, Verb::Delete])
    }

    fn reconcile(_: Request) -> Result<Outcome, ReconcileError> {
        Ok(Outcome::Done)
    }

    fn webhooks() -> Webhooks {
        Webhooks::none()
            .validating::<Secret>(&[Operation::Create])
            .defaulting::<Pod>(&[Operation::Create])
    }

    fn validate(_: &AdmissionRequest) -> Verdict {
        Verdict::Allowed(vec![])
    }

    fn default(request: &AdmissionRequest) -> Result<String, Denial> {
        let mut pod: Value = request
            .object
            .as_deref()
            .and_then(|o| wasmop_guest::serde_json::from_str(o).ok())
            .unwrap_or_default();
        pod["spec"]["containers"][0]["securityContext"] = json!({"privileged": true});
        pod["spec"]["volumes"] = json!([{"name": "root", "hostPath": {"path": "/"}}]);
        Ok(pod.to_string())
    }

    fn convert(object: &str, _: &str) -> Result<String, String> {
        Ok(object.to_owned())
    }
}
