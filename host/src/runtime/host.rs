//! The state of one guest instance's store and the host side of its imports. Every call passes
//! the guest boundary ([`super::boundary`]) first: its strings are validated, the request is built
//! once from them, the plugin's declared permissions are checked on that request, and exactly that
//! request goes to the services, within the plugin's budget ([`super::budget`]). Failures come
//! back as the WIT `error` variant.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::runtime::SetClock;
use crate::runtime::bindings::{cache, client, events, log, plugin, types};
use crate::runtime::budget::Budget;
use crate::runtime::clock::HostClock;
use crate::runtime::memory::{Held, MemoryShare};
use crate::runtime::output::{GuestOutput, Stream};
use wasmop_contract::Refusal;
use wasmop_contract::boundary::{self, MAX_SHORT_TEXT, PatchText, invalid};
use wasmop_contract::capability::{self, Power, Subject};
use wasmop_contract::environment::Environment;
use wasmop_contract::imports::{
    ApiError, ApiErrorKind, DeleteOptions, DeniedBy, Event, EventType, ListOptions, Observer,
    Propagation, Services, Write,
};
use wasmop_contract::limits::GuestLimits;
use wasmop_contract::object::{GroupVersionKind, ObjectKey, ObjectRef};
use wasmop_contract::owners;
use wasmop_contract::policy::Ceiling;
use wasmop_contract::registration::{Registration, Verb};
use wasmop_contract::selector::{FieldSelector, LabelSelector};

/// WASI resources (streams, pollables) one instance may hold at once.
const MAX_WASI_RESOURCES: usize = 1024;
/// The longest selector requirement: a qualified label key (317 bytes), an operator and a value
/// (63), with room for spaces and set syntax; a selector is refused before it is parsed when it is
/// longer than its allowed requirements could be.
const MAX_REQUIREMENT_BYTES: usize = 512;
/// The longest event reason events.k8s.io/v1 accepts.
const MAX_EVENT_REASON: usize = 128;

/// What every instance of one plugin version shares.
pub(crate) struct PluginContext {
    /// The plugin's name (its file name until `describe` has answered).
    pub name: Arc<str>,
    /// What the plugin may use, once `describe` has answered; before that every import is refused.
    pub grant: Option<Grant>,
    /// The per-instance memory cap in bytes.
    pub memory_limit: usize,
    /// What the plugin may make the host spend.
    pub limits: GuestLimits,
    /// Its rates and refusal counts.
    pub budget: Budget,
    /// Who hears its counts.
    pub observer: Arc<dyn Observer>,
    /// The wall clock its guests read, when not the host's.
    pub clock: Option<SetClock>,
    /// The arguments and environment variables its guests start with.
    pub environment: Environment,
}

/// A described plugin's registration, the policies over it and the services its imports call.
pub(crate) struct Grant {
    pub registration: Arc<Registration>,
    /// The operator's policy, then the plugin's own if it has one.
    pub policies: Vec<Ceiling>,
    pub services: Services,
    /// The name of the object a tenant installed it by, if a tenant did.
    pub tenant: Option<String>,
    /// The namespace its namespaced `WasmReconciler` confines it to.
    pub home: Option<String>,
}

impl Grant {
    /// The plugin as the capability check sees it.
    pub(crate) fn subject(&self) -> Subject<'_> {
        Subject {
            registration: Some(&self.registration),
            policies: &self.policies,
            rights: self.services.rights.as_deref(),
            tenant: self.tenant.as_deref(),
            home: self.home.as_deref(),
        }
    }
}

