//! `guest-handler`: a plugin that handles its ConfigMaps' changes itself, through the `handlers`
//! export of the `handler-reconciler` world, where the host's mappings and predicates cannot say
//! what it wants:
//!
//! - an added ConfigMap is reconciled only when its name starts with `handled-` (or it is the
//!   `ledger`);
//! - an update only when `data.mode` differs between the old and the new object (so its own
//!   annotation does not reconcile it again);
//! - a deletion reconciles the namespace's `ledger` instead of the gone object.
//!
//! Each reconcile adds one to the object's `guest-handler.wasmop.dev/reconciles` annotation.
//! Added ConfigMaps with these names attack the handler's answer: `flood` (100,000 keys),
//! `stranger` (a key in another namespace), `crafted` (a key that is a path).
//!
//! Built against a frozen copy of WIT 0.1.2 (`wit/`), the contract it was written for: the host
//! loads and serves it as before under later 0.1 versions.

mod bindings {
    #![allow(clippy::all)]
    wit_bindgen::generate!({ world: "handler-reconciler", path: "wit", pub_export_macro: true });
}

use bindings::exports::wasmop::reconciler::handlers::{Change, Guest as Handlers};
use bindings::exports::wasmop::reconciler::webhooks::{
    AdmissionRequest, Denial, Guest as Webhooks, Registration as Served, Verdict,
};
use bindings::wasmop::reconciler::cache;
use bindings::wasmop::reconciler::client::{self, PatchBody};
use bindings::wasmop::reconciler::plugin::{
    Outcome, Permission, ReconcileError, Registration, Verb,
};
use bindings::wasmop::reconciler::types::{Error, Gvk, ObjectKey};
use bindings::{Guest, export};
use serde_json::{Value, json};

/// The annotation each reconcile counts itself in.
pub const RECONCILES: &str = "guest-handler.wasmop.dev/reconciles";

struct Handler;

fn configmap() -> Gvk {
    Gvk {
        group: String::new(),
        version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
    }
}

fn parsed(object: &str) -> Value {
    serde_json::from_str(object).unwrap_or(Value::Null)
}

fn key(object: &Value, name: &str) -> ObjectKey {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    ObjectKey {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

fn failed(error: Error) -> ReconcileError {
    ReconcileError::Retryable(format!("{error:?}"))
}

impl Guest for Handler {
    fn describe() -> Registration {
        Registration {
            name: "guest-handler".to_owned(),
            version: "0.1.0".to_owned(),
            primary: configmap(),
            predicates: Vec::new(),
            owns: Vec::new(),
            watches: Vec::new(),
            permissions: vec![Permission {
                kind: configmap(),
                verbs: vec![Verb::Get, Verb::Patch],
                namespaces: Vec::new(),
            }],
            indexes: Vec::new(),
            max_concurrent_reconciles: 1,
            reconcile_timeout: None,
        }
    }

    fn reconcile(req: ObjectKey) -> Result<Outcome, ReconcileError> {
        let object = match cache::get(&configmap(), &req.namespace, &req.name) {
            Ok(object) => parsed(&object),
            Err(Error::NotFound(_)) => return Ok(Outcome::Done),
            Err(error) => return Err(failed(error)),
        };
        let count = object["metadata"]["annotations"][RECONCILES]
            .as_str()
            .and_then(|count| count.parse::<u64>().ok())
            .unwrap_or(0);
        let patch = json!({"metadata": {"annotations": {RECONCILES: (count + 1).to_string()}}});
        let body = PatchBody::Merge(patch.to_string());
        client::patch(&configmap(), &req.namespace, &req.name, &body).map_err(failed)?;
        Ok(Outcome::Done)
    }

    fn r#map(_kind: Gvk, _obj: String) -> Vec<ObjectKey> {
        Vec::new()
    }
}

impl Handlers for Handler {
    fn describe_handlers() -> Vec<Gvk> {
        vec![configmap()]
    }

    fn handle(_kind: Gvk, change: Change) -> Vec<ObjectKey> {
        match change {
            Change::Added(object) => added(&parsed(&object)),
            Change::Updated(update) => {
                let (old, new) = (parsed(&update.old), parsed(&update.new));
                let name = new["metadata"]["name"].as_str().unwrap_or_default();
                match old["data"]["mode"] != new["data"]["mode"] {
                    true => vec![key(&new, name)],
                    false => Vec::new(),
                }
            }
            Change::Deleted(object) => vec![key(&parsed(&object), "ledger")],
        }
    }
}

/// The keys an added ConfigMap maps to, by its name.
fn added(object: &Value) -> Vec<ObjectKey> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match name {
        "flood" => (0..100_000)
            .map(|i| key(object, &format!("flood-{i}")))
            .collect(),
        "stranger" => vec![ObjectKey {
            namespace: "elsewhere".to_owned(),
            name: "stranger".to_owned(),
        }],
        "crafted" => vec![key(object, "../../secrets/x")],
        "ledger" => vec![key(object, name)],
        _ if name.starts_with("handled-") => vec![key(object, name)],
        _ => Vec::new(),
    }
}

impl Webhooks for Handler {
    fn describe_webhooks() -> Served {
        Served {
            validate: Vec::new(),
            default: Vec::new(),
            convert: Vec::new(),
        }
    }

    fn validate(_: AdmissionRequest) -> Verdict {
        Verdict::Allowed(Vec::new())
    }

    fn default(req: AdmissionRequest) -> Result<String, Denial> {
        req.object.ok_or_else(|| Denial {
            message: "serves no webhooks".to_owned(),
            warnings: Vec::new(),
        })
    }

    fn convert(obj: String, _api_version: String) -> Result<String, String> {
        Ok(obj)
    }
}

export!(Handler with_types_in bindings);
