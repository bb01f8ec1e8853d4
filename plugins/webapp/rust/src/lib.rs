//! The `webapp` plugin: each `WebApp` (`example.wasmop.dev/v1alpha1`) becomes a Deployment and a
//! ClusterIP Service it controls, plus an external marker ConfigMap that its finalizer deletes.
//! Its status reports the Deployment's ready replicas and a `Ready` condition. A converged WebApp
//! is reconciled without a single write.

mod admission;
mod desired;
mod resource;

use std::time::Duration;

use serde_json::json;
use wasmop_guest::k8s_openapi::api::apps::v1::Deployment;
use wasmop_guest::k8s_openapi::api::core::v1::{ConfigMap, Service};
use wasmop_guest::meta::{
    add_finalizer, controller_owner_ref, has_finalizer, is_deleting, remove_finalizer,
};
use wasmop_guest::webhooks::{AdmissionRequest, Denial, Operation, Verdict, Webhooks};
use wasmop_guest::{
    Error, ObjectKey, OptionalExt, Outcome, ReconcileError, Reconciler, Registration, Request,
    Verb, cache, client, events,
};

pub use resource::{WebApp, WebAppSpec, WebAppStatus};

/// The finalizer that keeps a WebApp until its marker ConfigMap is gone.
pub const FINALIZER: &str = "example.wasmop.dev/cleanup";

/// The plugin's name: `webapp`, or what a build names with `WEBAPP_PLUGIN` (beside
/// `WEBAPP_GROUP`, see [`resource::GROUP`]).
pub const NAME: &str = match option_env!("WEBAPP_PLUGIN") {
    Some(name) => name,
    None => "webapp",
};

/// The `webapp` reconciler.
pub struct WebAppReconciler;

wasmop_guest::export_reconciler!(WebAppReconciler);

impl Reconciler for WebAppReconciler {
    fn describe() -> Registration {
        use Verb::{Create, Delete, Get, Patch, Status, Update};
        Registration::new::<WebApp>(NAME, env!("CARGO_PKG_VERSION"))
            .owns::<Deployment>()
            .owns::<Service>()
            .permit::<Deployment>(&[Create, Update, Patch, Delete])
            .permit::<Service>(&[Create, Update, Patch, Delete])
            .permit::<WebApp>(&[Update, Patch, Status])
            .permit::<ConfigMap>(&[Get, Create, Delete])
            .max_concurrent_reconciles(4)
            .reconcile_timeout(Duration::from_secs(10))
    }

    fn webhooks() -> Webhooks {
        let writes = [Operation::Create, Operation::Update];
        Webhooks::none()
            .validating::<WebApp>(&writes)
            .defaulting::<WebApp>(&writes)
            .converting::<WebApp>()
    }

    fn validate(request: &AdmissionRequest) -> Verdict {
        admission::validate(request)
    }

    fn default(request: &AdmissionRequest) -> Result<String, Denial> {
        admission::default(request)
    }

    fn convert(object: &str, api_version: &str) -> Result<String, String> {
        admission::convert(object, api_version)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        let Some(app) = cache()
            .get::<WebApp>(&req.namespace, &req.name)
            .optional()?
        else {
            return Ok(Outcome::Done);
        };
        if is_deleting(&app) {
            finalize(app)?;
            return Ok(Outcome::Done);
        }
        let app = ensure_finalizer(app)?;
        ensure_marker(&app)?;
        let owner = controller_owner_ref(&app)
            .ok_or_else(|| ReconcileError::terminal(format!("WebApp {req} has no uid")))?;
        let deployment = ensure_deployment(&app, &desired::deployment(&app, &owner))?;
        ensure_service(&desired::service(&app, &owner))?;
        let ready = deployment
            .status
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0);
        let status = desired::status(&app, ready);
        if app.status.as_ref() != Some(&status) {
            client().patch_status_merge::<WebApp>(
                &req.namespace,
                &req.name,
                &json!({ "status": status }),
            )?;
        }
        Ok(Outcome::Done)
    }
}

/// Deletes the marker and releases the WebApp by removing the finalizer.
fn finalize(mut app: WebApp) -> Result<(), Error> {
    if !has_finalizer(&app, FINALIZER) {
        return Ok(());
    }
    let key = ObjectKey::of(&app);
    client()
        .delete::<ConfigMap>(&key.namespace, &desired::marker_name(&key.name))
        .optional()?;
    remove_finalizer(&mut app, FINALIZER);
    client().update(&app)?;
    wasmop_guest::info!("released WebApp {key}");
    Ok(())
}

fn ensure_finalizer(mut app: WebApp) -> Result<WebApp, Error> {
    if !add_finalizer(&mut app, FINALIZER) {
        return Ok(app);
    }
    client().update(&app)
}

fn ensure_marker(app: &WebApp) -> Result<(), Error> {
    let marker = desired::marker(app);
    let key = ObjectKey::of(&marker);
    if cache()
        .get::<ConfigMap>(&key.namespace, &key.name)
        .optional()?
        .is_some()
    {
        return Ok(());
    }
    match client().create(&marker) {
        Err(e) if e.is_already_exists() => Ok(()),
        result => result.map(drop),
    }
}

/// Applies the Deployment when it is missing or drifted; returns the Deployment as it stands.
fn ensure_deployment(app: &WebApp, desired: &Deployment) -> Result<Deployment, Error> {
    let key = ObjectKey::of(desired);
    match cache()
        .get::<Deployment>(&key.namespace, &key.name)
        .optional()?
    {
        Some(current) if desired::deployment_matches(&current, desired) => Ok(current),
        current => {
            let applied = client().apply(desired, true)?;
            if current.is_none() {
                events().normal(app, "Created", &format!("Created Deployment {key}"));
            }
            Ok(applied)
        }
    }
}

/// Applies the Service when it is missing or drifted.
fn ensure_service(desired: &Service) -> Result<(), Error> {
    let key = ObjectKey::of(desired);
    match cache()
        .get::<Service>(&key.namespace, &key.name)
        .optional()?
    {
        Some(current) if desired::service_matches(&current, desired) => Ok(()),
        _ => client().apply(desired, true).map(drop),
    }
}