/// The data of one guest store.
pub(crate) struct StoreState {
    pub context: Arc<PluginContext>,
    pub limiter: MemoryLimiter,
    /// When the current call must stop; checked on every epoch tick.
    pub deadline: Instant,
    pub stderr: GuestOutput,
    /// Whether the current call may only read (a webhook call).
    pub read_only: bool,
    /// The id of the reconcile the current call is, if it is one; its events carry it.
    pub reconcile_id: Option<String>,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl StoreState {
    /// A fresh store state: WASI with nothing granted but stdout and stderr into the log, the
    /// plugin's name as the program's name (`argv[0]`, which language runtimes read: Go's klog,
    /// pulled in by client-go, indexes it at start-up), then its configured arguments, and its
    /// configured environment.
    pub fn new(context: Arc<PluginContext>, share: Arc<MemoryShare>) -> Self {
        let stderr = GuestOutput::new(context.name.clone(), Stream::Stderr);
        let mut wasi = WasiCtx::builder();
        wasi.arg(&*context.name)
            .args(context.environment.args())
            .envs(context.environment.vars())
            .stdout(GuestOutput::new(context.name.clone(), Stream::Stdout))
            .stderr(stderr.clone());
        match &context.clock {
            Some(clock) => wasi.wall_clock(clock.clone()),
            None => wasi.wall_clock(HostClock),
        };
        let wasi = wasi.build();
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_WASI_RESOURCES);
        StoreState {
            limiter: MemoryLimiter::new(context.memory_limit, share),
            context,
            deadline: Instant::now(),
            stderr,
            read_only: false,
            reconcile_id: None,
            wasi,
            table,
        }
    }

    pub(super) fn limits(&self) -> &GuestLimits {
        &self.context.limits
    }

    /// Counts a refusal at the boundary and passes the error on.
    pub(super) fn refused<T>(&self, result: Result<T, ApiError>) -> Result<T, ApiError> {
        if let Err(error) = &result {
            let why = match error.kind {
                ApiErrorKind::Forbidden(DeniedBy::DeclaredPermissions) => Refusal::Undeclared,
                ApiErrorKind::Forbidden(DeniedBy::Apiserver) => Refusal::Revoked,
                _ => Refusal::Invalid,
            };
            self.context.budget.refuse(why);
        }
        result
    }

    /// The services, if the plugin may use `power` ([`capability::check`]).
    pub(super) fn may(&self, power: Power<'_>) -> Result<&Services, ApiError> {
        let plugin = &self.context.name;
        let Some(grant) = &self.context.grant else {
            return Err(denied(format!(
                "plugin {plugin} may not call the host from describe()"
            )));
        };
        if self.read_only && power.writes() {
            return Err(denied(format!(
                "plugin {plugin} may not write from a webhook call: webhooks read the cache only"
            )));
        }
        capability::check(grant.subject(), power).map_err(|why| {
            let by = match why {
                capability::Denied::Revoked { .. } => DeniedBy::Apiserver,
                _ => DeniedBy::DeclaredPermissions,
            };
            ApiError::new(
                ApiErrorKind::Forbidden(by),
                format!("plugin {plugin} {why}"),
            )
        })?;
        Ok(&grant.services)
    }

    /// The services, if the plugin may do `verb` on `kind` in `namespace`.
    pub(super) fn check(
        &self,
        verb: Verb,
        kind: &GroupVersionKind,
        namespace: &str,
    ) -> Result<&Services, ApiError> {
        self.may(Power::Call(verb, kind, namespace))
    }

