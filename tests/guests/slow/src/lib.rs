//! `guest-slow`: reconciles every ConfigMap by reading it and waiting 50 ms, the way a reconcile
//! that waits on the apiserver would; it lets tests see events merge while a key is queued.
//! A ConfigMap with a `sleep-ms` entry makes its reconcile wait that long and then annotate it
//! with `guest-slow.wasmop.dev/finished`, so tests can tell a reconcile that ran to its end.

use std::time::Duration;

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::{
    OptionalExt, Outcome, ReconcileError, Reconciler, Registration, Request, Verb, cache, client,
    serde_json::json,
};

/// How long each reconcile takes.
pub const WORK: Duration = Duration::from_millis(50);

/// The annotation written at the end of a `sleep-ms` reconcile.
pub const FINISHED: &str = "guest-slow.wasmop.dev/finished";

/// The slow reconciler.
pub struct Slow;

wasmop_guest::export_reconciler!(Slow);

impl Reconciler for Slow {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-slow", env!("CARGO_PKG_VERSION"))
            .permit::<ConfigMap>(&[Verb::Get, Verb::Patch])
            .max_concurrent_reconciles(1)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        let configmap = cache()
            .get::<ConfigMap>(&req.namespace, &req.name)
            .optional()?;
        let sleep = configmap
            .as_ref()
            .and_then(|c| c.data.as_ref()?.get("sleep-ms")?.parse().ok());
        let Some(sleep) = sleep else {
            std::thread::sleep(WORK);
            return Ok(Outcome::Done);
        };
        let finished = configmap
            .as_ref()
            .and_then(|c| c.metadata.annotations.as_ref())
            .is_some_and(|a| a.contains_key(FINISHED));
        if !finished {
            std::thread::sleep(Duration::from_millis(sleep));
            let patch = json!({ "metadata": { "annotations": { FINISHED: sleep.to_string() } } });
            client().patch_merge::<ConfigMap>(&req.namespace, &req.name, &patch)?;
        }
        Ok(Outcome::Done)
    }
}
