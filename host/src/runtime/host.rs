//! The state of one guest instance's store and the host side of its imports: every call is
//! checked against the plugin's declared permissions, objects are parsed before they reach the
//! services, and failures come back as the WIT `error` variant.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::object::{GroupVersionKind, ObjectKey, ObjectRef};
use crate::runtime::bindings::{cache, client, events, log, plugin, types};
use crate::runtime::imports::{
    ApiError, ApiErrorKind, DeleteOptions, DeniedBy, Event, EventType, ListOptions, Patch,
    Propagation, Services, Write,
};
use crate::runtime::output::{GuestOutput, Stream};
use crate::runtime::registration::{Registration, Verb};

/// What every instance of one plugin version shares.
pub(crate) struct PluginContext {
    /// The plugin's name (its file name until `describe` has answered).
    pub name: Arc<str>,
    /// What the plugin may use, once `describe` has answered; before that every import is refused.
    pub grant: Option<Grant>,
    /// The per-instance memory cap in bytes.
    pub memory_limit: usize,
}

/// A described plugin's registration and the services its imports call.
pub(crate) struct Grant {
    pub registration: Arc<Registration>,
    pub services: Services,
}

/// The data of one guest store.
pub(crate) struct StoreState {
    pub context: Arc<PluginContext>,
    pub limiter: MemoryLimiter,
    /// When the current call must stop; checked on every epoch tick.
    pub deadline: Instant,
    pub stderr: GuestOutput,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl StoreState {
    /// A fresh store state: WASI with nothing granted but stdout and stderr into the log.
    pub fn new(context: Arc<PluginContext>) -> Self {
        let stderr = GuestOutput::new(context.name.clone(), Stream::Stderr);
        let wasi = WasiCtx::builder()
            .stdout(GuestOutput::new(context.name.clone(), Stream::Stdout))
            .stderr(stderr.clone())
            .build();
        StoreState {
            limiter: MemoryLimiter::new(context.memory_limit),
            context,
            deadline: Instant::now(),
            stderr,
            wasi,
            table: ResourceTable::new(),
        }
    }

    /// The services, if the plugin declared `verb` on `kind` in `namespace`.
    fn check(
        &self,
        verb: Verb,
        kind: &GroupVersionKind,
        namespace: &str,
    ) -> Result<&Services, ApiError> {
        let plugin = &self.context.name;
        let Some(Grant {
            registration,
            services,
        }) = &self.context.grant
        else {
            return Err(denied(format!(
                "plugin {plugin} may not call the host from describe()"
            )));
        };
        if registration.allows(verb, kind, namespace) {
            return Ok(services);
        }
        let place = if namespace.is_empty() {
            "across namespaces".to_owned()
        } else {
            format!("in namespace {namespace}")
        };
        Err(denied(format!(
            "plugin {plugin} may not {verb:?} {} {place}: describe() declared no such permission",
            kind_name(kind)
        )))
    }

    /// Sends `write` to the writer without holding the (non-`Sync`) store state across the await.
    fn write(
        services: &Services,
        target: ObjectRef,
        write: Write,
    ) -> impl Future<Output = Result<String, ApiError>> + Send + 'static {
        let writer = services.writer.clone();
        async move {
            let stored = writer.write(&target, write).await?;
            Ok(stored.map(|json| String::from(&*json)).unwrap_or_default())
        }
    }
}

impl StoreState {
    /// Checks and parses a whole-object write; the returned future performs it.
    fn write_object(
        &self,
        json: &str,
        verb: Verb,
        write: fn(Value) -> Write,
    ) -> Result<impl Future<Output = Result<String, ApiError>> + Send + 'static, ApiError> {
        let (target, value) = parse_object(json)?;
        let services = self.check(verb, &target.kind, &target.key.namespace)?;
        Ok(Self::write(services, target, write(value)))
    }

    /// Checks and parses a patch of the object or of its status; the returned future performs it.
    fn patch_object(
        &self,
        target: ObjectRef,
        body: client::PatchBody,
        status: bool,
    ) -> Result<impl Future<Output = Result<String, ApiError>> + Send + 'static, ApiError> {
        let verb = if status { Verb::Status } else { Verb::Patch };
        let services = self.check(verb, &target.kind, &target.key.namespace)?;
        Ok(Self::write(
            services,
            target,
            Write::Patch {
                patch: parse_patch(body)?,
                status,
            },
        ))
    }
}

