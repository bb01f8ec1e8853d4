//! `guest-bad-json`: reconcile hands the client truncated JSON through the raw bindings and
//! returns the error it gets back, verbatim, as a terminal failure.

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::raw::wasmop::reconciler::client;
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request, Verb};

/// The truncated object this guest tries to create.
pub const TRUNCATED: &str = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"#;

/// The reconciler that sends malformed JSON.
pub struct BadJson;

wasmop_guest::export_reconciler!(BadJson);

impl Reconciler for BadJson {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-bad-json", env!("CARGO_PKG_VERSION"))
            .permit::<ConfigMap>(&[Verb::Create])
            .max_concurrent_reconciles(1)
    }

    fn reconcile(_req: Request) -> Result<Outcome, ReconcileError> {
        match client::create(TRUNCATED) {
            Ok(_) => Ok(Outcome::Done),
            Err(e) => Err(ReconcileError::terminal(format!("{e:?}"))),
        }
    }
}
