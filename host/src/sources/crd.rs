//! The tenants' sources (`wasmop.dev/v1alpha1`), in the split Kubernetes users know from
//! cert-manager's `Issuer`/`ClusterIssuer`: a namespaced `WasmReconciler` is its namespace's —
//! it reads its module and pull secret only there, its plugin writes, records events and speaks
//! (in identity mode, as `wasmop-reconciler-<name>` of that namespace) only there and has no
//! webhooks or conversions, its source is `wasmreconciler/<namespace>/<name>`; a cluster-scoped
//! `ClusterWasmReconciler` reads modules where the operator's policy allows
//! (`modules.namespaces`), reaches what the policy grants, and its source is
//! `clusterwasmreconciler/<name>`. Each object names a module ([`ModuleRef`]), per-plugin
//! overrides and a policy narrowing the operator's ceiling for its plugin. Their plugins are
//! tenants': they never take a name the operator's own sources supply (one that does is unloaded,
//! and its object reconciled again to say `NameTaken`), nor one another tenant's plugin holds,
//! nor, in identity mode, an operator plugin's account.
//!
//! Every replica watches the objects and loads their modules, so followers stay warm; only the
//! replica that runs controllers writes the status: `Loaded` (a version is loaded), `Ready` (the
//! latest generation loaded), `Degraded` (why the latest generation did not: spec, a source the
//! operator's policy refuses, fetch, digest, compile memory, no room left for tenants in the
//! instance pool or the guest memory budget (`Exhausted`), load or take-over failure, with the
//! message, which `wasmop plugins` shows too as the source's last error beside the version still
//! running), the running version, digest and plugin name, and `observedGeneration`. A failed
//! generation is retried with a per-object exponential backoff (from [`RETRY_PERIOD`] up to
//! [`RETRY_LIMIT`]) while the running version stays. `paused: true` unloads the plugin until
//! unpaused. Deleting the object unloads the plugin, and so does a relist that no longer lists it.
//!
//! Each kind's objects are handled by a kube-runtime `Controller`: each object's reconcile runs
//! on a task of its own, one object has at most one reconcile in flight, and what arrives for it
//! meanwhile is reconciled from its latest state once that one ends. Installs (fetch, compile,
//! load) of both kinds take a slot of one install line ([`Installs`], `--max-concurrent-installs`)
//! first, so objects applied at once are fetched and compiled a few at a time, and the host's
//! memory stays bounded.
//!
//! The watcher reads each object nested at most [`MAX_DEPTH`] levels ([`Watched`]); a deeper one
//! (its `spec.policy` is free-form) is read as its name, uid, generation and status only and
//! fails its generation as `InvalidSpec`, so it never fails the list or the watch of the others.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{Controller, WatchStreamExt};
use serde::de::{self, MapAccess, Visitor};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::installs::{InstallGauges, Installs};
use crate::cache::dynamic_resource;
use crate::config::{PluginLimits, PluginOverrides, SettingError};
use crate::distribution::module::{ModuleError, ModuleRef};
use crate::distribution::oci::{OciError, Registries, Taken};
use crate::plugins::{PluginError, PluginHandle, PluginStatus, TENANT_SOURCE_PREFIX};
use crate::runtime::{Adopted, PluginOptions, RuntimeError};
use wasmop_contract::Ceiling;
use wasmop_contract::depth::{Bounded, MAX_DEPTH};
use wasmop_contract::environment::Environment;

/// How soon a generation that failed is first tried again (and how often a follower looks
/// whether it now speaks for the plugins).
pub const RETRY_PERIOD: Duration = Duration::from_secs(10);

/// The longest wait between tries of a failing generation.
pub const RETRY_LIMIT: Duration = Duration::from_secs(300);

/// The field manager of status writes.
const MANAGER: &str = "wasmop";

/// Which of the two kinds a [`Reconciler`] watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// `ClusterWasmReconciler`: cluster-scoped.
    Cluster,
    /// `WasmReconciler`: namespaced, confined to its namespace.
    Namespaced,
}

