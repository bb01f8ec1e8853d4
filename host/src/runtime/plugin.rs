//! Loading a plugin (checking, compiling, linking and asking it to `describe` itself) and
//! dispatching reconcile and map calls into it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::Component;

use crate::runtime::artifacts::Mapped;

use crate::runtime::SetClock;
use crate::runtime::bindings::{WIT_PACKAGE, WIT_VERSION, plugin, types};
use crate::runtime::budget::Budget;
use crate::runtime::compiler::WorkerError;
use crate::runtime::compiles::Asker;
use crate::runtime::engine::Reservation;
use crate::runtime::error::{DispatchError, RuntimeError, TrapKind};
use crate::runtime::handlers::describe_handlers;
use crate::runtime::host::{Grant, PluginContext};
use crate::runtime::instances::{InstanceMode, Instances, Linked};
use crate::runtime::memory::MemoryShare;
use crate::runtime::reserve::Claimant;
use crate::runtime::wrap::Wrap;
use crate::runtime::{Adopted, Runtime};
use wasmop_contract::Refusal;
use wasmop_contract::boundary;
use wasmop_contract::capability::{self, Power, Subject};
use wasmop_contract::environment::Environment;
use wasmop_contract::imports::{Observer, Services};
use wasmop_contract::limits::GuestLimits;
use wasmop_contract::object::{GroupVersionKind, ObjectKey};
use wasmop_contract::policy::{Asked, Ceiling};
use wasmop_contract::registration::Registration;
use wasmop_contract::{DEFAULT_WEBHOOK_TIMEOUT, FailurePolicy, WebhookRegistration};

/// The exports every reconciler component must have.
const EXPORTS: [&str; 3] = ["describe", "reconcile", "map"];

/// The reconcile timeout when neither the operator nor the plugin sets one.
const DEFAULT_RECONCILE_TIMEOUT: Duration = Duration::from_secs(60);

/// Per-plugin settings chosen by the operator (not by the plugin).
#[derive(Debug, Clone)]
pub struct PluginOptions {
    /// The cap on each of an instance's linear memories, in bytes.
    pub memory_limit: usize,
    /// Fresh or warm instances.
    pub mode: InstanceMode,
    /// The reconcile timeout, overriding the plugin's own (60 s when neither is set).
    pub reconcile_timeout: Option<Duration>,
    /// How many reconciles may run at once, overriding the plugin's own.
    pub max_concurrent_reconciles: Option<u32>,
    /// How long `describe` (and `describe-webhooks`) may take.
    pub describe_timeout: Duration,
    /// How long one validate, default or convert call may take.
    pub webhook_timeout: Duration,
    /// What the apiserver is told when a webhook call fails.
    pub failure_policy: FailurePolicy,
    /// What the plugin may make the host spend.
    pub limits: GuestLimits,
    /// The most instances the plugin may have at once; its workers, one for `map` and its warm
    /// pool when unset.
    pub max_instances: Option<u32>,
    /// A ceiling of this plugin's own (its `WasmReconciler`'s policy); it must fit this one as
    /// well as the runtime's.
    pub ceiling: Option<Ceiling>,
    /// The wall clock its guests read instead of the host's (offline tests set it).
    pub clock: Option<SetClock>,
    /// The arguments and environment variables its guests start with.
    pub environment: Environment,
    /// The source's own name, when the plugin will run as an identity of its own: it must
    /// declare that name (or the one the operator's policy maps the source to).
    pub identity: Option<String>,
    /// The name of the object a tenant installed it by (a `WasmReconciler` or
    /// `ClusterWasmReconciler`), `None` when the operator did (a `--plugin` file or the plugin
    /// directory): tenants share what the operator's own plugins leave, never take an operator
    /// plugin's name or identity, and are granted by name only as their object.
    pub tenant: Option<String>,
    /// The namespace of the namespaced `WasmReconciler` that installed it: its writes, events,
    /// owner references and identity stay there, and it has no webhooks or conversions.
    pub home: Option<String>,
    /// The trust its precompiled form was adopted on ([`Runtime::adopt`]), when it came with
    /// one: only that artifact, or one compiled here, is mapped for it.
    pub precompiled: Option<Adopted>,
    /// The shares of the version it replaces (an upgrade): counted as given back when it
    /// reserves its own, since the old version goes once it took over.
    pub replaces: Option<Shares>,
}

