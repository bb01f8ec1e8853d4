//! `guest-secret-copy`: reconciling the Secret `source`, copies its data to the Secret `copy`
//! through every kind of write a recording must redact — a server-side apply, a JSON patch that
//! replaces the whole object (`path: ""`), a merge patch setting a last-applied annotation that
//! holds the values in the clear — and a create the apiserver refuses (`copy` exists by then).
//! Other Secrets are left alone.

use std::collections::BTreeMap;

use wasmop_guest::k8s_openapi::api::core::v1::Secret;
use wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wasmop_guest::{
    Error, OptionalExt, Outcome, ReconcileError, Reconciler, Registration, Request, Verb, cache,
    client, serde_json::json,
};

/// The annotation `kubectl apply` keeps the whole manifest in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The reconciler that copies Secrets.
pub struct SecretCopy;

wasmop_guest::export_reconciler!(SecretCopy);

impl Reconciler for SecretCopy {
    fn describe() -> Registration {
        Registration::new::<Secret>("guest-secret-copy", env!("CARGO_PKG_VERSION"))
            .permit::<Secret>(&[Verb::Get, Verb::Create, Verb::Patch])
            .max_concurrent_reconciles(1)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        if req.name != "source" {
            return Ok(Outcome::Done);
        }
        let Some(source) = cache()
            .get::<Secret>(&req.namespace, &req.name)
            .optional()?
        else {
            return Ok(Outcome::Done);
        };
        let copy = Secret {
            metadata: ObjectMeta {
                name: Some("copy".to_owned()),
                namespace: Some(req.namespace.clone()),
                ..ObjectMeta::default()
            },
            data: source.data.clone(),
            ..Secret::default()
        };
        client().apply(&copy, true)?;
        let clear: BTreeMap<String, String> = source
            .data
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
            .collect();
        let manifest = json!({"apiVersion": "v1", "kind": "Secret", "stringData": clear});
        let mut whole = json!(copy);
        whole["metadata"]["annotations"] = json!({ LAST_APPLIED: manifest.to_string() });
        let replace = json!([{"op": "replace", "path": "", "value": whole}]);
        // The apiserver may take or refuse a patch of the root; either way it is recorded.
        let _ = client().patch_json::<Secret>(&req.namespace, "copy", &replace);
        let annotate = json!({"metadata": {"annotations": { LAST_APPLIED: manifest.to_string() }}});
        client().patch_merge::<Secret>(&req.namespace, "copy", &annotate)?;
        match client().create(&copy) {
            Ok(_) | Err(Error::AlreadyExists(_)) => Ok(Outcome::Done),
            Err(error) => Err(error.into()),
        }
    }
}