impl Scope {
    /// The kind's name.
    fn kind(self) -> &'static str {
        match self {
            Scope::Cluster => "ClusterWasmReconciler",
            Scope::Namespaced => "WasmReconciler",
        }
    }

    /// What the source names of the kind's plugins start with.
    fn prefix(self) -> &'static str {
        match self {
            Scope::Cluster => "clusterwasmreconciler/",
            Scope::Namespaced => TENANT_SOURCE_PREFIX,
        }
    }

    fn resource(self) -> ApiResource {
        let kind = GroupVersionKind::gvk("wasmop.dev", "v1alpha1", self.kind());
        let plural = format!("{}s", self.kind().to_ascii_lowercase());
        ApiResource::from_gvk_with_plural(&kind, &plural)
    }
}

/// `spec` of a WasmReconciler or ClusterWasmReconciler.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    module: ModuleRef,
    #[serde(default)]
    paused: bool,
    /// A ceiling of this plugin's own, narrowing the operator's `--policy`.
    policy: Option<Value>,
    /// The plugin's overrides of the operator's limits ([`crate::config::OVERRIDES`]), by the
    /// CRD's field names.
    #[serde(flatten)]
    overrides: serde_json::Map<String, Value>,
}

/// How the last attempt at an object's generation went.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Loaded, pinned by the digest `pinned`; with why its registry could not be reached, when
    /// it came from the copy pulled before.
    Installed {
        pinned: String,
        unreachable: Option<String>,
    },
    Paused,
    Failed {
        reason: &'static str,
        message: String,
    },
}

/// What was last done for one object (by uid and generation).
struct Handled {
    uid: Option<String>,
    generation: Option<i64>,
    outcome: Outcome,
    /// The digest that pinned the version loaded now, which a later generation that failed to
    /// load leaves in place.
    pinned: Option<String>,
    reported: bool,
    failures: u32,
    retry_at: Option<Instant>,
}

impl Handled {
    fn of(&self, object: &DynamicObject) -> bool {
        self.uid == object.metadata.uid && self.generation == object.metadata.generation
    }
}

/// Why an object's reconcile did not finish.
#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    /// Its generation did not load.
    #[error("{reason}: {message}")]
    Failed {
        reason: &'static str,
        message: String,
    },
    /// Its status could not be written.
    #[error("writing the status failed: {0}")]
    Status(#[source] kube::Error),
}

/// Watches WasmReconcilers and ClusterWasmReconcilers and keeps the manager's plugins in step
/// with them.
pub struct WasmReconcilers {
    kinds: [Arc<Reconciler>; 2],
    installs: Arc<Installs>,
}

/// What every reconcile of one kind shares.
struct Reconciler {
    scope: Scope,
    resource: ApiResource,
    installer: Installer,
    plugins: PluginHandle,
    /// What was last done for each object, by its key ([`key`]).
    handled: Mutex<HashMap<String, Handled>>,
}

/// What an install needs: it fetches, compiles and installs one object's module.
#[derive(Clone)]
struct Installer {
    client: kube::Client,
    plugins: PluginHandle,
    limits: PluginLimits,
    /// The operator's policy, which says where modules may be read from.
    ceiling: Ceiling,
    /// How registries are reached.
    registries: Registries,
    /// The slots installs of both kinds run in.
    installs: Arc<Installs>,
}

impl WasmReconcilers {
    /// A source installing through `plugins`, with `limits` as the defaults spec overrides,
    /// reading modules only from where the operator's `ceiling` allows, reaching registries as
    /// `registries` says, running at most `max_installs` installs at once.
    pub fn new(
        client: kube::Client,
        plugins: PluginHandle,
        limits: PluginLimits,
        ceiling: Ceiling,
        registries: Registries,
        max_installs: usize,
    ) -> Self {
        let installs = Arc::new(Installs::new(max_installs));
        let installer = Installer {
            client,
            plugins: plugins.clone(),
            limits,
            ceiling,
            registries,
            installs: installs.clone(),
        };
        let kind = |scope: Scope| {
            Arc::new(Reconciler {
                scope,
                resource: scope.resource(),
                installer: installer.clone(),
                plugins: plugins.clone(),
                handled: Mutex::default(),
            })
        };
        WasmReconcilers {
            kinds: [kind(Scope::Namespaced), kind(Scope::Cluster)],
            installs,
        }
    }

