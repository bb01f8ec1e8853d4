//! The host side of the WIT imports, as traits the runtime calls.
//!
//! A plugin's guest reads through a [`CacheReader`], writes through an [`ApiWriter`] and records
//! events through an [`EventRecorder`]; what the runtime counts for it goes to an [`Observer`]. The runtime validates what the guest passed, checks the
//! declared permissions on the request exactly as built, and parses the guest's JSON before any of
//! them is called, so implementations receive only well-formed, permitted, bounded requests. Each plugin gets its own [`Services`], so an implementation may be
//! specific to one plugin (its field manager, its read-your-writes view).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::object::{GroupVersionKind, ObjectRef};
use crate::refusal::Refusal;
use crate::registration::Verb;
use crate::rights::Rights;
use crate::selector::{FieldSelector, LabelSelector};

/// A cached object as JSON text, shared without copying between the cache and its readers.
pub type Json = Arc<str>;

/// Why a read or a write failed, as the WIT `error` variant carries it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    /// Which kind of failure.
    pub kind: ApiErrorKind,
    /// The HTTP status code, 0 when there was no HTTP response.
    pub code: u16,
    /// The machine-readable reason, e.g. `NotFound`.
    pub reason: String,
    /// What happened, for people.
    pub message: String,
}

/// The cases of the WIT `error` variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiErrorKind {
    /// 404.
    NotFound,
    /// 409 on a stale resourceVersion.
    Conflict,
    /// 409 on create of an existing name.
    AlreadyExists,
    /// 403, by the apiserver or by the plugin's declared permissions.
    Forbidden(DeniedBy),
    /// 400 or 422.
    Invalid,
    /// 504 or a deadline.
    Timeout,
    /// 429 or 503.
    Unavailable,
    /// Anything else.
    Other,
}

/// Who refused a forbidden call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeniedBy {
    /// The apiserver's authorization.
    Apiserver,
    /// The host, because the plugin did not declare the permission.
    DeclaredPermissions,
}

impl ApiError {
    /// An error of `kind` with the conventional HTTP code and reason for it.
    pub fn new(kind: ApiErrorKind, message: impl Into<String>) -> Self {
        let (code, reason) = match kind {
            ApiErrorKind::NotFound => (404, "NotFound"),
            ApiErrorKind::Conflict => (409, "Conflict"),
            ApiErrorKind::AlreadyExists => (409, "AlreadyExists"),
            ApiErrorKind::Forbidden(_) => (403, "Forbidden"),
            ApiErrorKind::Invalid => (422, "Invalid"),
            ApiErrorKind::Timeout => (504, "Timeout"),
            ApiErrorKind::Unavailable => (503, "ServiceUnavailable"),
            ApiErrorKind::Other => (500, "InternalError"),
        };
        ApiError {
            kind,
            code,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// `object` was not found.
    pub fn not_found(object: &ObjectRef) -> Self {
        Self::new(ApiErrorKind::NotFound, format!("{object} not found"))
    }

    /// This error as the answer to `write` of `target`: its message names the write, and for a
    /// 404 on the status subresource says the kind may have none.
    pub fn of_write(mut self, write: WriteName, target: &ObjectRef) -> Self {
        let hint = match (self.kind, write.status) {
            (ApiErrorKind::NotFound, true) => {
                "; if the object exists, its kind has no status subresource (a CRD declares one \
                 in spec.versions[].subresources.status)"
            }
            _ => "",
        };
        self.message = format!("{write} {target} failed: {}{hint}", self.message);
        self
    }
}

/// Filters of a cache list, combined with AND, parsed and bounded at the guest boundary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Only this namespace; all when `None`.
    pub namespace: Option<String>,
    /// The label selector.
    pub labels: LabelSelector,
    /// The field selector.
    pub fields: FieldSelector,
}

/// Reads of the informer cache on behalf of one plugin.
pub trait CacheReader: Send + Sync + 'static {
    /// One object, or `NotFound`.
    fn get(&self, kind: &GroupVersionKind, namespace: &str, name: &str) -> Result<Json, ApiError>;
    /// The objects of a kind that pass `options`.
    fn list(&self, kind: &GroupVersionKind, options: &ListOptions) -> Result<Vec<Json>, ApiError>;
    /// The objects whose declared field index `index` has `value`.
    fn list_by_index(
        &self,
        kind: &GroupVersionKind,
        index: &str,
        value: &str,
    ) -> Result<Vec<Json>, ApiError>;
}

/// A patch as the guest sent it, already parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Patch {
    /// JSON merge patch.
    Merge(Value),
    /// JSON patch (a list of operations).
    Json(Value),
    /// Server-side apply of the given fields.
    Apply {
        /// The applied (partial) object.
        object: Value,
        /// Take ownership of conflicting fields.
        force: bool,
    },
}

