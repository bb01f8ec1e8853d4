//! `guest-undeclared-write`: declares only ConfigMap create, then tries to create a Secret, which
//! the host must refuse on the declared permissions. Returns the error as a terminal failure.

use wasmop_guest::k8s_openapi::api::core::v1::{ConfigMap, Secret};
use wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request, Verb, client};

/// The reconciler that writes beyond its permissions.
pub struct UndeclaredWrite;

wasmop_guest::export_reconciler!(UndeclaredWrite);

impl Reconciler for UndeclaredWrite {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-undeclared-write", env!("CARGO_PKG_VERSION"))
            .permit::<ConfigMap>(&[Verb::Create])
            .max_concurrent_reconciles(1)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(req.name),
                namespace: Some(req.namespace),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        };
        match client().create(&secret) {
            Ok(_) => Ok(Outcome::Done),
            Err(e) => Err(ReconcileError::terminal(format!("{e:?}"))),
        }
    }
}