    /// Gauges of the install line, for the metrics registry.
    pub fn install_gauges(&self) -> InstallGauges {
        InstallGauges::new(self.installs.clone())
    }

    /// Runs until dropped: both kinds' controllers.
    pub async fn run(self) {
        let [namespaced, cluster] = self.kinds;
        futures::future::join(namespaced.run(), cluster.run()).await;
    }
}

impl Reconciler {
    /// Runs until dropped: the controller, and the unloading of objects that are gone.
    async fn run(self: Arc<Self>) {
        let api: Api<Watched> = Api::all_with(self.installer.client.clone(), &self.resource);
        let writer = reflector::store::Writer::new(self.resource.clone());
        let store = writer.as_reader();
        let relisted = Arc::new(Notify::new());
        let relist = relisted.clone();
        let events = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .inspect(move |event| {
                if matches!(event, Ok(Event::InitDone)) {
                    relist.notify_one();
                }
            })
            .touched_objects();
        let (context, reader) = (self.clone(), store.clone());
        let unloaded = futures::stream::unfold(
            (self.plugins.status_view(), self.clone()),
            |(mut statuses, context)| async move {
                loop {
                    if !statuses.changed().await {
                        return None;
                    }
                    if context.forget_unloaded() {
                        return Some(((), (statuses, context)));
                    }
                }
            },
        );
        let results = Controller::for_stream_with(events, store.clone(), self.resource.clone())
            .reconcile_all_on(unloaded)
            .run(reconcile, error_policy, self.clone())
            .for_each_concurrent(None, move |result| {
                handle(context.clone(), reader.clone(), result)
            });
        let sweeps = async {
            loop {
                relisted.notified().await;
                self.sweep(&store).await;
            }
        };
        futures::future::join(results, sweeps).await;
    }
}

/// What a reconcile's `result` asks for: a gone object's plugin unloaded, an error logged.
async fn handle(
    context: Arc<Reconciler>,
    store: Store<Watched>,
    result: Result<(ObjectRef<Watched>, Action), Failure>,
) {
    match result {
        Ok(_) => {}
        Err(controller::Error::ObjectNotFound(gone)) => {
            let key = key_of(gone.namespace.as_deref(), &gone.name);
            context.unload_if_gone(&store, &key).await
        }
        Err(error) => tracing::warn!("{}: {error}", context.scope.kind()),
    }
}

/// What kube-runtime's controller reports a reconcile failed with.
type Failure = controller::Error<ReconcileError, watcher::Error>;

/// Installs (or pauses) an object's latest generation once, retries a failed one when its
/// backoff allows, and reports the outcome when this replica speaks for the plugins.
async fn reconcile(
    watched: Arc<Watched>,
    context: Arc<Reconciler>,
) -> Result<Action, ReconcileError> {
    let object = &watched.object;
    let name = key(object);
    let waiting = context.with(&name, |handled| match handled {
        Some(h) if h.of(object) => Some(h.retry_at.filter(|at| *at > Instant::now())),
        _ => None,
    });
    let redo = match waiting {
        None => true,
        Some(Some(at)) => return Ok(Action::requeue(at - Instant::now())),
        Some(None) => context.with(&name, |h| {
            h.is_some_and(|h| matches!(h.outcome, Outcome::Failed { .. }))
        }),
    };
    if redo {
        let source = context.source(&name);
        let outcome = context.installer.install(&source, &watched).await;
        context.record(&name, object, outcome);
    }
    context.report(&name, object).await?;
    let outcome = context.with(&name, |h| h.map(|h| h.outcome.clone()));
    if let Some(Outcome::Failed { reason, message }) = outcome {
        return Err(ReconcileError::Failed { reason, message });
    }
    match context.plugins.leading() {
        true => Ok(Action::await_change()),
        false => Ok(Action::requeue(RETRY_PERIOD)),
    }
}