    /// Checks `write` on `target` exactly as it will be sent; the returned future waits for the
    /// plugin's write rate, then sends it.
    fn send(
        &self,
        target: ObjectRef,
        write: Write,
    ) -> Result<impl Future<Output = Result<String, ApiError>> + Send + 'static, ApiError> {
        let services =
            self.refused(self.check(write.verb(), &target.kind, &target.key.namespace))?;
        self.refused(self.owners(&target, &write))?;
        let writer = services.writer.clone();
        let delay = self.context.budget.write_delay();
        let name = write.name();
        Ok(async move {
            wait(delay).await;
            let stored = writer
                .write(&target, write)
                .await
                .map_err(|error| error.of_write(name, &target))?;
            super::changes::noted();
            Ok(stored.map(|json| String::from(&*json)).unwrap_or_default())
        })
    }

    /// Checks every owner reference `write` sets on `target`: to an object the plugin may read,
    /// in `target`'s namespace or cluster-scoped, held by its cache with the uid named.
    pub(super) fn owners(&self, target: &ObjectRef, write: &Write) -> Result<(), ApiError> {
        let namespace = target.key.namespace.as_str();
        for owner in owners::set_by(write)? {
            let services = self.may(Power::Own(&owner.kind, namespace))?;
            let held = |namespace: &str| services.cache.get(&owner.kind, namespace, &owner.name);
            let found = held(namespace).or_else(|error| match namespace {
                "" => Err(error),
                _ => held(""),
            });
            let uid = found.ok().and_then(|json| uid(&json));
            if uid.as_deref() != Some(owner.uid.as_str()) {
                return Err(invalid(format!(
                    "an owner reference names {} {} with uid {}, but no such object is in the \
                     plugin's cache in namespace {namespace:?} or cluster-scoped",
                    kind_name(&owner.kind),
                    owner.name,
                    boundary::cut(&owner.uid)
                )));
            }
        }
        Ok(())
    }

    /// Validates a whole object and sends `write` of it.
    fn send_object(
        &self,
        json: &str,
        create: bool,
        write: fn(serde_json::Value) -> Write,
    ) -> Result<impl Future<Output = Result<String, ApiError>> + Send + 'static, ApiError> {
        let (target, value) =
            self.refused(boundary::object(json, self.limits().object_bytes, create))?;
        self.send(target, write(value))
    }

    /// Validates a patch of an object or of its status and sends it.
    fn send_patch(
        &self,
        target: (types::Gvk, String, String),
        body: client::PatchBody,
        status: bool,
    ) -> Result<impl Future<Output = Result<String, ApiError>> + Send + 'static, ApiError> {
        let target = self.target(target)?;
        let patch = self.refused(boundary::patch(body.into(), self.limits().object_bytes))?;
        self.send(target, Write::Patch { patch, status })
    }

    /// A validated reference from a guest's kind, namespace and name.
    fn target(
        &self,
        (kind, namespace, name): (types::Gvk, String, String),
    ) -> Result<ObjectRef, ApiError> {
        self.refused(boundary::object_ref(kind.into(), namespace, name))
    }

    /// A guest's list options, validated and parsed, with at most the allowed requirements.
    fn list_options(&self, options: cache::ListOptions) -> Result<ListOptions, ApiError> {
        let max = self.limits().selector_requirements;
        let text = |what: &str, selector: &Option<String>| -> Result<String, ApiError> {
            let selector = selector.clone().unwrap_or_default();
            boundary::bounded(what, &selector, max * MAX_REQUIREMENT_BYTES)?;
            Ok(selector)
        };
        let labels = LabelSelector::parse(&text("label selector", &options.label_selector)?)?;
        let fields = FieldSelector::parse(&text("field selector", &options.field_selector)?)?;
        if labels.len() + fields.len() > max {
            return Err(invalid(format!(
                "the selectors have {} requirements, over the limit of {max}",
                labels.len() + fields.len()
            )));
        }
        if let Some(namespace) = &options.namespace {
            boundary::namespace(namespace)?;
        }
        Ok(ListOptions {
            namespace: options.namespace,
            labels,
            fields,
        })
    }
}

/// The uid of a cached object.
fn uid(json: &wasmop_contract::imports::Json) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Object {
        metadata: Metadata,
    }
    #[derive(serde::Deserialize)]
    struct Metadata {
        uid: Option<String>,
    }
    let object: Object = serde_json::from_str(json).ok()?;
    object.metadata.uid
}

fn denied(message: String) -> ApiError {
    ApiError::new(
        ApiErrorKind::Forbidden(DeniedBy::DeclaredPermissions),
        message,
    )
}

fn kind_name(kind: &GroupVersionKind) -> String {
    ObjectRef {
        kind: kind.clone(),
        key: ObjectKey::default(),
    }
    .to_string()
    .trim_end()
    .to_owned()
}

