//! `@NAME@`: marks each @KIND@ (`@API_VERSION@`) with the generation it last reconciled, in the
//! annotation `@NAME@.wasmop.dev/observed-generation`. Replace `reconcile` with your own logic
//! and `fixtures/` with what it should do.

@PRIMARY@
use wasmop_guest::serde_json::json;
use wasmop_guest::{
    OptionalExt, Outcome, ReconcileError, Reconciler, Registration, Request, Verb, cache, client,
};

/// The annotation recording the generation last reconciled.
const OBSERVED: &str = "@NAME@.wasmop.dev/observed-generation";

/// The `@NAME@` reconciler.
struct Plugin;

wasmop_guest::export_reconciler!(Plugin);

impl Reconciler for Plugin {
    fn describe() -> Registration {
        Registration::new::<Primary>("@NAME@", env!("CARGO_PKG_VERSION"))
            .permit::<Primary>(&[Verb::Patch])
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        let Some(object) = cache()
            .get::<Primary>(&req.namespace, &req.name)
            .optional()?
        else {
            return Ok(Outcome::Done);
        };
        let generation = object.metadata.generation.unwrap_or(0).to_string();
        let annotations = object.metadata.annotations.as_ref();
        if annotations.and_then(|a| a.get(OBSERVED)) != Some(&generation) {
            let patch = json!({"metadata": {"annotations": {OBSERVED: generation}}});
            client().patch_merge::<Primary>(&req.namespace, &req.name, &patch)?;
        }
        Ok(Outcome::Done)
    }
}