/// A per-object exponential backoff: [`RETRY_PERIOD`] doubling up to [`RETRY_LIMIT`].
fn error_policy(watched: Arc<Watched>, error: &ReconcileError, context: Arc<Reconciler>) -> Action {
    let name = key(&watched.object);
    let delay = context.with(&name, |handled| {
        let handled = handled?;
        handled.failures = handled.failures.saturating_add(1);
        let delay = RETRY_PERIOD
            .saturating_mul(1 << handled.failures.saturating_sub(1).min(16))
            .min(RETRY_LIMIT);
        handled.retry_at = Some(Instant::now() + delay);
        Some(delay)
    });
    let delay = delay.unwrap_or(RETRY_PERIOD);
    tracing::warn!(kind = context.scope.kind(), object = %name, retry_in = ?delay, "{error}");
    Action::requeue(delay)
}

impl Reconciler {
    /// The source name of the plugin of the object keyed `name`.
    fn source(&self, name: &str) -> String {
        format!("{}{name}", self.scope.prefix())
    }

    /// The keys of the objects whose plugins the manager lists, with their statuses.
    fn listed(&self) -> Vec<(String, PluginStatus)> {
        let prefix = self.scope.prefix();
        self.plugins
            .statuses()
            .into_iter()
            .filter_map(|status| {
                let name = status.source.strip_prefix(prefix)?.to_owned();
                Some((name, status))
            })
            .collect()
    }

    fn with<T>(&self, name: &str, f: impl FnOnce(Option<&mut Handled>) -> T) -> T {
        let mut handled = self.handled.lock().unwrap_or_else(|e| e.into_inner());
        f(handled.get_mut(name))
    }

    /// Remembers `outcome` for `object`'s generation; failures of one generation accumulate.
    fn record(&self, name: &str, object: &DynamicObject, outcome: Outcome) {
        let mut handled = self.handled.lock().unwrap_or_else(|e| e.into_inner());
        let previous = handled.get(name).filter(|h| h.uid == object.metadata.uid);
        let failures = match previous {
            Some(previous) if previous.of(object) => previous.failures,
            _ => 0,
        };
        let failures = match outcome {
            Outcome::Failed { .. } => failures,
            _ => 0,
        };
        let pinned = match &outcome {
            Outcome::Installed { pinned, .. } => Some(pinned.clone()),
            Outcome::Paused => None,
            Outcome::Failed { .. } => previous.and_then(|h| h.pinned.clone()),
        };
        handled.insert(
            name.to_owned(),
            Handled {
                uid: object.metadata.uid.clone(),
                generation: object.metadata.generation,
                outcome,
                pinned,
                reported: false,
                failures,
                retry_at: None,
            },
        );
    }

    /// Forgets what was done for every object whose installed plugin is no longer loaded (the
    /// operator's own source took its name), so its next reconcile installs it again and reports
    /// why it cannot; whether there was any.
    fn forget_unloaded(&self) -> bool {
        let unloaded: Vec<String> = self
            .listed()
            .into_iter()
            .filter(|(_, status)| status.digest.is_none() && status.last_error.is_some())
            .map(|(name, _)| name)
            .collect();
        let mut handled = self.handled.lock().unwrap_or_else(|e| e.into_inner());
        let before = handled.len();
        handled.retain(|name, h| {
            !(unloaded.contains(name) && matches!(h.outcome, Outcome::Installed { .. }))
        });
        handled.len() != before
    }

