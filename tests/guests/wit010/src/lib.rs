//! A component built against `wasmop:reconciler@0.1.0`, the WIT before webhooks (frozen in
//! `wit/`): it declares ConfigMaps and logs each reconcile. The host must load and run it.

mod bindings {
    #![allow(clippy::all)]
    wit_bindgen::generate!({ world: "reconciler", path: "wit", pub_export_macro: true });
}

use bindings::wasmop::reconciler::log::{self, Level};
use bindings::wasmop::reconciler::plugin::{Outcome, ReconcileError, Registration};
use bindings::wasmop::reconciler::types::{Gvk, ObjectKey};
use bindings::{Guest, export};

struct Old;

impl Guest for Old {
    fn describe() -> Registration {
        Registration {
            name: "guest-wit010".to_owned(),
            version: "0.1.0".to_owned(),
            primary: Gvk {
                group: String::new(),
                version: "v1".to_owned(),
                kind: "ConfigMap".to_owned(),
            },
            predicates: Vec::new(),
            owns: Vec::new(),
            watches: Vec::new(),
            permissions: Vec::new(),
            indexes: Vec::new(),
            max_concurrent_reconciles: 1,
            reconcile_timeout: None,
        }
    }

    fn reconcile(req: ObjectKey) -> Result<Outcome, ReconcileError> {
        let message = format!("reconciled {}/{}", req.namespace, req.name);
        log::log(Level::Info, &message, &[]);
        Ok(Outcome::Done)
    }

    fn r#map(_kind: Gvk, _obj: String) -> Vec<ObjectKey> {
        Vec::new()
    }
}

export!(Old with_types_in bindings);
