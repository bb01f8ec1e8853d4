//! A component built against `wasmop:reconciler@0.1.1`, the WIT before handlers (frozen in
//! `wit/`): it reconciles ConfigMaps and validates their creates, refusing those named `refused`.
//! The host must load it, find its `webhooks@0.1.1` export and call it.

mod bindings {
    #![allow(clippy::all)]
    wit_bindgen::generate!({ world: "webhook-reconciler", path: "wit", pub_export_macro: true });
}

use bindings::exports::wasmop::reconciler::webhooks::{
    AdmissionRequest, Denial, Guest as Webhooks, Operation, Registration as Served, Rule, Verdict,
};
use bindings::wasmop::reconciler::plugin::{Outcome, ReconcileError, Registration};
use bindings::wasmop::reconciler::types::{Gvk, ObjectKey};
use bindings::{Guest, export};

struct Old;

fn configmap() -> Gvk {
    Gvk {
        group: String::new(),
        version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
    }
}

impl Guest for Old {
    fn describe() -> Registration {
        Registration {
            name: "guest-wit011".to_owned(),
            version: "0.1.1".to_owned(),
            primary: configmap(),
            predicates: Vec::new(),
            owns: Vec::new(),
            watches: Vec::new(),
            permissions: Vec::new(),
            indexes: Vec::new(),
            max_concurrent_reconciles: 1,
            reconcile_timeout: None,
        }
    }

    fn reconcile(_: ObjectKey) -> Result<Outcome, ReconcileError> {
        Ok(Outcome::Done)
    }

    fn r#map(_kind: Gvk, _obj: String) -> Vec<ObjectKey> {
        Vec::new()
    }
}

impl Webhooks for Old {
    fn describe_webhooks() -> Served {
        Served {
            validate: vec![Rule {
                kind: configmap(),
                operations: vec![Operation::Create],
            }],
            default: Vec::new(),
            convert: Vec::new(),
        }
    }

    fn validate(req: AdmissionRequest) -> Verdict {
        match req.name.as_str() {
            "refused" => Verdict::Denied(Denial {
                message: "refused by guest-wit011".to_owned(),
                warnings: Vec::new(),
            }),
            _ => Verdict::Allowed(Vec::new()),
        }
    }

    fn default(req: AdmissionRequest) -> Result<String, Denial> {
        req.object.ok_or_else(|| Denial {
            message: "nothing to default".to_owned(),
            warnings: Vec::new(),
        })
    }

    fn convert(obj: String, _api_version: String) -> Result<String, String> {
        Ok(obj)
    }
}

export!(Old with_types_in bindings);