    /// Unloads the plugin of the object keyed `name`, and lets go of what it pulled, unless the
    /// object is back in `store`.
    async fn unload_if_gone(&self, store: &Store<Watched>, name: &str) {
        let reference = match name.split_once('/') {
            Some((namespace, name)) => {
                ObjectRef::new_with(name, self.resource.clone()).within(namespace)
            }
            None => ObjectRef::new_with(name, self.resource.clone()),
        };
        if store.get(&reference).is_some() {
            return;
        }
        self.handled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        let source = self.source(name);
        if let Some(store) = &self.installer.registries.store {
            store.release(&source).await;
        }
        if let Ok(true) = self.plugins.remove(&source).await {
            tracing::info!(
                kind = self.scope.kind(),
                object = name,
                "the object is gone: its plugin is unloaded"
            );
        }
    }

    /// Unloads the plugins of objects a completed relist no longer lists.
    async fn sweep(&self, store: &Store<Watched>) {
        for (name, _) in self.listed() {
            self.unload_if_gone(store, &name).await;
        }
    }

    /// Writes the status of the object keyed `name` if this replica speaks for the plugins and
    /// has not yet.
    async fn report(&self, name: &str, object: &DynamicObject) -> Result<(), ReconcileError> {
        if !self.plugins.leading() {
            return Ok(());
        }
        let outcome = self.with(name, |h| {
            h.filter(|h| !h.reported)
                .map(|h| (h.outcome.clone(), h.pinned.clone()))
        });
        let Some((outcome, pinned)) = outcome else {
            return Ok(());
        };
        let statuses = self.plugins.statuses();
        let plugin = statuses.iter().find(|s| s.source == self.source(name));
        let patch = json!({ "status": status(object, &outcome, plugin, pinned) });
        let params = PatchParams {
            field_manager: Some(MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let client = self.installer.client.clone();
        // Read back as a [`Watched`]: the object may nest deeper than a parser reads.
        let api: Api<Watched> = match &object.metadata.namespace {
            Some(namespace) => Api::namespaced_with(client, namespace, &self.resource),
            None => Api::all_with(client, &self.resource),
        };
        let object_name = object.metadata.name.as_deref().unwrap_or_default();
        api.patch_status(object_name, &params, &Patch::Merge(&patch))
            .await
            .map_err(ReconcileError::Status)?;
        self.with(name, |h| {
            if let Some(h) = h {
                h.reported = true;
            }
        });
        Ok(())
    }
}

impl Installer {
    /// Installs (or pauses) `watched`'s generation. A failure is also recorded as its source's
    /// last error, which `wasmop plugins` shows beside the version still running, and counted
    /// by its reason.
    async fn install(&self, source: &str, watched: &Watched) -> Outcome {
        let outcome = self.attempt(source, watched).await;
        if let Outcome::Failed { reason, .. } = &outcome {
            self.installs.failed(reason);
        }
        outcome
    }

    /// One install of `watched`'s generation, in its turn of the install line.
    async fn attempt(&self, source: &str, watched: &Watched) -> Outcome {
        let _slot = self.installs.slot().await;
        let module = match self.module(source, watched).await {
            Ok(Some(module)) => module,
            Ok(None) => return Outcome::Paused,
            Err((reason, message)) => {
                let _ = self
                    .plugins
                    .failed(source, format!("{reason}: {message}"))
                    .await;
                return failed(reason, message);
            }
        };
        // The manager records what goes wrong from here as the source's last error.
        let file = PathBuf::from(format!("{source}.wasm"));
        let Module {
            bytes,
            options,
            unreachable,
            pinned,
        } = module;
        match self.plugins.install(source, &file, bytes, options).await {
            Ok(_) => Outcome::Installed {
                pinned,
                unreachable,
            },
            Err(error @ PluginError::Forbidden { .. }) => failed("Forbidden", error.to_string()),
            Err(error @ PluginError::NameTaken { .. }) => failed("NameTaken", error.to_string()),
            Err(error @ PluginError::Load(RuntimeError::CompileKilled { .. })) => {
                failed("CompileKilled", error.to_string())
            }
            Err(error @ PluginError::Load(RuntimeError::Exhausted { .. })) => {
                failed("Exhausted", error.to_string())
            }
            Err(error) => failed("LoadFailed", error.to_string()),
        }
    }

    /// The module `watched`'s spec names, fetched and checked against its pin, with the options
    /// to load it with; `None` when paused (its plugin is then unloaded); the reason and message
    /// of the failure when there is none to load.
    async fn module(
        &self,
        source: &str,
        watched: &Watched,
    ) -> Result<Option<Module>, (&'static str, String)> {
        if watched.too_deep {
            let message = format!("the object is nested deeper than {MAX_DEPTH} levels");
            return Err(("InvalidSpec", message));
        }
        let mut spec: Spec = serde_json::from_value(watched.object.data["spec"].clone())
            .map_err(|error| ("InvalidSpec", format!("spec: {error}")))?;
        let home = watched.object.metadata.namespace.as_deref();
        if let Some(home) = home {
            spec.module = spec.module.at_home(home);
        }
        if spec.paused {
            let _ = self.plugins.remove(source).await;
            return Ok(None);
        }
        let (limits, environment) = self
            .limits_for(&spec)
            .map_err(|error| ("InvalidSpec", error.to_string()))?;
        let fetched = spec
            .module
            .fetch(&self.client, &self.ceiling, &self.registries, home);
        let (bytes, adopted, unreachable, pinned) = match fetched.await {
            Ok(fetched) => {
                if let Some(key) = &fetched.signed_by {
                    tracing::info!(source, key = %key, "the module's signature verifies");
                }
                if let Some(store) = &self.registries.store {
                    match &fetched.held {
                        Some(held) => store.hold(source, held).await,
                        None => store.release(source).await,
                    }
                }
                let adopted = match fetched.precompiled {
                    Some(taken) => Some(self.adopt(source, taken).await),
                    None => None,
                };
                (fetched.bytes, adopted, fetched.unreachable, fetched.pinned)
            }
            Err(
                error @ (ModuleError::Digest
                | ModuleError::Oci {
                    source: OciError::Digest { .. },
                    ..
                }),
            ) => return Err(("DigestMismatch", error.to_string())),
            Err(
                error @ (ModuleError::Namespace { .. }
                | ModuleError::Confined { .. }
                | ModuleError::Address { .. }
                | ModuleError::Oci {
                    source: OciError::Refused(_),
                    ..
                }),
            ) => {
                return Err(("SourceRefused", error.to_string()));
            }
            Err(
                error @ ModuleError::Oci {
                    source: OciError::TagMoved(_),
                    ..
                },
            ) => return Err(("TagMoved", error.to_string())),
            Err(
                error @ (ModuleError::Unsigned(_)
                | ModuleError::Oci {
                    source: OciError::Unsigned { .. },
                    ..
                }),
            ) => return Err(("Unsigned", error.to_string())),
            Err(
                error @ ModuleError::Oci {
                    source: OciError::Untrusted { .. },
                    ..
                },
            ) => return Err(("UntrustedSignature", error.to_string())),
            Err(
                error @ (ModuleError::TooLarge { .. }
                | ModuleError::Oci {
                    source: OciError::TooLarge(..),
                    ..
                }),
            ) => return Err(("ModuleTooLarge", error.to_string())),
            Err(error @ ModuleError::Verify(_)) => return Err(("InvalidSpec", error.to_string())),
            Err(error @ ModuleError::Invalid(_)) => {
                return Err(("InvalidSpec", error.to_string()));
            }
            Err(error) => return Err(("FetchFailed", error.to_string())),
        };
        let mut options = crate::plugins::options(&limits, &environment);
        options.tenant = watched.object.metadata.name.clone();
        options.home = home.map(str::to_owned);
        options.precompiled = adopted;
        if let Some(policy) = &spec.policy {
            let ceiling = crate::config::narrowing(policy)
                .map_err(|message| ("InvalidSpec", format!("spec.policy: {message}")))?;
            options.ceiling = Some(ceiling);
        }
        Ok(Some(Module {
            bytes,
            options,
            unreachable,
            pinned,
        }))
    }

    /// Gives the runtime the module's signed precompiled form under all that `source` trusted
    /// in taking it, so loading it with that trust compiles nothing; a failure to keep it costs
    /// a compile.
    async fn adopt(&self, source: &str, taken: Taken) -> Adopted {
        let adopted = Adopted::new(source, &taken.trusted);
        match self.plugins.runtime().adopt(&adopted, taken.file).await {
            Ok(()) => tracing::info!(source, "using the module's signed precompiled layer"),
            Err(error) => tracing::warn!(source, "keeping the precompiled layer: {error}"),
        }
        adopted
    }

    /// The limits and the environment `spec` gives its plugin.
    fn limits_for(&self, spec: &Spec) -> Result<(PluginLimits, Environment), SettingError> {
        let mut limits = self.limits.clone();
        let overrides = PluginOverrides::from_spec(&spec.overrides)?;
        overrides.apply(&mut limits);
        Ok((limits, overrides.environment().clone()))
    }
}

/// A WasmReconciler as the watcher reads it: the object with the metadata this source uses (name,
/// uid, generation, resourceVersion), every other member nested at most [`MAX_DEPTH`] levels with
/// the object around it; or, for a deeper object, `too_deep`, that metadata and its status.
#[derive(Debug, Clone)]
struct Watched {
    object: DynamicObject,
    too_deep: bool,
}

/// The metadata this source reads; every other field (managedFields among them, which mirrors the
/// object's depth) is skipped without recursion.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    generation: Option<i64>,
    resource_version: Option<String>,
}

impl<'de> serde::Deserialize<'de> for Watched {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(WatchedVisitor)
    }
}

