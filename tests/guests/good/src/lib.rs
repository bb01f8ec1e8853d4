//! `guest-good`: a well-behaved reconciler that keeps working while other plugins misbehave. It
//! annotates each ConfigMap once with `guest-good.wasmop.dev/seen`, and, when its configuration
//! gives it arguments or the variable `GUEST_GOOD_MARK`, with what it started with
//! (`guest-good.wasmop.dev/started-with`: `args=<arguments>;mark=<variable>`).

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::{
    OptionalExt, Outcome, ReconcileError, Reconciler, Registration, Request, Verb, cache, client,
    serde_json::json,
};

/// The annotation this guest sets.
pub const SEEN: &str = "guest-good.wasmop.dev/seen";
/// The annotation that says what it started with, when it was configured.
pub const STARTED_WITH: &str = "guest-good.wasmop.dev/started-with";

/// The well-behaved reconciler.
pub struct Good;

wasmop_guest::export_reconciler!(Good);

impl Reconciler for Good {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-good", env!("CARGO_PKG_VERSION"))
            .permit::<ConfigMap>(&[Verb::Get, Verb::Patch])
            .max_concurrent_reconciles(1)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        let Some(configmap) = cache()
            .get::<ConfigMap>(&req.namespace, &req.name)
            .optional()?
        else {
            return Ok(Outcome::Done);
        };
        let meta = &configmap.metadata;
        if meta
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(SEEN))
        {
            return Ok(Outcome::Done);
        }
        let seen = meta
            .generation
            .map_or_else(|| "1".to_owned(), |g| g.to_string());
        let mut patch = json!({ "metadata": { "annotations": { SEEN: seen } } });
        if let Some(started_with) = started_with() {
            patch["metadata"]["annotations"][STARTED_WITH] = json!(started_with);
        }
        client().patch_merge::<ConfigMap>(&req.namespace, &req.name, &patch)?;
        Ok(Outcome::Done)
    }
}

/// The arguments after the program's name and `GUEST_GOOD_MARK`, when either is given.
fn started_with() -> Option<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mark = std::env::var("GUEST_GOOD_MARK").ok();
    (!args.is_empty() || mark.is_some())
        .then(|| format!("args={};mark={}", args.join(" "), mark.unwrap_or_default()))
}