impl Patch {
    /// The patch's JSON: the merge patch, the operations or the applied object.
    pub fn value(&self) -> &Value {
        match self {
            Patch::Merge(value) | Patch::Json(value) | Patch::Apply { object: value, .. } => value,
        }
    }
}

/// What a write does, to name it in an error: its verb as fixtures spell it, and whether it
/// targets the status subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteName {
    /// `create`, `update`, `update-status`, `merge-patch`, `json-patch`, `apply` or `delete`.
    pub verb: &'static str,
    /// Whether it targets the status subresource.
    pub status: bool,
}

impl std::fmt::Display for WriteName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.verb, self.status) {
            ("update-status", _) | (_, false) => f.write_str(self.verb),
            (verb, true) => write!(f, "{verb} (status)"),
        }
    }
}

impl Write {
    /// The JSON it sends: the object or the patch; none for a delete.
    pub fn body(&self) -> Option<&Value> {
        match self {
            Write::Create(value) | Write::Update(value) | Write::UpdateStatus(value) => Some(value),
            Write::Patch { patch, .. } => Some(patch.value()),
            Write::Delete(_) => None,
        }
    }

    /// What it does, to name it in an error.
    pub fn name(&self) -> WriteName {
        let verb = match self {
            Write::Create(_) => "create",
            Write::Update(_) => "update",
            Write::UpdateStatus(_) => "update-status",
            Write::Patch { patch, .. } => match patch {
                Patch::Merge(_) => "merge-patch",
                Patch::Json(_) => "json-patch",
                Patch::Apply { .. } => "apply",
            },
            Write::Delete(_) => "delete",
        };
        WriteName {
            verb,
            status: self.verb() == Verb::Status,
        }
    }

    /// The verb a permission must grant for this write: the status subresource's writes are
    /// [`Verb::Status`], whatever their HTTP method.
    pub fn verb(&self) -> Verb {
        match self {
            Write::Create(_) => Verb::Create,
            Write::Update(_) => Verb::Update,
            Write::Patch { status: false, .. } => Verb::Patch,
            Write::Patch { status: true, .. } | Write::UpdateStatus(_) => Verb::Status,
            Write::Delete(_) => Verb::Delete,
        }
    }
}

/// What a delete propagates to dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete dependents in the background.
    Background,
    /// Keep the object until its dependents are gone.
    Foreground,
    /// Leave dependents behind.
    Orphan,
}

/// Options of a delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Only delete the object with this UID.
    pub uid: Option<String>,
    /// Only delete the object at this resourceVersion.
    pub resource_version: Option<String>,
    /// What happens to dependents.
    pub propagation: Option<Propagation>,
}

/// One write to the apiserver.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Create the object.
    Create(Value),
    /// Replace the object.
    Update(Value),
    /// Patch the object (or its status subresource when `status` is set).
    Patch {
        /// The patch.
        patch: Patch,
        /// Whether it targets the status subresource.
        status: bool,
    },
    /// Replace the status subresource.
    UpdateStatus(Value),
    /// Delete the object.
    Delete(DeleteOptions),
}

/// A resource of a group version as the apiserver serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceKind {
    /// Its kind.
    pub kind: GroupVersionKind,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

/// A raw request of a guest's own client, as the runtime rebuilt and checked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: &'static str,
    /// The path and query to send.
    pub path: String,
    /// The body's media type and the body (re-encoded from what was checked), if it has one.
    pub body: Option<(String, Vec<u8>)>,
}

/// The apiserver's answer to a [`Forward`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The body's media type.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

/// Writes to the apiserver on behalf of one plugin, and the raw requests of its own client.
#[async_trait::async_trait]
pub trait ApiWriter: Send + Sync + 'static {
    /// Performs `write` on `target`; returns the stored object (`None` after a delete).
    async fn write(&self, target: &ObjectRef, write: Write) -> Result<Option<Json>, ApiError>;
}

/// The `transport` import's way to the apiserver: a plugin's own requests, checked by the host
/// before they get here, sent as the plugin.
#[async_trait::async_trait]
pub trait Transport: Send + Sync + 'static {
    /// The kind `resource` of `group`/`version` holds, from discovery.
    async fn resource_kind(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Result<ResourceKind, ApiError>;

    /// Sends `request` as the plugin and reads the answer into bytes `room` admits, each before
    /// it is taken.
    async fn forward(&self, request: Forward, room: &dyn AnswerRoom) -> Result<Answer, ApiError>;
}

/// No apiserver to send to (an offline test's host): every request is answered unavailable.
pub struct NoTransport;

#[async_trait::async_trait]
impl Transport for NoTransport {
    async fn resource_kind(&self, _: &str, _: &str, _: &str) -> Result<ResourceKind, ApiError> {
        Err(no_transport())
    }