/// Reads a [`Watched`] member by member.
struct WatchedVisitor;

impl<'de> Visitor<'de> for WatchedVisitor {
    type Value = Watched;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a WasmReconciler")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Watched, A::Error> {
        let (mut metadata, mut data, mut too_deep) = (None, serde_json::Map::new(), false);
        while let Some(key) = map.next_key::<String>()? {
            if key == "metadata" {
                metadata = Some(map.next_value::<Metadata>()?);
                continue;
            }
            // The object is one level; what it holds may nest the rest.
            match map.next_value_seed(Bounded {
                room: MAX_DEPTH - 1,
            })? {
                Some(value) => {
                    data.insert(key, value);
                }
                None => too_deep = true,
            }
        }
        let metadata = metadata.ok_or_else(|| de::Error::missing_field("metadata"))?;
        if too_deep {
            // Nothing of the spec is read; the status (the host's own, within the bound when it
            // is read) keeps its conditions' transition times.
            data.retain(|key, _| matches!(key.as_str(), "apiVersion" | "kind" | "status"));
        }
        let object = DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: metadata.name,
                namespace: metadata.namespace,
                uid: metadata.uid,
                generation: metadata.generation,
                resource_version: metadata.resource_version,
                ..ObjectMeta::default()
            },
            data: Value::Object(data),
        };
        Ok(Watched { object, too_deep })
    }
}

