//! The reconciler: brings one WebApp's finalizer, marker ConfigMap, Deployment, Service and status
//! to what `desired` says, reading everything from reflector stores and writing only what differs.
//! Failures are retried with a per-WebApp exponential backoff (5 ms doubling up to 1000 s, reset by
//! a success), the per-key part of the rate limiter wasmop and controller-runtime use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::store::WriterDropped;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use crate::desired;
use crate::resource::WebApp;

/// The field manager of every write.
pub const MANAGER: &str = "webapp-kube-rs";
/// How long one reconcile may take (the plugin's `reconcile_timeout`).
pub const RECONCILE_TIMEOUT: Duration = Duration::from_secs(10);
/// The first retry delay after a failure.
const BASE_DELAY: Duration = Duration::from_millis(5);
/// The largest retry delay.
const MAX_DELAY: Duration = Duration::from_secs(1000);

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the apiserver failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The WebApp has no uid to own its children by; retrying cannot help.
    #[error("WebApp {0} has no uid")]
    NoUid(String),
    /// A reflector stopped, so its store will never be ready.
    #[error("a cache stopped: {0}")]
    CacheStopped(#[from] WriterDropped),
    /// The reconcile took longer than [`RECONCILE_TIMEOUT`].
    #[error("reconcile timed out after {RECONCILE_TIMEOUT:?}")]
    Timeout,
}

/// What every reconcile shares: the client, the stores it reads and the retry counts.
pub struct Context {
    client: Client,
    deployments: Store<Deployment>,
    services: Store<Service>,
    markers: Store<ConfigMap>,
    recorder: Recorder,
    failures: Mutex<HashMap<ObjectRef<WebApp>, u32>>,
}

impl Context {
    /// A context writing through `client` and reading the owned objects and markers from stores.
    pub fn new(
        client: Client,
        deployments: Store<Deployment>,
        services: Store<Service>,
        markers: Store<ConfigMap>,
    ) -> Self {
        let reporter = Reporter {
            controller: MANAGER.to_owned(),
            instance: None,
        };
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            deployments,
            services,
            markers,
            failures: Mutex::default(),
        }
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectRef<WebApp>, u32>> {
        self.failures.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The delay before retrying `key`, counting this failure.
    fn backoff(&self, key: ObjectRef<WebApp>) -> Duration {
        let mut failures = self.failures();
        let count = failures.entry(key).or_insert(0);
        let delay = 1u32
            .checked_shl(*count)
            .map_or(MAX_DELAY, |factor| BASE_DELAY.saturating_mul(factor))
            .min(MAX_DELAY);
        *count = count.saturating_add(1);
        delay
    }

    /// Resets the backoff of `key` after it succeeded.
    fn forget(&self, key: &ObjectRef<WebApp>) {
        self.failures().remove(key);
    }

    fn write_params() -> PatchParams {
        PatchParams {
            field_manager: Some(MANAGER.to_owned()),
            ..PatchParams::default()
        }
    }
}

/// Reconciles one WebApp within [`RECONCILE_TIMEOUT`]; a converged WebApp causes no writes.
pub async fn reconcile(app: Arc<WebApp>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = ObjectRef::from_obj(&*app);
    tokio::time::timeout(RECONCILE_TIMEOUT, converge(app, &ctx))
        .await
        .unwrap_or(Err(Error::Timeout))?;
    ctx.forget(&key);
    Ok(Action::await_change())
}

/// Retries a failed reconcile with backoff, except when retrying cannot help.
pub fn error_policy(app: Arc<WebApp>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = ObjectRef::from_obj(&*app);
    if let Error::NoUid(_) = error {
        tracing::warn!("reconciling WebApp {key} failed: {error}; not retried");
        ctx.forget(&key);
        return Action::await_change();
    }
    tracing::warn!("reconciling WebApp {key} failed: {error}; retrying with backoff");
    Action::requeue(ctx.backoff(key))
}

async fn converge(app: Arc<WebApp>, ctx: &Context) -> Result<(), Error> {
    ctx.deployments.wait_until_ready().await?;
    ctx.services.wait_until_ready().await?;
    ctx.markers.wait_until_ready().await?;
    let namespace = app.namespace().unwrap_or_default();
    let webapps = Api::<WebApp>::namespaced(ctx.client.clone(), &namespace);
    if app.metadata.deletion_timestamp.is_some() {
        return finalize(&app, &webapps, ctx).await;
    }
    let app = ensure_finalizer(app, &webapps).await?;
    ensure_marker(&app, ctx).await?;
    let owner = desired::controller_owner_ref(&app)
        .ok_or_else(|| Error::NoUid(ObjectRef::from_obj(&*app).to_string()))?;
    let deployment = ensure_deployment(&app, desired::deployment(&app, &owner), ctx).await?;
    ensure_service(desired::service(&app, &owner), ctx).await?;
    let ready = deployment
        .status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0);
    let status = desired::status(&app, ready);
    if app.status.as_ref() != Some(&status) {
        let patch = Patch::Merge(json!({ "status": status }));
        webapps
            .patch_status(&app.name_any(), &Context::write_params(), &patch)
            .await?;
    }
    Ok(())
}