    async fn forward(&self, _: Forward, _: &dyn AnswerRoom) -> Result<Answer, ApiError> {
        Err(no_transport())
    }
}

/// What may hold an apiserver's answer as it is read for a plugin: the reader asks for each
/// growth of its buffer before making it.
pub trait AnswerRoom: Send + Sync {
    /// Admits `more` bytes, or says why not (the error the plugin is given).
    fn admit(&self, more: usize) -> Result<(), ApiError>;
}

/// Why a writer without an apiserver (an offline test's) answers no raw request.
fn no_transport() -> ApiError {
    ApiError::new(
        ApiErrorKind::Unavailable,
        "the transport reaches an apiserver, and there is none here (offline tests answer the \
         cache and client imports only)",
    )
}

/// Normal or Warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something needs attention.
    Warning,
}

/// A Kubernetes Event about one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The object the event is about.
    pub regarding: ObjectRef,
    /// Its UID, when the guest knew it.
    pub uid: String,
    /// Normal or Warning.
    pub event_type: EventType,
    /// A short CamelCase reason.
    pub reason: String,
    /// A sentence for people.
    pub message: String,
    /// The reconcile that recorded it, if a reconcile did.
    pub reconcile_id: Option<String>,
}

/// Records events; must not block, and must bound what it keeps (queue the apiserver call).
pub trait EventRecorder: Send + Sync + 'static {
    /// Records one event, best effort; `false` when it was dropped.
    fn record(&self, plugin: &str, event: Event) -> bool;
}

/// Hears what the runtime counts for one plugin as it happens (the process's metrics); must
/// not block.
pub trait Observer: Send + Sync + 'static {
    /// An instance was created in `took`.
    fn instantiated(&self, took: Duration);
    /// Something at the plugin's boundary was refused, dropped or slowed, for `why`.
    fn refused(&self, why: Refusal);
    /// An instance's linear memory reached `bytes`.
    fn memory(&self, bytes: usize);
    /// The plugin went idle long enough to be suspended: its code and instances were given back.
    fn suspended(&self);
    /// The suspended plugin was woken for a call, in `took`.
    fn woke(&self, took: Duration);
}

/// Nobody listening.
impl Observer for () {
    fn instantiated(&self, _took: Duration) {}
    fn refused(&self, _why: Refusal) {}
    fn memory(&self, _bytes: usize) {}
    fn suspended(&self) {}
    fn woke(&self, _took: Duration) {}
}

/// The host services one plugin's guests call.
#[derive(Clone)]
pub struct Services {
    /// Cache reads.
    pub cache: Arc<dyn CacheReader>,
    /// Apiserver writes.
    pub writer: Arc<dyn ApiWriter>,
    /// The plugin's own requests (the `transport` import).
    pub transport: Arc<dyn Transport>,
    /// Events.
    pub events: Arc<dyn EventRecorder>,
    /// Counts.
    pub observer: Arc<dyn Observer>,
    /// What the apiserver lets the plugin's own identity read now, in identity mode; reads it
    /// refuses are refused by the capability check.
    pub rights: Option<Arc<Rights>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_error_names_the_write_and_a_status_404_the_missing_subresource() {
        let foo = GroupVersionKind::gvk("example.com", "v1", "Foo");
        let target = ObjectRef::new(&foo, "default", "example-foo");
        let not_found = || ApiError::new(ApiErrorKind::NotFound, "foos \"example-foo\" not found");
        let merge = |status| Write::Patch {
            patch: Patch::Merge(Value::Null),
            status,
        };
        let answered = |write: Write, error: ApiError| error.of_write(write.name(), &target);

        let status = answered(Write::UpdateStatus(Value::Null), not_found());
        assert!(
            status.message.starts_with(
                "update-status Foo.example.com/v1 default/example-foo failed: foos \"example-foo\" not found; "
            ),
            "{}",
            status.message
        );
        assert!(
            status
                .message
                .contains("spec.versions[].subresources.status")
        );
        assert_eq!((status.kind, status.code), (ApiErrorKind::NotFound, 404));
        let patched = answered(merge(true), not_found());
        assert!(patched.message.starts_with("merge-patch (status) Foo"));
        assert!(patched.message.contains("subresources.status"));

        let plain = answered(merge(false), not_found());
        assert!(
            plain
                .message
                .starts_with("merge-patch Foo.example.com/v1 default/example-foo")
        );
        assert!(!plain.message.contains("subresource"), "{}", plain.message);
        let conflict = ApiError::new(ApiErrorKind::Conflict, "modified");
        let conflict = answered(merge(true), conflict);
        assert!(
            !conflict.message.contains("subresource"),
            "{}",
            conflict.message
        );
    }
}