/// What a loaded plugin version holds of the instance pool and the guest memory budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shares {
    /// Instances of the pool.
    pub instances: usize,
    /// Bytes of the guest memory budget.
    pub memory: usize,
}

impl Default for PluginOptions {
    fn default() -> Self {
        PluginOptions {
            memory_limit: 64 << 20,
            mode: InstanceMode::Fresh,
            reconcile_timeout: None,
            max_concurrent_reconciles: None,
            describe_timeout: Duration::from_secs(5),
            webhook_timeout: DEFAULT_WEBHOOK_TIMEOUT,
            failure_policy: FailurePolicy::Fail,
            limits: GuestLimits::default(),
            max_instances: None,
            ceiling: None,
            clock: None,
            environment: Environment::default(),
            identity: None,
            tenant: None,
            home: None,
            replaces: None,
            precompiled: None,
        }
    }
}

/// What a successful reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Converged: forget the key until its next event.
    Done,
    /// Reconcile again after `after`, at `priority` (higher first) if given.
    RequeueAfter {
        /// The delay.
        after: Duration,
        /// The queue priority.
        priority: Option<i32>,
    },
}

/// The plugins loaded now, by name, as whoever loads them publishes them: what the webhook server
/// and the cache's warm-up follow, so a swap changes their answers at once.
pub type Live = tokio::sync::watch::Receiver<Arc<std::collections::BTreeMap<String, Arc<Plugin>>>>;

/// A loaded plugin version, ready to reconcile.
pub struct Plugin {
    file: PathBuf,
    registration: Arc<Registration>,
    pub(crate) webhooks: Option<WebhookRegistration>,
    pub(crate) context: Arc<PluginContext>,
    pub(crate) instances: Arc<Instances>,
    timeout: Duration,
    pub(crate) webhook_timeout: Duration,
    pub(crate) failure_policy: FailurePolicy,
    workers: u32,
    wrap: Option<Arc<dyn Wrap>>,
    share: Reservation,
}

/// What names the plugin in `file` before it declares its name: the file's stem.
fn stem(file: &Path) -> Arc<str> {
    file.file_stem()
        .map_or("plugin".into(), |s| s.to_string_lossy().into())
}

/// Who claims shares for a plugin loaded with `options`, counting `replaced` of the shares of
/// the version it replaces as given back.
fn claimant(options: &PluginOptions, replaced: impl Fn(Shares) -> usize) -> Claimant {
    let who = match options.tenant {
        Some(_) => Claimant::TENANT,
        None => Claimant::OPERATOR,
    };
    who.replacing(options.replaces.map_or(0, replaced))
}

/// Whose part of a resource a refusal speaks of: ` for tenants' plugins`, or nothing.
fn kept(tenant: bool) -> &'static str {
    match tenant {
        true => " for tenants' plugins",
        false => "",
    }
}

/// The bytes of the component in `file`.
async fn read(file: &Path) -> Result<Vec<u8>, RuntimeError> {
    tokio::fs::read(file)
        .await
        .map_err(|source| RuntimeError::Read {
            file: file.to_owned(),
            source,
        })
}

impl Runtime {
    /// Reads, checks, compiles and links the component in `file`, then calls its `describe`;
    /// `services` builds the host services its imports will call from what it declared.
    pub async fn load(
        &self,
        file: &Path,
        options: PluginOptions,
        services: impl FnOnce(&Registration) -> Services,
    ) -> Result<Plugin, RuntimeError> {
        self.load_bytes(file, read(file).await?, options, services)
            .await
    }