dynamic_resource!(Watched, object.metadata);

fn failed(reason: &'static str, message: String) -> Outcome {
    Outcome::Failed { reason, message }
}

/// A module fetched and checked against its pin, with the options to load it with.
struct Module {
    bytes: Vec<u8>,
    options: PluginOptions,
    /// Why the registry could not be reached, when it is the copy pulled before.
    unreachable: Option<String>,
    /// The digest that pinned it.
    pinned: String,
}

/// The key of `object` among its kind's: `<namespace>/<name>`, or `<name>` when cluster-scoped.
fn key(object: &DynamicObject) -> String {
    let name = object.metadata.name.as_deref().unwrap_or_default();
    key_of(object.metadata.namespace.as_deref(), name)
}

/// The key of the object `name` in `namespace` (none: cluster-scoped).
fn key_of(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

/// The status for `object` after `outcome`, with the running plugin `plugin`, if any, and the
/// digest that `pinned` it.
fn status(
    object: &DynamicObject,
    outcome: &Outcome,
    plugin: Option<&PluginStatus>,
    pinned: Option<String>,
) -> Value {
    let generation = object.metadata.generation;
    let loaded = plugin.is_some_and(|p| p.version.is_some());
    let previous = object.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let condition = |kind: &str, on: bool, reason: &str, message: &str| {
        let state = if on { "True" } else { "False" };
        let unchanged = previous
            .iter()
            .find(|c| c["type"] == kind && c["status"] == state)
            .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned));
        json!({
            "type": kind, "status": state, "reason": reason, "message": message,
            "observedGeneration": generation,
            "lastTransitionTime": unchanged.unwrap_or_else(now),
        })
    };
    let (ready, degraded) = match outcome {
        Outcome::Installed {
            unreachable: None, ..
        } => (
            condition("Ready", true, "Loaded", "the latest generation is loaded"),
            condition("Degraded", false, "Loaded", ""),
        ),
        Outcome::Installed {
            unreachable: Some(unreachable),
            ..
        } => (
            condition(
                "Ready",
                true,
                "Loaded",
                &format!(
                    "the latest generation is loaded, from the copy pulled before: {unreachable}"
                ),
            ),
            condition("Degraded", false, "Loaded", ""),
        ),
        Outcome::Paused => (
            condition(
                "Ready",
                false,
                "Paused",
                "spec.paused is true: the plugin is unloaded",
            ),
            condition("Degraded", false, "Paused", ""),
        ),
        Outcome::Failed { reason, message } => (
            condition("Ready", false, reason, "the latest generation did not load"),
            condition("Degraded", true, reason, message),
        ),
    };
    let loaded_message = match loaded {
        true => "a version of the plugin is loaded",
        false => "no version of the plugin is loaded",
    };
    json!({
        "observedGeneration": generation,
        "name": plugin.and_then(|p| p.name.clone()),
        "version": plugin.and_then(|p| p.version.clone()),
        "digest": plugin.and_then(|p| p.digest.clone()),
        "pinned": pinned.filter(|_| loaded),
        "conditions": [
            condition("Loaded", loaded, if loaded { "Loaded" } else { "NotLoaded" }, loaded_message),
            ready,
            degraded,
        ],
    })
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use kube::core::Resource;

    use super::*;
    use wasmop_contract::depth::nested;

    fn object(name: &str, policy: &str) -> String {
        format!(
            r#"{{"apiVersion":"wasmop.dev/v1alpha1","kind":"WasmReconciler","metadata":{{"name":"{name}",
            "uid":"u-{name}","generation":2,"resourceVersion":"7","managedFields":[{{"fieldsV1":{policy}}}]}},
            "spec":{{"module":{{}},"policy":{policy}}},"status":{{"observedGeneration":1}}}}"#
        )
    }

    #[test]
    fn a_deep_wasmreconciler_is_read_as_its_metadata_and_never_fails_the_list() {
        let page = format!(
            r#"{{"kind":"List","apiVersion":"v1","metadata":{{}},"items":[{},{}]}}"#,
            object("deep", &nested(300)),
            object("fine", r#"{"kinds":["v1/ConfigMap"]}"#),
        );
        let list: kube::core::ObjectList<Watched> = serde_json::from_str(&page).unwrap();
        let [deep, fine] = &list.items[..] else {
            panic!("two items");
        };
        assert!(deep.too_deep);
        let meta = &deep.object.metadata;
        assert_eq!(
            (meta.name.as_deref(), meta.uid.as_deref(), meta.generation),
            (Some("deep"), Some("u-deep"), Some(2))
        );
        assert_eq!(deep.object.data.get("spec"), None);
        assert_eq!(deep.object.data["status"]["observedGeneration"], 1);
        assert!(!fine.too_deep);
        assert_eq!(
            fine.object.data["spec"]["policy"]["kinds"][0],
            "v1/ConfigMap"
        );
        assert_eq!(fine.object.data["status"]["observedGeneration"], 1);
        assert_eq!(fine.meta().resource_version.as_deref(), Some("7"));
    }
}