fn denied(message: String) -> ApiError {
    ApiError::new(
        ApiErrorKind::Forbidden(DeniedBy::DeclaredPermissions),
        message,
    )
}

fn invalid(message: String) -> ApiError {
    ApiError::new(ApiErrorKind::Invalid, message)
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

/// Parses a guest's object and finds what it is: kind from apiVersion/kind, key from metadata.
fn parse_object(json: &str) -> Result<(ObjectRef, Value), ApiError> {
    let value: Value = serde_json::from_str(json)
        .map_err(|e| invalid(format!("object is not valid JSON: {e}")))?;
    let text = |pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (api_version, kind) = (text("/apiVersion"), text("/kind"));
    if api_version.is_empty() || kind.is_empty() {
        return Err(invalid("object has no apiVersion or kind".to_owned()));
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let target = ObjectRef {
        kind: GroupVersionKind::gvk(group, version, kind),
        key: ObjectKey::new(text("/metadata/namespace"), text("/metadata/name")),
    };
    Ok((target, value))
}

fn parse_patch(body: client::PatchBody) -> Result<Patch, ApiError> {
    let parse = |text: &str, what: &str| {
        serde_json::from_str::<Value>(text)
            .map_err(|e| invalid(format!("{what} is not valid JSON: {e}")))
    };
    Ok(match body {
        client::PatchBody::Merge(text) => Patch::Merge(parse(&text, "merge patch")?),
        client::PatchBody::Json(text) => match parse(&text, "JSON patch")? {
            ops @ Value::Array(_) => Patch::Json(ops),
            _ => {
                return Err(invalid(
                    "a JSON patch must be an array of operations".to_owned(),
                ));
            }
        },
        client::PatchBody::Apply(apply) => Patch::Apply {
            object: parse(&apply.object, "applied object")?,
            force: apply.force,
        },
    })
}

fn target(kind: types::Gvk, namespace: String, name: String) -> ObjectRef {
    ObjectRef {
        kind: kind.into(),
        key: ObjectKey { namespace, name },
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
        let kind = kind.into();
        let services = self.check(Verb::Get, &kind, &namespace)?;
        let json = services.cache.get(&kind, &namespace, &name)?;
        Ok(String::from(&*json))
    }

    fn list(
        &mut self,
        kind: types::Gvk,
        options: cache::ListOptions,
    ) -> Result<Vec<String>, types::Error> {
        let kind = kind.into();
        let namespace = options.namespace.as_deref().unwrap_or_default();
        let services = self.check(Verb::List, &kind, namespace)?.clone();
        let options = ListOptions {
            namespace: options.namespace,
            label_selector: options.label_selector,
            field_selector: options.field_selector,
        };
        let objects = services.cache.list(&kind, &options)?;
        Ok(objects.iter().map(|json| String::from(&**json)).collect())
    }

    fn list_by_index(
        &mut self,
        kind: types::Gvk,
        index: String,
        value: String,
    ) -> Result<Vec<String>, types::Error> {
        let kind = kind.into();
        let services = self.check(Verb::List, &kind, "")?;
        let objects = services.cache.list_by_index(&kind, &index, &value)?;
        Ok(objects.iter().map(|json| String::from(&**json)).collect())
    }
}

impl client::Host for StoreState {
    async fn create(&mut self, obj: String) -> Result<String, types::Error> {
        Ok(self
            .write_object(&obj, Verb::Create, Write::Create)?
            .await?)
    }

    async fn update(&mut self, obj: String) -> Result<String, types::Error> {
        Ok(self
            .write_object(&obj, Verb::Update, Write::Update)?
            .await?)
    }

    async fn patch(
        &mut self,
        kind: types::Gvk,
        namespace: String,
        name: String,
        body: client::PatchBody,
    ) -> Result<String, types::Error> {
        Ok(self
            .patch_object(target(kind, namespace, name), body, false)?
            .await?)
    }

    async fn delete(
        &mut self,
        kind: types::Gvk,
        namespace: String,
        name: String,
        options: client::DeleteOptions,
    ) -> Result<(), types::Error> {
        let target = target(kind, namespace, name);
        let services = self
            .check(Verb::Delete, &target.kind, &target.key.namespace)?
            .clone();
        let preconditions = options.preconditions.unwrap_or(client::Preconditions {
            uid: None,
            resource_version: None,
        });
        let options = DeleteOptions {
            uid: preconditions.uid,
            resource_version: preconditions.resource_version,
            propagation: options.propagation.map(|p| match p {
                client::Propagation::Background => Propagation::Background,
                client::Propagation::Foreground => Propagation::Foreground,
                client::Propagation::Orphan => Propagation::Orphan,
            }),
        };
        Self::write(&services, target, Write::Delete(options)).await?;
        Ok(())
    }

    async fn update_status(&mut self, obj: String) -> Result<String, types::Error> {
        Ok(self
            .write_object(&obj, Verb::Status, Write::UpdateStatus)?
            .await?)
    }

    async fn patch_status(
        &mut self,
        kind: types::Gvk,
        namespace: String,
        name: String,
        body: client::PatchBody,
    ) -> Result<String, types::Error> {
        Ok(self
            .patch_object(target(kind, namespace, name), body, true)?
            .await?)
    }
}

impl events::Host for StoreState {
    fn record(
        &mut self,
        about: events::Regarding,
        kind: events::EventType,
        reason: String,
        message: String,
    ) {
        let event = Event {
            regarding: target(about.kind, about.namespace, about.name),
            uid: about.uid,
            event_type: match kind {
                events::EventType::Normal => EventType::Normal,
                events::EventType::Warning => EventType::Warning,
            },
            reason,
            message,
        };
        match &self.context.grant {
            Some(grant) => grant.services.events.record(&self.context.name, event),
            None => {
                tracing::warn!(plugin = %self.context.name, "event recorded from describe() dropped")
            }
        }
    }
}

impl log::Host for StoreState {
    fn log(&mut self, level: log::Level, message: String, fields: Vec<(String, String)>) {
        let plugin = &*self.context.name;
        let fields = fields
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        match level {
            log::Level::Trace => tracing::trace!(plugin, fields, "{message}"),
            log::Level::Debug => tracing::debug!(plugin, fields, "{message}"),
            log::Level::Info => tracing::info!(plugin, fields, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, fields, "{message}"),
            log::Level::Error => tracing::error!(plugin, fields, "{message}"),
        }
    }
}

/// Caps each linear memory of an instance and records the largest size asked for.
pub(crate) struct MemoryLimiter {
    limit: usize,
    /// The largest memory size the guest grew to, in bytes.
    pub high_water: usize,
}

/// A guest asked for more memory than its cap; the trap carries this as its cause.
#[derive(Debug, thiserror::Error)]
#[error("guest asked for {desired} bytes of linear memory, over its limit of {limit} bytes")]
pub struct MemoryLimitExceeded {
    /// The size it asked for.
    pub desired: usize,
    /// Its cap.
    pub limit: usize,
}

impl MemoryLimiter {
    fn new(limit: usize) -> Self {
        MemoryLimiter {
            limit,
            high_water: 0,
        }
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            return Err(MemoryLimitExceeded {
                desired,
                limit: self.limit,
            }
            .into());
        }
        self.high_water = self.high_water.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_parsed_into_their_kind_and_key() {
        let json = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"shop","name":"web"}}"#;
        let (target, value) = parse_object(json).unwrap();
        assert_eq!(target.to_string(), "Deployment.apps/v1 shop/web");
        assert_eq!(value["kind"], "Deployment");
        let (core, _) =
            parse_object(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}"#)
                .unwrap();
        assert_eq!(core.kind, GroupVersionKind::gvk("", "v1", "Namespace"));
    }

    #[test]
    fn malformed_objects_are_invalid_not_fatal() {
        let truncated =
            parse_object(r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"#).unwrap_err();
        assert_eq!(truncated.kind, ApiErrorKind::Invalid);
        assert!(
            truncated.message.contains("not valid JSON"),
            "{}",
            truncated.message
        );
        let kindless = parse_object(r#"{"metadata":{}}"#).unwrap_err();
        assert!(kindless.message.contains("no apiVersion or kind"));
        let not_ops = parse_patch(client::PatchBody::Json("{}".to_owned())).unwrap_err();
        assert!(not_ops.message.contains("array of operations"));
    }
}