    /// Like [`Runtime::load`], for a component already in memory; `file` names it in errors.
    pub async fn load_bytes(
        &self,
        file: &Path,
        bytes: Vec<u8>,
        options: PluginOptions,
        services: impl FnOnce(&Registration) -> Services,
    ) -> Result<Plugin, RuntimeError> {
        let file = file.to_owned();
        if options.memory_limit > self.config.max_memory {
            return Err(RuntimeError::MemoryLimit {
                file,
                limit: options.memory_limit,
                max: self.config.max_memory,
            });
        }
        let memory = Arc::new(self.reserve_memory(&file, &options)?);
        let described = self.described(&file, bytes, &options, memory.clone());
        let (linked, registration, webhooks) = described.await?;
        let policies = self.policies(&options);
        let serves_webhooks = webhooks.is_some();
        let (asked, share) = self.admit(&file, &registration, &options, serves_webhooks)?;
        let subject = Subject {
            registration: Some(&registration),
            policies: &policies,
            // Its identity's reads were reviewed by whoever loads it; they are re-reviewed later.
            rights: None,
            tenant: options.tenant.as_deref(),
            home: options.home.as_deref(),
        };
        let identity = options.identity.as_deref().map(|source| Power::Identity {
            source,
            declared: &registration.name,
        });
        let implied =
            capability::implied(&registration, webhooks.as_ref(), options.home.as_deref());
        for power in identity.into_iter().chain(implied) {
            capability::check(subject, power).map_err(|why| RuntimeError::Refused {
                file: file.clone(),
                plugin: registration.name.clone(),
                reason: why.to_string(),
            })?;
        }

        let registration = Arc::new(registration);
        let services = services(&registration);
        let services = match &self.config.wrap {
            Some(wrap) => wrap.services(&registration.name, services),
            None => services,
        };
        let observer = services.observer.clone();
        let context = Arc::new(PluginContext {
            name: registration.name.as_str().into(),
            grant: Some(Grant {
                services,
                registration: registration.clone(),
                policies,
                tenant: options.tenant.clone(),
                home: options.home.clone(),
            }),
            memory_limit: options.memory_limit,
            budget: self.budget(&options, observer.clone()),
            limits: options.limits,
            observer,
            clock: options.clock,
            environment: options.environment,
        });
        let mode = (options.mode, asked.instances);
        let instances = Arc::new(Instances::new(self, linked, context.clone(), memory, mode));
        if let Some(suspender) = &self.suspender {
            suspender.watch(&instances);
        }
        Ok(Plugin {
            file,
            registration,
            webhooks,
            context,
            instances,
            timeout: asked.timeout,
            webhook_timeout: options.webhook_timeout,
            failure_policy: options.failure_policy,
            workers: asked.concurrency,
            wrap: self.config.wrap.clone(),
            share,
        })
    }

    /// What the component in `file` declares in its `describe()`, read without granting it
    /// anything: no services, no admission under a policy (`wasmop rbac`).
    pub async fn describe(&self, file: &Path) -> Result<Registration, RuntimeError> {
        let options = PluginOptions::default();
        let bytes = read(file).await?;
        let memory = Arc::new(MemoryShare::none(&self.guest_memory));
        Ok(self.described(file, bytes, &options, memory).await?.1)
    }