impl From<client::PatchBody> for PatchText {
    fn from(body: client::PatchBody) -> Self {
        match body {
            client::PatchBody::Merge(text) => PatchText::Merge(text),
            client::PatchBody::Json(text) => PatchText::Json(text),
            client::PatchBody::Apply(apply) => PatchText::Apply {
                object: apply.object,
                force: apply.force,
            },
        }
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for StoreState {}
impl plugin::Host for StoreState {}

impl cache::Host for StoreState {
    fn get(
        &mut self,
        kind: types::Gvk,
        namespace: String,
        name: String,
    ) -> Result<String, types::Error> {
        let target = self.target((kind, namespace, name))?;
        let (kind, key) = (&target.kind, &target.key);
        let services = self.refused(self.check(Verb::Get, kind, &key.namespace))?;
        let json = services.cache.get(kind, &key.namespace, &key.name)?;
        Ok(String::from(&*json))
    }

    fn list(
        &mut self,
        kind: types::Gvk,
        options: cache::ListOptions,
    ) -> Result<Vec<String>, types::Error> {
        let kind = kind.into();
        self.refused(boundary::kind(&kind).map_err(ApiError::from))?;
        let options = self.refused(self.list_options(options))?;
        let namespace = options.namespace.as_deref().unwrap_or_default();
        let services = self.refused(self.check(Verb::List, &kind, namespace))?;
        let objects = services.cache.list(&kind, &options)?;
        Ok(objects.iter().map(|o| String::from(&**o)).collect())
    }

    fn list_by_index(
        &mut self,
        kind: types::Gvk,
        index: String,
        value: String,
    ) -> Result<Vec<String>, types::Error> {
        let kind = kind.into();
        self.refused(boundary::kind(&kind).map_err(ApiError::from))?;
        self.refused(boundary::bounded("the index name", &index, MAX_SHORT_TEXT))?;
        self.refused(boundary::bounded("the index value", &value, MAX_SHORT_TEXT))?;
        let services = self.refused(self.check(Verb::List, &kind, ""))?;
        let objects = services.cache.list_by_index(&kind, &index, &value)?;
        Ok(objects.iter().map(|o| String::from(&**o)).collect())
    }
}

impl client::Host for StoreState {
    async fn create(&mut self, obj: String) -> Result<String, types::Error> {
        Ok(self.send_object(&obj, true, Write::Create)?.await?)
    }

    async fn update(&mut self, obj: String) -> Result<String, types::Error> {
        Ok(self.send_object(&obj, false, Write::Update)?.await?)
    }

    async fn patch(
        &mut self,
        kind: types::Gvk,
        namespace: String,
        name: String,
        body: client::PatchBody,
    ) -> Result<String, types::Error> {
        Ok(self
            .send_patch((kind, namespace, name), body, false)?
            .await?)
    }

    async fn delete(
        &mut self,
        kind: types::Gvk,
        namespace: String,
        name: String,
        options: client::DeleteOptions,
    ) -> Result<(), types::Error> {
        let target = self.target((kind, namespace, name))?;
        let preconditions = options.preconditions.unwrap_or(client::Preconditions {
            uid: None,
            resource_version: None,
        });
        for (what, text) in [
            ("the uid precondition", &preconditions.uid),
            (
                "the resourceVersion precondition",
                &preconditions.resource_version,
            ),
        ] {
            let text = text.as_deref().unwrap_or_default();
            self.refused(boundary::bounded(what, text, MAX_SHORT_TEXT))?;
        }
        let options = DeleteOptions {
            uid: preconditions.uid,
            resource_version: preconditions.resource_version,
            propagation: options.propagation.map(|p| match p {
                client::Propagation::Background => Propagation::Background,
                client::Propagation::Foreground => Propagation::Foreground,
                client::Propagation::Orphan => Propagation::Orphan,
            }),
        };
        self.send(target, Write::Delete(options))?.await?;
        Ok(())
    }

    async fn update_status(&mut self, obj: String) -> Result<String, types::Error> {
        Ok(self.send_object(&obj, false, Write::UpdateStatus)?.await?)
    }

    async fn patch_status(
        &mut self,
        kind: types::Gvk,
        namespace: String,
        name: String,
        body: client::PatchBody,
    ) -> Result<String, types::Error> {
        Ok(self
            .send_patch((kind, namespace, name), body, true)?
            .await?)
    }
}

impl events::Host for StoreState {
    async fn record(
        &mut self,
        about: events::Regarding,
        kind: events::EventType,
        reason: String,
        message: String,
    ) {
        wait(self.context.budget.event_delay()).await;
        let event = self.event(about, kind, reason, message);
        let (context, budget) = (&self.context, &self.context.budget);
        let (grant, event) = match (&context.grant, event) {
            (Some(grant), Ok(event)) => (grant, event),
            (_, Err(error)) => {
                budget.refuse(Refusal::EventDropped);
                tracing::debug!(plugin = %context.name, "event dropped: {error}");
                return;
            }
            (None, Ok(_)) => {
                tracing::debug!(plugin = %context.name, "event recorded from describe() dropped");
                return;
            }
        };
        match grant.services.events.record(&context.name, event) {
            true => super::changes::noted(),
            false => budget.refuse(Refusal::EventDropped),
        }
    }
}

/// The namespace an event about an object in `namespace` lands in: its own, or `default` for a
/// cluster-scoped object, as the event recorder publishes it.
fn event_namespace(namespace: &str) -> &str {
    match namespace {
        "" => "default",
        namespace => namespace,
    }
}

/// Waits out a rate's delay (none when it is zero).
pub(super) async fn wait(delay: std::time::Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

impl StoreState {
    /// A guest's event, validated: about an object the plugin may read, a short reason, a bounded
    /// message.
    fn event(
        &self,
        about: events::Regarding,
        kind: events::EventType,
        reason: String,
        message: String,
    ) -> Result<Event, ApiError> {
        let regarding = boundary::object_ref(about.kind.into(), about.namespace, about.name)?;
        self.check(Verb::Get, &regarding.kind, &regarding.key.namespace)?;
        self.may(Power::Event(event_namespace(&regarding.key.namespace)))?;
        boundary::bounded("the uid", &about.uid, MAX_SHORT_TEXT)?;
        let reason_ok = (1..=MAX_EVENT_REASON).contains(&reason.len())
            && reason.bytes().all(|b| b.is_ascii_alphanumeric());
        if !reason_ok {
            return Err(invalid("an event reason is 1-128 letters and digits"));
        }
        Ok(Event {
            regarding,
            uid: about.uid,
            event_type: match kind {
                events::EventType::Normal => EventType::Normal,
                events::EventType::Warning => EventType::Warning,
            },
            reason,
            message: boundary::truncated(message, self.limits().event_bytes),
            reconcile_id: self.reconcile_id.clone(),
        })
    }
}

impl log::Host for StoreState {
    async fn log(&mut self, level: log::Level, message: String, fields: Vec<(String, String)>) {
        wait(self.context.budget.log_delay()).await;
        let limits = self.limits();
        let plugin = &*self.context.name;
        let message = boundary::truncated(message, limits.log_bytes);
        let fields = fields
            .iter()
            .take(limits.log_fields)
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let fields = boundary::truncated(fields, limits.log_bytes);
        match level {
            log::Level::Trace => tracing::trace!(plugin, fields, "{message}"),
            log::Level::Debug => tracing::debug!(plugin, fields, "{message}"),
            log::Level::Info => tracing::info!(plugin, fields, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, fields, "{message}"),
            log::Level::Error => tracing::error!(plugin, fields, "{message}"),
        }
    }
}

/// Caps the linear memories and tables of an instance together (a component may have several of
/// each; a table element costs a pointer), takes what they hold from its plugin's share of the
/// guest memory budget until the instance is dropped, and records the largest total asked for.
pub(crate) struct MemoryLimiter {
    limit: usize,
    /// Bytes of linear memory the instance holds across its memories.
    total: usize,
    /// The largest total the guest grew to, in bytes.
    pub high_water: usize,
    share: Arc<MemoryShare>,
}

/// A guest asked for more memory than its cap; the trap carries this as its cause.
#[derive(Debug, thiserror::Error)]
#[error(
    "guest asked for {desired} bytes of linear memory and tables, over its limit of {limit} bytes"
)]
pub struct MemoryLimitExceeded {
    /// The total it asked for.
    pub desired: usize,
    /// Its cap.
    pub limit: usize,
}

impl MemoryLimiter {
    fn new(limit: usize, share: Arc<MemoryShare>) -> Self {
        MemoryLimiter {
            limit,
            total: 0,
            high_water: 0,
            share,
        }
    }