/// Deletes the marker and releases the WebApp by removing the finalizer.
async fn finalize(app: &WebApp, webapps: &Api<WebApp>, ctx: &Context) -> Result<(), Error> {
    if !desired::has_finalizer(app) {
        return Ok(());
    }
    let name = app.name_any();
    let namespace = app.namespace().unwrap_or_default();
    let configmaps = Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace);
    match configmaps
        .delete(&desired::marker_name(&name), &DeleteParams::default())
        .await
    {
        Err(kube::Error::Api(status)) if status.is_not_found() => {}
        result => drop(result?),
    }
    let patch = Patch::Merge(desired::finalizers_patch(
        app,
        desired::without_finalizer(app),
    ));
    webapps
        .patch(&name, &Context::write_params(), &patch)
        .await?;
    tracing::info!("released WebApp {namespace}/{name}");
    Ok(())
}

/// Adds the finalizer when missing; returns the WebApp as it now stands.
async fn ensure_finalizer(app: Arc<WebApp>, webapps: &Api<WebApp>) -> Result<Arc<WebApp>, Error> {
    if desired::has_finalizer(&app) {
        return Ok(app);
    }
    let patch = Patch::Merge(desired::finalizers_patch(
        &app,
        desired::with_finalizer(&app),
    ));
    let patched = webapps
        .patch(&app.name_any(), &Context::write_params(), &patch)
        .await?;
    Ok(Arc::new(patched))
}

/// Creates the marker ConfigMap unless the store has it.
async fn ensure_marker(app: &WebApp, ctx: &Context) -> Result<(), Error> {
    let marker = desired::marker(app);
    let name = marker.name_any();
    let namespace = marker.namespace().unwrap_or_default();
    if ctx
        .markers
        .get(&ObjectRef::new(&name).within(&namespace))
        .is_some()
    {
        return Ok(());
    }
    let params = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    };
    match Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace)
        .create(&params, &marker)
        .await
    {
        Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
        result => result.map(drop).map_err(Error::from),
    }
}

/// Applies `desired` with force through server-side apply; returns the object as stored.
async fn apply<K>(desired: &K, ctx: &Context) -> Result<K, Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let namespace = desired.namespace().unwrap_or_default();
    let api = Api::<K>::namespaced(ctx.client.clone(), &namespace);
    let params = PatchParams::apply(MANAGER).force();
    Ok(api
        .patch(&desired.name_any(), &params, &Patch::Apply(desired))
        .await?)
}

/// Applies the Deployment when it is missing or drifted; returns the Deployment as it stands.
async fn ensure_deployment(
    app: &WebApp,
    desired: Deployment,
    ctx: &Context,
) -> Result<Arc<Deployment>, Error> {
    let current = ctx.deployments.get(&ObjectRef::from_obj(&desired));
    if let Some(current) = current.as_ref()
        && desired::deployment_matches(current, &desired)
    {
        return Ok(current.clone());
    }
    let applied = apply(&desired, ctx).await?;
    if current.is_none() {
        let event = Event {
            type_: EventType::Normal,
            reason: "Created".to_owned(),
            note: Some(format!(
                "Created Deployment {}/{}",
                desired.namespace().unwrap_or_default(),
                desired.name_any()
            )),
            action: "Created".to_owned(),
            secondary: None,
        };
        let recorder = ctx.recorder.clone();
        let regarding = app.object_ref(&());
        tokio::spawn(async move {
            if let Err(error) = recorder.publish(&event, &regarding).await {
                tracing::warn!("recording an event failed: {error}");
            }
        });
    }
    Ok(Arc::new(applied))
}

/// Applies the Service when it is missing or drifted.
async fn ensure_service(desired: Service, ctx: &Context) -> Result<(), Error> {
    let current = ctx.services.get(&ObjectRef::from_obj(&desired));
    if current.is_some_and(|current| desired::service_matches(&current, &desired)) {
        return Ok(());
    }
    apply(&desired, ctx).await.map(drop)
}

#[cfg(test)]
mod tests {
    use kube::runtime::reflector::store;

    use super::*;

    #[test]
    fn backoff_doubles_per_key_up_to_the_cap_and_resets() {
        // A client is needed only to build the context; it is never used.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = runtime.enter();
        let client = Client::try_from(config).unwrap();
        let ctx = Context::new(client, store().0, store().0, store().0);
        let shop = ObjectRef::<WebApp>::new("shop").within("prod");
        let delays: Vec<_> = (0..4).map(|_| ctx.backoff(shop.clone())).collect();
        assert_eq!(delays, [5, 10, 20, 40].map(Duration::from_millis));
        let other = ObjectRef::<WebApp>::new("other").within("prod");
        assert_eq!(ctx.backoff(other), BASE_DELAY);
        for _ in 0..40 {
            ctx.backoff(shop.clone());
        }
        assert_eq!(ctx.backoff(shop.clone()), MAX_DELAY);
        ctx.forget(&shop);
        assert_eq!(ctx.backoff(shop), BASE_DELAY);
    }
}