    /// Compiles and links the component `bytes` of `file` and calls its `describe` (and
    /// `describe-webhooks`) in an instance granted nothing, holding its memory in `memory`.
    async fn described(
        &self,
        file: &Path,
        bytes: Vec<u8>,
        options: &PluginOptions,
        memory: Arc<MemoryShare>,
    ) -> Result<(Linked, Registration, Option<WebhookRegistration>), RuntimeError> {
        let file = file.to_owned();
        if !wasmparser::Parser::is_component(&bytes) {
            let found = if wasmparser::Parser::is_core_wasm(&bytes) {
                "a core module"
            } else {
                "not WebAssembly"
            };
            return Err(RuntimeError::NotAComponent { file, found });
        }
        let asker = if options.tenant.is_some() {
            Asker::Tenant
        } else {
            Asker::Operator
        };
        let mapped = self
            .compile(&file, bytes, options.precompiled.clone(), asker)
            .await?;
        self.check_interface(&file, &mapped.component)?;
        let linked =
            Linked::link(&self.linker, mapped).map_err(|source| RuntimeError::Compile {
                file: file.clone(),
                source,
            })?;

        let name = stem(&file);
        let anonymous = PluginContext {
            name,
            grant: None,
            memory_limit: options.memory_limit,
            budget: Budget::new(&options.limits, Arc::new(())),
            limits: options.limits.clone(),
            observer: Arc::new(()),
            clock: options.clock.clone(),
            environment: options.environment.clone(),
        };
        let describing = Instances::new(
            self,
            linked.clone(),
            Arc::new(anonymous),
            memory,
            (InstanceMode::Fresh, 1),
        );
        let mut registration: Registration = describing
            .dispatch(
                &ObjectKey::default(),
                options.describe_timeout,
                |exports, store| Box::pin(exports.reconciler.call_describe(store)),
            )
            .await
            .map_err(|e| RuntimeError::Describe {
                file: file.clone(),
                reason: e.to_string(),
            })?
            .into();
        if linked.has_handlers() {
            registration.handled =
                describe_handlers(&file, &describing, options.describe_timeout).await?;
        }
        registration
            .validate()
            .map_err(|e| RuntimeError::Describe {
                file: file.clone(),
                reason: e.to_string(),
            })?;
        let webhooks = match linked.has_webhooks() {
            true => describe_webhooks(&file, &describing, options.describe_timeout).await?,
            false => None,
        };
        Ok((linked, registration, webhooks))
    }

    /// The policies over a plugin loaded with `options`: the operator's, then its own.
    fn policies(&self, options: &PluginOptions) -> Vec<Ceiling> {
        std::iter::once(&self.config.ceiling)
            .chain(&options.ceiling)
            .cloned()
            .collect()
    }

    /// The plugin's share of the guest memory budget (its memory limit), reserved before it
    /// describes itself, so its `describe` runs within it; refused when what it may reserve (a
    /// tenant's: outside the operator's reserve) has not that much left.
    fn reserve_memory(
        &self,
        file: &Path,
        options: &PluginOptions,
    ) -> Result<MemoryShare, RuntimeError> {
        let who = claimant(options, |shares| shares.memory);
        let asked = options.memory_limit;
        self.guest_memory.reserve(asked, who).ok_or_else(|| {
            let bound = self.guest_memory.bound();
            RuntimeError::Exhausted {
                file: file.to_owned(),
                plugin: stem(file).to_string(),
                reason: format!(
                    "asks for a share of {asked} bytes of the guest memory budget (its memory \
                     limit), but the budget of {} bytes has {} left unreserved{} ({} bytes of it \
                     kept for the operator's plugins; --guest-memory-budget, \
                     --operator-reserved-memory)",
                    bound.whole,
                    self.guest_memory.unreserved(who),
                    kept(options.tenant.is_some()),
                    bound.reserve,
                ),
            }
        })
    }

