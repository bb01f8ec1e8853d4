//! `guest-converter`: a plugin that may read and update `Thing`s (`other.example.com`) and patch
//! and create ConfigMaps, and tries what a careless host would let it do beyond that:
//!
//! - it converts `Thing`s, another operator's custom resource: the host must take that CRD's
//!   conversion only when the operator's policy names it for this plugin and nobody else's
//!   webhook converts it;
//! - its defaulting webhook on ConfigMap creates patches the ConfigMap [`VICTIM`] and records
//!   an event: webhook calls read only, so both are refused, and the defaulted object carries
//!   the result as the annotation [`WRITE_RESULT`];
//! - reconciling the ConfigMap `orphan-<victim>` it points `<victim>`'s owner references at
//!   objects the garbage collector would delete it for: a uid that does not exist (by merge
//!   patch, by a whole-object JSON patch, by a JSON patch of one field), a ConfigMap of another
//!   namespace, a Secret it may not read. Each must be refused; the report is a terminal error
//!   whose message is a JSON array `[{"call": …, "result": …}, …]`;
//! - reconciling `adopt-<victim>` it makes the reconciled ConfigMap `<victim>`'s owner, with
//!   its real uid: allowed.

#[path = "../../shared/report.rs"]
mod report;

use report::result_name;
use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::raw::wasmop::reconciler::{cache, client, events, types};
use wasmop_guest::serde_json::{self, Value, json};
use wasmop_guest::webhooks::{AdmissionRequest, Denial, Operation, Verdict, Webhooks};
use wasmop_guest::{Gvk, Outcome, ReconcileError, Reconciler, Registration, Request, Verb};

/// The ConfigMap the defaulting webhook tries to patch.
pub const VICTIM: &str = "victim";

/// The annotation the defaulting webhook sets to the result of its write.
pub const WRITE_RESULT: &str = "converter.wasmop.dev/write";

/// Another operator's custom resource.
#[derive(Clone, Debug, Default)]
pub struct Thing {
    metadata: wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
}

wasmop_guest::custom_resource!(Thing {
    group: "other.example.com",
    version: "v1",
    kind: "Thing",
    plural: "things",
    scope: Namespaced,
});

/// The converting plugin.
pub struct Converter;

wasmop_guest::export_reconciler!(Converter);

impl Reconciler for Converter {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-converter", env!("CARGO_PKG_VERSION"))
            .permit::<ConfigMap>(&[Verb::Patch, Verb::Create])
            .permit::<Thing>(&[Verb::Get, Verb::Update])
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        if let Some(victim) = req.name.strip_prefix("orphan-") {
            return Err(orphan(&req.namespace, victim));
        }
        if let Some(victim) = req.name.strip_prefix("adopt-") {
            let owner = cache::get(&configmap(), &req.namespace, &req.name)?;
            let owner: Value = serde_json::from_str(&owner).unwrap_or_default();
            let uid = owner["metadata"]["uid"].as_str().unwrap_or_default();
            let patch = owners(json!([reference("ConfigMap", &req.name, uid)]));
            client::patch(&configmap(), &req.namespace, victim, &patch)?;
        }
        Ok(Outcome::Done)
    }

    fn webhooks() -> Webhooks {
        Webhooks::none()
            .defaulting::<ConfigMap>(&[Operation::Create])
            .converting::<Thing>()
    }

    fn validate(_: &AdmissionRequest) -> Verdict {
        Verdict::Allowed(vec![])
    }

    fn default(request: &AdmissionRequest) -> Result<String, Denial> {
        let pwned = client::PatchBody::Merge(r#"{"metadata":{"labels":{"pwned":"true"}}}"#.into());
        let wrote = client::patch(&configmap(), &request.namespace, VICTIM, &pwned);
        let about = events::Regarding {
            kind: configmap(),
            namespace: request.namespace.clone(),
            name: VICTIM.to_owned(),
            uid: String::new(),
        };
        events::record(
            &about,
            events::EventType::Warning,
            "Pwned",
            "from a webhook",
        );
        let mut object: Value = request
            .object
            .as_deref()
            .and_then(|o| serde_json::from_str(o).ok())
            .unwrap_or_default();
        object["metadata"]["annotations"][WRITE_RESULT] = json!(result_name(&wrote));
        Ok(object.to_string())
    }

    fn convert(object: &str, api_version: &str) -> Result<String, String> {
        let mut object: Value = serde_json::from_str(object).map_err(|e| e.to_string())?;
        object["apiVersion"] = json!(api_version);
        Ok(object.to_string())
    }
}

/// Points `victim`'s owner references where the garbage collector would delete it for them.
fn orphan(namespace: &str, victim: &str) -> ReconcileError {
    let cm = configmap();
    let mut report = Vec::new();
    let mut push = |call: &str, result: Result<String, types::Error>| {
        report.push(json!({"call": call, "result": result_name(&result)}));
    };
    let ghost = json!([reference(
        "ConfigMap",
        "ghost",
        "0d15ea5e-0000-4000-8000-000000000000"
    )]);
    push(
        "merge",
        client::patch(&cm, namespace, victim, &owners(ghost.clone())),
    );
    let whole = json!([{"op": "add", "path": "", "value": {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": victim, "namespace": namespace, "ownerReferences": ghost},
    }}]);
    let whole = client::PatchBody::Json(whole.to_string());
    push(
        "whole-object",
        client::patch(&cm, namespace, victim, &whole),
    );
    let field = json!([{"op": "add", "path": "/metadata/ownerReferences", "value": []},
        {"op": "add", "path": "/metadata/ownerReferences/0/uid", "value": "made-up"}]);
    let field = client::PatchBody::Json(field.to_string());
    push("one-field", client::patch(&cm, namespace, victim, &field));
    let options = cache::ListOptions {
        namespace: None,
        label_selector: Some("converter.wasmop.dev/elsewhere".to_owned()),
        field_selector: None,
    };
    let elsewhere = cache::list(&cm, &options).unwrap_or_default();
    let elsewhere: Value = elsewhere
        .first()
        .and_then(|o| serde_json::from_str(o).ok())
        .unwrap_or_default();
    let (name, uid) = (
        elsewhere["metadata"]["name"].as_str().unwrap_or("none"),
        elsewhere["metadata"]["uid"].as_str().unwrap_or("none"),
    );
    let foreign = owners(json!([reference("ConfigMap", name, uid)]));
    push(
        "other-namespace",
        client::patch(&cm, namespace, victim, &foreign),
    );
    let secret = json!([{"apiVersion": "v1", "kind": "Secret", "name": "any", "uid": "u",
        "controller": false}]);
    push(
        "unreadable-kind",
        client::patch(&cm, namespace, victim, &owners(secret)),
    );
    ReconcileError::terminal(Value::Array(report))
}

/// An owner reference to the object `name` of kind `kind` (core group, v1).
fn reference(kind: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "name": name, "uid": uid})
}

/// A merge patch setting the owner references.
fn owners(references: Value) -> client::PatchBody {
    client::PatchBody::Merge(json!({"metadata": {"ownerReferences": references}}).to_string())
}

fn configmap() -> Gvk {
    Gvk::of::<ConfigMap>()
}
