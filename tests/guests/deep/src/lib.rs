//! `guest-deep`: a malicious plugin author's attacks on what the host parses, on the free-form
//! kind `Blob` (`hostile.wasmop.dev/v1`, namespaced, its `spec` keeping unknown fields; see
//! `blob.yaml` beside this crate). It declares get, patch and update of Blobs and, chosen by the
//! name of the Blob it reconciles:
//!
//! - `deep-<n>`: `n` JSON patches of the Blob, the k-th adding `{}` at `/spec/a/…/a` (k `a`s):
//!   each patch is a few bytes, inside every size limit, and the depth comes from its path. Then
//!   a merge patch, an applied object, an update and a JSON patch value each nesting 300 levels,
//!   a copy of the spec into a deeper path, and a merge patch reaching exactly the host's bound.
//! - `huge-error-<mib>`: a retryable error whose message is `<mib>` MiB.
//! - anything else: labels the Blob [`SEEN`] and is done.
//!
//! `deep-<n>` reports as a terminal error whose message is a JSON object: how many of the `n`
//! patches were accepted, how many refused and how (`invalid`, `forbidden` or `other`), the first
//! refused, and the result of each further call (`ok` or how it was refused).

use std::collections::BTreeMap;

use wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wasmop_guest::raw::wasmop::reconciler::{client, types};
use wasmop_guest::serde_json::{Value, json};
use wasmop_guest::{Gvk, Outcome, ReconcileError, Reconciler, Registration, Request, Verb};

/// The label this guest sets on the Blobs it reconciles normally.
pub const SEEN: &str = "guest-deep.wasmop.dev/seen";

/// How deep the one-shot attacks nest.
pub const DEEP: usize = 300;

/// The host's depth bound, which the last merge patch reaches exactly.
pub const BOUND: usize = 64;

const MIB: usize = 1 << 20;

/// A free-form object: metadata and whatever else.
pub struct Blob {
    metadata: ObjectMeta,
}

wasmop_guest::custom_resource!(Blob {
    group: "hostile.wasmop.dev",
    version: "v1",
    kind: "Blob",
    plural: "blobs",
    scope: Namespaced,
});

/// The reconciler.
pub struct Deep;

wasmop_guest::export_reconciler!(Deep);

impl Reconciler for Deep {
    fn describe() -> Registration {
        Registration::new::<Blob>("guest-deep", env!("CARGO_PKG_VERSION"))
            .permit::<Blob>(&[Verb::Get, Verb::Patch, Verb::Update])
            .max_concurrent_reconciles(2)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        let name = req.name.as_str();
        if let Some(n) = number_after(name, "deep-") {
            return Err(deepen(&req, n));
        }
        if let Some(mib) = number_after(name, "huge-error-") {
            return Err(ReconcileError::retryable("e".repeat(mib * MIB)));
        }
        let seen = json!({ "metadata": { "labels": { SEEN: "true" } } });
        let body = client::PatchBody::Merge(seen.to_string());
        client::patch(&blob(), &req.namespace, name, &body)
            .map_err(|e| ReconcileError::retryable(format!("{e:?}")))?;
        Ok(Outcome::Done)
    }
}

fn blob() -> Gvk {
    Gvk::of::<Blob>()
}

/// The decimal number after `prefix` in `name`.
fn number_after(name: &str, prefix: &str) -> Option<usize> {
    name.strip_prefix(prefix)?.parse().ok()
}

/// `{"a":{"a":…{}…}}`, `depth` levels deep.
fn nested(depth: usize) -> String {
    let mut text = "{\"a\":".repeat(depth.saturating_sub(1));
    text.push_str("{}");
    text.push_str(&"}".repeat(depth.saturating_sub(1)));
    text
}

/// `ok`, `invalid` (refused at the host's boundary), `forbidden`, or `other`.
fn result_name<T>(result: &Result<T, types::Error>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(types::Error::Invalid(_)) => "invalid",
        Err(types::Error::Forbidden(_)) => "forbidden",
        Err(_) => "other",
    }
}

/// The `deep-<n>` attack and its report.
fn deepen(req: &Request, n: usize) -> ReconcileError {
    let (ns, name) = (req.namespace.as_str(), req.name.as_str());
    let json_patch = |ops: Value| client::PatchBody::Json(ops.to_string());
    let (mut accepted, mut refused, mut first_refused) = (0, BTreeMap::new(), None);
    for k in 1..=n {
        let path = format!("/spec{}", "/a".repeat(k));
        let ops = json!([{ "op": "add", "path": path, "value": {} }]);
        let result = client::patch(&blob(), ns, name, &json_patch(ops));
        match result_name(&result) {
            "ok" => accepted += 1,
            error => {
                *refused.entry(error).or_insert(0) += 1;
                first_refused.get_or_insert(k);
            }
        }
    }
    let whole = |spec: &str| {
        format!(
            r#"{{"apiVersion":"hostile.wasmop.dev/v1","kind":"Blob","metadata":{{"namespace":"{ns}","name":"{name}"}},"spec":{spec}}}"#
        )
    };
    let deep = nested(DEEP);
    let mut calls = BTreeMap::new();
    let merge = client::PatchBody::Merge(format!(r#"{{"spec":{deep}}}"#));
    calls.insert("merge", client::patch(&blob(), ns, name, &merge));
    let apply = client::PatchBody::Apply(client::ApplyPatch {
        object: whole(&deep),
        force: true,
    });
    calls.insert("apply", client::patch(&blob(), ns, name, &apply));
    calls.insert("update", client::update(&whole(&deep)));
    let value: Value = json!([{ "op": "add", "path": "/spec/b", "value": "VALUE" }]);
    let value = client::PatchBody::Json(value.to_string().replace("\"VALUE\"", &deep));
    calls.insert("json-value", client::patch(&blob(), ns, name, &value));
    let deeper = format!("/spec{}/c", "/a".repeat(40));
    let copy = json!([{ "op": "copy", "from": "/spec", "path": deeper }]);
    calls.insert(
        "copy-deeper",
        client::patch(&blob(), ns, name, &json_patch(copy)),
    );
    // The object and its spec are two levels: a value two shallower than the bound fits.
    let fits = format!(r#"{{"spec":{{"b":{}}}}}"#, nested(BOUND - 2));
    let fits = client::PatchBody::Merge(fits);
    calls.insert("merge-at-bound", client::patch(&blob(), ns, name, &fits));
    let calls: BTreeMap<&str, &str> = calls.iter().map(|(c, r)| (*c, result_name(r))).collect();
    ReconcileError::terminal(json!({
        "accepted": accepted,
        "refused": refused,
        "first_refused": first_refused,
        "calls": calls,
    }))
}