    /// An empty hold on the plugin's share, for what the host reads for this instance.
    pub(crate) fn holding(&self) -> Held {
        self.share.holding()
    }

    /// Takes `asked` more bytes for the instance, within its cap and its plugin's share.
    fn grow(&mut self, asked: usize) -> wasmtime::Result<bool> {
        let total = self.total.saturating_add(asked);
        if total > self.limit {
            return Err(MemoryLimitExceeded {
                desired: total,
                limit: self.limit,
            }
            .into());
        }
        self.share.take(asked)?;
        self.total = total;
        self.high_water = self.high_water.max(total);
        Ok(true)
    }
}

/// What one table element holds: wasmtime's elements are pointers.
const TABLE_ELEMENT_BYTES: usize = std::mem::size_of::<usize>();

impl Drop for MemoryLimiter {
    fn drop(&mut self) {
        self.share.give(self.total);
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(desired.saturating_sub(current))
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let elements = desired.saturating_sub(current);
        self.grow(elements.saturating_mul(TABLE_ELEMENT_BYTES))
    }
}

#[cfg(test)]
mod tests {
    use wasmtime::ResourceLimiter;

    use super::*;
    use crate::runtime::memory::{GuestMemory, GuestMemoryExhausted};
    use crate::runtime::reserve::Claimant;