    /// The settings `registration` would run with under `options`, if the operator's ceiling
    /// admits them and the instance pool has room for its share.
    fn admit(
        &self,
        file: &Path,
        registration: &Registration,
        options: &PluginOptions,
        serves_webhooks: bool,
    ) -> Result<(Asked, Reservation), RuntimeError> {
        let concurrency = options
            .max_concurrent_reconciles
            .unwrap_or(registration.max_concurrent_reconciles)
            .max(1);
        let pool = match options.mode {
            InstanceMode::Fresh => 0,
            InstanceMode::Warm { pool, .. } => u32::try_from(pool).unwrap_or(u32::MAX),
        };
        let asked = Asked {
            concurrency,
            timeout: options
                .reconcile_timeout
                .or(registration.reconcile_timeout)
                .unwrap_or(DEFAULT_RECONCILE_TIMEOUT),
            memory: options.memory_limit,
            instances: options
                .max_instances
                .unwrap_or_else(|| concurrency.saturating_add(1).saturating_add(pool)),
            webhooks: serves_webhooks.then_some((options.webhook_timeout, options.failure_policy)),
        };
        let refused = |reason: String| RuntimeError::Refused {
            file: file.to_owned(),
            plugin: registration.name.clone(),
            reason,
        };
        let over = self.config.ceiling.admit(asked);
        over.map_err(|reason| refused(reason.to_string()))?;
        if let Some(own) = &options.ceiling {
            let own = own.admit(asked);
            own.map_err(|reason| refused(format!("{reason} (its WasmReconciler's policy)")))?;
        }
        let pool = claimant(options, |shares| shares.instances);
        let share = self.reserve(asked.instances, pool).ok_or_else(|| RuntimeError::Exhausted {
            file: file.to_owned(),
            plugin: registration.name.clone(),
            reason: format!(
                "asks for {} instances, but the instance pool of {} has {} left{} ({} of it kept \
                 for the operator's plugins; --operator-reserved-instances)",
                asked.instances,
                self.pool().whole,
                self.unreserved_instances(pool),
                kept(options.tenant.is_some()),
                self.pool().reserve,
            ),
        })?;
        Ok((asked, share))
    }

    /// A budget under `options`' limits; a tenant's also draws from the tenants' log bucket.
    fn budget(&self, options: &PluginOptions, observer: Arc<dyn Observer>) -> Budget {
        let budget = Budget::new(&options.limits, observer);
        if options.tenant.is_some() {
            budget.sharing_logs(self.tenant_logs.clone())
        } else {
            budget
        }
    }

    async fn compile(
        &self,
        file: &Path,
        bytes: Vec<u8>,
        adopted: Option<Adopted>,
        asker: Asker,
    ) -> Result<Arc<Mapped>, RuntimeError> {
        let compiler = self.compiler.clone();
        let compiled =
            tokio::task::spawn_blocking(move || compiler.compile(&bytes, adopted.as_ref(), asker))
                .await;
        let compiled =
            compiled.map_err(|e| wasmtime::Error::msg(format!("compiler thread failed: {e}")));
        compiled.and_then(|result| result).map_err(|source| {
            let file = file.to_owned();
            match source.downcast::<WorkerError>() {
                Ok(source) if source.is_resource() => RuntimeError::CompileKilled { file, source },
                Ok(worker) => RuntimeError::Compile {
                    file,
                    source: worker.into(),
                },
                Err(source) => RuntimeError::Compile { file, source },
            }
        })
    }

    fn check_interface(&self, file: &Path, component: &Component) -> Result<(), RuntimeError> {
        let ty = component.component_type();
        let prefix = format!("{WIT_PACKAGE}/");
        let names = ty
            .imports(&self.engine)
            .map(|(name, _)| name)
            .chain(ty.exports(&self.engine).map(|(name, _)| name));
        for name in names {
            let Some(version) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split_once('@'))
                .map(|(_, v)| v)
            else {
                continue;
            };
            if !compatible(version, WIT_VERSION) {
                return Err(RuntimeError::WitVersion {
                    file: file.to_owned(),
                    found: format!("{WIT_PACKAGE}@{version}"),
                    expected: format!("{WIT_PACKAGE}@{WIT_VERSION}"),
                });
            }
        }
        for export in EXPORTS {
            if ty.get_export(&self.engine, export).is_none() {
                return Err(RuntimeError::MissingExport {
                    file: file.to_owned(),
                    export,
                });
            }
        }
        Ok(())
    }
}