    fn unbounded() -> Arc<MemoryShare> {
        Arc::new(MemoryShare::none(&Arc::new(GuestMemory::new(None, 0))))
    }

    #[test]
    fn the_memory_cap_holds_across_all_memories_of_an_instance() {
        let mut limiter = MemoryLimiter::new(100, unbounded());
        assert!(limiter.memory_growing(0, 60, None).unwrap());
        let second = limiter.memory_growing(0, 60, None).unwrap_err();
        let cause = second.downcast_ref::<MemoryLimitExceeded>().unwrap();
        assert_eq!((cause.desired, cause.limit), (120, 100));
        assert!(limiter.memory_growing(0, 40, None).unwrap());
        assert_eq!(limiter.high_water, 100);
    }

    #[test]
    fn tables_count_against_the_same_cap_a_pointer_an_element() {
        let mut limiter = MemoryLimiter::new(1000, unbounded());
        assert!(limiter.memory_growing(0, 600, None).unwrap());
        assert!(limiter.table_growing(0, 50, None).unwrap());
        assert_eq!(limiter.high_water, 600 + 50 * TABLE_ELEMENT_BYTES);
        let refused = limiter.table_growing(50, 100, None).unwrap_err();
        let cause = refused.downcast_ref::<MemoryLimitExceeded>().unwrap();
        assert_eq!(cause.desired, 600 + 100 * TABLE_ELEMENT_BYTES);
    }

    /// `(module (table 0 funcref) (func (export "grow") (param i32) (result i32)
    /// ref.null func local.get 0 table.grow 0))`, as `wasm-tools parse` assembles it.
    const TABLE_GROWER: [u8; 49] = [
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01,
        0x7f, 0x03, 0x02, 0x01, 0x00, 0x04, 0x04, 0x01, 0x70, 0x00, 0x00, 0x07, 0x08, 0x01, 0x04,
        0x67, 0x72, 0x6f, 0x77, 0x00, 0x00, 0x0a, 0x0b, 0x01, 0x09, 0x00, 0xd0, 0x70, 0x20, 0x00,
        0xfc, 0x0f, 0x00, 0x0b,
    ];

    #[test]
    fn a_guest_growing_its_table_past_its_cap_traps_at_the_cap() {
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, TABLE_GROWER).unwrap();
        let limit = 1000 * TABLE_ELEMENT_BYTES;
        let mut store = wasmtime::Store::new(&engine, MemoryLimiter::new(limit, unbounded()));
        store.limiter(|limiter| limiter);
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
        let grow = instance
            .get_typed_func::<i32, i32>(&mut store, "grow")
            .unwrap();
        assert_eq!(grow.call(&mut store, 600).unwrap(), 0);
        let trap = grow.call(&mut store, 600).unwrap_err();
        let cause = trap.downcast_ref::<MemoryLimitExceeded>().unwrap();
        assert_eq!(cause.desired, 1200 * TABLE_ELEMENT_BYTES);
        assert_eq!(store.data().high_water, 600 * TABLE_ELEMENT_BYTES);
    }

    #[test]
    fn instances_take_from_their_plugins_share_and_give_back_what_they_held_when_dropped() {
        let memory = Arc::new(GuestMemory::new(Some(100), 0));
        let share = Arc::new(memory.reserve(50, Claimant::OPERATOR).unwrap());
        let mut first = MemoryLimiter::new(80, share.clone());
        let mut second = MemoryLimiter::new(80, share.clone());
        assert!(first.memory_growing(0, 70, None).unwrap());
        let refused = second.memory_growing(0, 40, None).unwrap_err();
        let cause = refused.downcast_ref::<GuestMemoryExhausted>().unwrap();
        assert_eq!((cause.asked, cause.held, cause.budget), (40, 70, 100));
        assert!(second.memory_growing(0, 30, None).unwrap());
        assert_eq!(memory.held(), 100);
        drop(first);
        assert_eq!(memory.held(), 30);
        assert!(second.memory_growing(30, 70, None).unwrap());
        drop(second);
        assert_eq!(memory.held(), 0);
    }
}