/// Asks a component that exports `webhooks` which it serves: `None` when it declares none.
async fn describe_webhooks(
    file: &Path,
    describing: &Instances,
    timeout: Duration,
) -> Result<Option<WebhookRegistration>, RuntimeError> {
    let refused = |reason: &dyn std::fmt::Display| RuntimeError::Describe {
        file: file.to_owned(),
        reason: format!("describe-webhooks: {reason}"),
    };
    let declared: WebhookRegistration = describing
        .dispatch(&ObjectKey::default(), timeout, |exports, store| {
            Box::pin(async move {
                match &exports.webhooks {
                    Some(guest) => guest.call_describe_webhooks(store).await,
                    None => Err(wasmtime::format_err!("no webhooks export")),
                }
            })
        })
        .await
        .map_err(|e| refused(&e))?
        .into();
    declared.validate().map_err(|e| refused(&e))?;
    Ok((!declared.is_empty()).then_some(declared))
}

/// Semver compatibility: the same major version, or for 0.x the same minor.
fn compatible(found: &str, ours: &str) -> bool {
    let parts = |v: &str| v.split('.').map(str::to_owned).collect::<Vec<_>>();
    let (found, ours) = (parts(found), parts(ours));
    let significant = if ours.first().is_some_and(|major| major == "0") {
        2
    } else {
        1
    };
    found.len() >= significant && found[..significant] == ours[..significant]
}

impl Plugin {
    /// What this version holds of the instance pool and the guest memory budget.
    pub fn shares(&self) -> Shares {
        Shares {
            instances: self.share.instances(),
            memory: self.instances.memory_reserved(),
        }
    }

    /// What the plugin declared.
    pub fn registration(&self) -> &Registration {
        &self.registration
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.registration.name
    }

    /// Whether a tenant installed it (a `WasmReconciler`), not the operator.
    pub fn by_tenant(&self) -> bool {
        self.context
            .grant
            .as_ref()
            .is_some_and(|g| g.tenant.is_some())
    }

    /// The file it was loaded from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The reconcile timeout in force.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How many reconciles may run at once.
    pub fn max_concurrent_reconciles(&self) -> u32 {
        self.workers
    }

    /// The largest linear memory any of its instances grew to, in bytes.
    pub fn memory_high_water(&self) -> usize {
        self.instances.memory_high_water()
    }

    /// How many instances were created so far, and the total time their instantiation took.
    pub fn instantiations(&self) -> (u64, Duration) {
        self.instances.instantiations()
    }

    /// How many warm instances wait in the pool (always 0 in fresh mode).
    pub fn idle_instances(&self) -> usize {
        self.instances.idle()
    }

    /// Whether the version is suspended now: idle, its code and instances given back until its
    /// next call.
    pub fn suspended(&self) -> bool {
        self.instances.code().suspended()
    }

    /// How many times the version woke from a suspension so far, and the time the wakes took.
    pub fn wakes(&self) -> (u64, Duration) {
        self.instances.code().wakes()
    }

    /// Reconciles one primary object, through the runtime's [`Wrap`] if it has one.
    pub async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, DispatchError> {
        self.reconcile_traced(key, None).await
    }

    /// Like [`Plugin::reconcile`], as reconcile `id`: the events the guest records carry it.
    pub async fn reconcile_as(&self, key: &ObjectKey, id: &str) -> Result<Outcome, DispatchError> {
        self.reconcile_traced(key, Some(id)).await
    }

    /// Reconciles `key` as reconcile `id`, through the runtime's [`Wrap`] if it has one.
    async fn reconcile_traced(
        &self,
        key: &ObjectKey,
        id: Option<&str>,
    ) -> Result<Outcome, DispatchError> {
        match &self.wrap {
            Some(wrap) => {
                let call = Box::pin(self.call_reconcile(key, id));
                wrap.reconcile(self.name(), key, call).await
            }
            None => self.call_reconcile(key, id).await,
        }
    }

    async fn call_reconcile(
        &self,
        key: &ObjectKey,
        id: Option<&str>,
    ) -> Result<Outcome, DispatchError> {
        let request = types::ObjectKey::from(key);
        let id = id.map(str::to_owned);
        let result = self
            .instances
            .dispatch(key, self.timeout, move |exports, store| {
                store.data_mut().reconcile_id = id;
                Box::pin(async move { exports.reconciler.call_reconcile(store, &request).await })
            })
            .await?;
        match result {
            Ok(plugin::Outcome::Done) => Ok(Outcome::Done),
            Ok(plugin::Outcome::RequeueAfter(requeue)) => Ok(Outcome::RequeueAfter {
                after: Duration::from_millis(requeue.after),
                priority: requeue.priority,
            }),
            Err(error) => {
                let (message, terminal) = match error {
                    plugin::ReconcileError::Retryable(message) => (message, false),
                    plugin::ReconcileError::Terminal(message) => (message, true),
                };
                // The message reaches the log (and an error anyone may print): cut like a
                // guest's log line.
                let message = boundary::truncated(message, self.context.limits.log_bytes);
                Err(DispatchError::Failed {
                    plugin: self.name().to_owned(),
                    key: key.clone(),
                    message,
                    terminal,
                })
            }
        }
    }

    /// Asks the guest which primary objects a changed object of a watched kind maps to. More
    /// keys than the plugin's limit, a key that is not a valid object key, or one outside the
    /// namespace it is confined to, fails the call.
    pub async fn map(
        &self,
        kind: &GroupVersionKind,
        object: &str,
        key: &ObjectKey,
    ) -> Result<Vec<ObjectKey>, DispatchError> {
        let (kind, object) = (types::Gvk::from(kind), object.to_owned());
        let keys = self
            .instances
            .dispatch(key, self.timeout, move |exports, store| {
                Box::pin(async move { exports.reconciler.call_map(store, &kind, &object).await })
            })
            .await?;
        self.checked_keys("map", keys, key)
    }

    /// The keys `export` returned for the object at `key`, if they are within the plugin's
    /// limit, valid object keys, and inside the namespace it is confined to.
    pub(crate) fn checked_keys(
        &self,
        export: &str,
        keys: Vec<types::ObjectKey>,
        key: &ObjectKey,
    ) -> Result<Vec<ObjectKey>, DispatchError> {
        let max = self.context.limits.map_keys;
        let refused = |message: String| {
            self.context.budget.refuse(Refusal::Invalid);
            DispatchError::Trapped {
                plugin: self.name().to_owned(),
                key: key.clone(),
                kind: TrapKind::Trap,
                message,
            }
        };
        if keys.len() > max {
            return Err(refused(format!(
                "{export} returned {} keys, over the limit of {max}",
                keys.len()
            )));
        }
        let keys: Vec<ObjectKey> = keys.into_iter().map(Into::into).collect();
        for mapped in &keys {
            boundary::namespace(&mapped.namespace)
                .and_then(|()| boundary::name(&mapped.name))
                .map_err(|reason| refused(format!("{export} returned an invalid key: {reason}")))?;
            if let Some(home) = self.home().filter(|home| *home != mapped.namespace) {
                return Err(refused(format!(
                    "{export} returned a key in namespace {:?}: its WasmReconciler confines it to {home}",
                    mapped.namespace
                )));
            }
        }
        Ok(keys)
    }

    /// How many of each refusal the plugin has met at its boundary so far.
    pub fn refusals(&self) -> [(Refusal, u64); Refusal::ALL.len()] {
        self.context.budget.refusals()
    }

    /// The delay a requeue the plugin asked for `after` gets under its requeue rate.
    pub fn requeue_delay(&self, after: Duration) -> Duration {
        self.context.budget.requeue_delay(after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wit_versions_are_compatible_within_a_semver_major() {
        assert!(compatible("0.1.0", "0.1.0"));
        assert!(compatible("0.1.7", "0.1.0"));
        assert!(!compatible("0.2.0", "0.1.0"));
        assert!(!compatible("2.0.0", "0.1.0"));
        assert!(compatible("1.4.0", "1.0.0"));
        assert!(!compatible("garbage", "0.1.0"));
    }
}
