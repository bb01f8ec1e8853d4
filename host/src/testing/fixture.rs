//! The fixture format: one reconcile's world and what it should do, as a YAML (or JSON) file.
//!
//! ```yaml
//! name: a new WebApp gets its Deployment        # optional
//! now: 2026-01-01T00:00:00Z                     # the guest's wall clock; this when absent
//! objects:                                      # what the cache holds before the reconcile
//!   - {apiVersion: example.wasmop.dev/v1, kind: WebApp, metadata: {namespace: shop, name: web}, spec: {replicas: 2}}
//! request: {namespace: shop, name: web}         # a key of the plugin's primary kind
//! expect:
//!   outcome: done                               # done | requeue-after 30s | error; unchecked if absent
//!   writes:                                     # every write, in order; none if absent
//!     - {verb: apply, force: true, apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web, body: {...}}
//!   events:                                     # every event, in order; unchecked if absent
//!     - {type: Normal, reason: Created, message: Created Deployment shop/web, regarding: {apiVersion: example.wasmop.dev/v1, kind: WebApp, namespace: shop, name: web}}
//! ```
//!
//! A write's `verb` is `create`, `update`, `update-status`, `merge-patch`, `json-patch`, `apply`
//! or `delete`; a patch of the status subresource has `status: true`, a forced apply
//! `force: true`; `body` is the object or patch sent (a delete's preconditions and propagation).
//! A write with `rejected: {reason: Conflict, message: ...}` is answered with that error instead
//! of being applied (the n-th write to a target gets the n-th such answer), so a fixture can
//! show how a plugin handles a conflict or a refusal. A write with `redacted: true` (a recording's
//! write to a Secret, whose values it never keeps) is compared with the write sent redacted the
//! same way.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::testing::memory::RecordedWrite;
use crate::testing::outcome::check_outcome;
use wasmop_contract::imports::{
    ApiError, ApiErrorKind, DeleteOptions, DeniedBy, Event, EventType, Patch, Propagation, Write,
};
use wasmop_contract::object::{GroupVersionKind, ObjectRef};

/// The time a fixture's guest reads when the fixture names none: fixed, so that every run of a
/// reconcile that stamps a time writes the same.
pub const DEFAULT_NOW: &str = "2026-01-01T00:00:00Z";

/// A fixture file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The file could not be read.
    #[error("reading fixture {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a fixture.
    #[error("fixture {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        message: String,
    },
}

/// One reconcile: the objects cached before it, its request and what it should do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    /// What the fixture shows; the file's name stands in when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The time the guest's wall clock reads (RFC 3339); [`DEFAULT_NOW`] when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
    /// The objects in the cache (and the in-memory apiserver) before the reconcile.
    #[serde(default)]
    pub objects: Vec<Value>,
    /// The key reconciled, of the plugin's primary kind.
    pub request: Request,
    /// The writes and outcome expected.
    #[serde(default)]
    pub expect: Expected,
}

/// The key a fixture reconciles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Its namespace; empty for a cluster-scoped kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// What a reconcile should do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// `done`, `requeue-after <duration>` or `error`; not checked when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Every write, in the order sent.
    #[serde(default)]
    pub writes: Vec<FixtureWrite>,
    /// Every event, in the order recorded; not checked when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<FixtureEvent>>,
}

/// One event, as a fixture states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureEvent {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub event_type: FixtureEventType,
    /// Its short CamelCase reason.
    pub reason: String,
    /// Its sentence for people.
    pub message: String,
    /// The object it is about.
    pub regarding: Regarding,
}

/// Normal or Warning, as a fixture names an event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FixtureEventType {
    /// Something expected happened.
    Normal,
    /// Something needs attention.
    Warning,
}

/// The object an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Regarding {
    /// Its apiVersion.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace; empty for a cluster-scoped kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// What a write does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verb {
    /// Create the object in `body`.
    Create,
    /// Replace the object with `body`.
    Update,
    /// Replace its status with `body`'s.
    UpdateStatus,
    /// A JSON merge patch.
    MergePatch,
    /// A JSON patch.
    JsonPatch,
    /// A server-side apply of `body`.
    Apply,
    /// Delete the object.
    Delete,
}

/// One write, as a fixture states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FixtureWrite {
    /// What it does.
    pub verb: Verb,
    /// A patch of the status subresource.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub status: bool,
    /// An apply that takes conflicting fields.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// The target's apiVersion.
    pub api_version: String,
    /// The target's kind.
    pub kind: String,
    /// The target's namespace; empty for a cluster-scoped kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The target's name.
    pub name: String,
    /// The object or patch sent; a delete's options.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub body: Value,
    /// The error the apiserver answered it with, if it did; not compared, but given as the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Rejection>,
    /// A recording redacted it (a Secret's): the writes sent are redacted the same way before
    /// they are compared with it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// An error the apiserver answered a write with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rejection {
    /// Its reason: `Conflict`, `AlreadyExists`, `NotFound`, `Forbidden`, `Invalid`, `Timeout`,
    /// `ServiceUnavailable` or another.
    pub reason: String,
    /// Its message.
    #[serde(default)]
    pub message: String,
}

impl Rejection {
    /// The error it stands for.
    pub fn error(&self) -> ApiError {
        let kind = match self.reason.as_str() {
            "NotFound" => ApiErrorKind::NotFound,
            "Conflict" => ApiErrorKind::Conflict,
            "AlreadyExists" => ApiErrorKind::AlreadyExists,
            "Forbidden" => ApiErrorKind::Forbidden(DeniedBy::Apiserver),
            "Invalid" => ApiErrorKind::Invalid,
            "Timeout" => ApiErrorKind::Timeout,
            "ServiceUnavailable" => ApiErrorKind::Unavailable,
            _ => ApiErrorKind::Other,
        };
        ApiError::new(kind, self.message.clone())
    }
}

impl From<&ApiError> for Rejection {
    fn from(error: &ApiError) -> Self {
        Rejection {
            reason: error.reason.clone(),
            message: error.message.clone(),
        }
    }
}

impl Fixture {
    /// Reads the fixture in `path`.
    pub fn load(path: &Path) -> Result<Fixture, FixtureError> {
        let text = std::fs::read_to_string(path).map_err(|source| FixtureError::Read {
            path: path.to_owned(),
            source,
        })?;
        Fixture::parse(&text).map_err(|message| FixtureError::Invalid {
            path: path.to_owned(),
            message,
        })
    }

    /// Reads a fixture from YAML or JSON text.
    pub fn parse(text: &str) -> Result<Fixture, String> {
        let value = crate::config::yaml(text)?;
        let fixture: Fixture = serde_json::from_value(value).map_err(|e| e.to_string())?;
        if let Some(now) = &fixture.now {
            since_epoch(now).map_err(|e| format!("now: {e}"))?;
        }
        if let Some(outcome) = &fixture.expect.outcome {
            check_outcome(outcome).map_err(|e| format!("expect.outcome: {e}"))?;
        }
        for (index, object) in fixture.objects.iter().enumerate() {
            if object_ref(object).is_none() {
                return Err(format!(
                    "objects[{index}] has no apiVersion, kind or metadata.name"
                ));
            }
        }
        Ok(fixture)
    }

    /// The time its guest reads, after the epoch.
    pub fn now(&self) -> Duration {
        let now = self.now.as_deref().unwrap_or(DEFAULT_NOW);
        since_epoch(now).unwrap_or_default()
    }

    /// The fixture as YAML.
    pub fn to_yaml(&self) -> String {
        let yaml = serde_saphyr::to_string(self).unwrap_or_else(|e| format!("# not YAML: {e}"));
        format!("{}\n", yaml.trim_end())
    }
}

impl From<&RecordedWrite> for FixtureWrite {
    fn from(recorded: &RecordedWrite) -> Self {
        let target = &recorded.target;
        let (verb, status, force, body) = match &recorded.write {
            Write::Create(object) => (Verb::Create, false, false, object.clone()),
            Write::Update(object) => (Verb::Update, false, false, object.clone()),
            Write::UpdateStatus(object) => (Verb::UpdateStatus, false, false, object.clone()),
            Write::Patch { patch, status } => match patch {
                Patch::Merge(p) => (Verb::MergePatch, *status, false, p.clone()),
                Patch::Json(p) => (Verb::JsonPatch, *status, false, p.clone()),
                Patch::Apply { object, force } => (Verb::Apply, *status, *force, object.clone()),
            },
            Write::Delete(options) => (Verb::Delete, false, false, delete_body(options)),
        };
        FixtureWrite {
            verb,
            status,
            force,
            api_version: target.kind.api_version(),
            kind: target.kind.kind.clone(),
            namespace: target.key.namespace.clone(),
            name: target.key.name.clone(),
            body,
            rejected: recorded.rejected.as_ref().map(Rejection::from),
            redacted: false,
        }
    }
}

impl From<&Event> for FixtureEvent {
    fn from(event: &Event) -> Self {
        let regarding = &event.regarding;
        FixtureEvent {
            event_type: match event.event_type {
                EventType::Normal => FixtureEventType::Normal,
                EventType::Warning => FixtureEventType::Warning,
            },
            reason: event.reason.clone(),
            message: event.message.clone(),
            regarding: Regarding {
                api_version: regarding.kind.api_version(),
                kind: regarding.kind.kind.clone(),
                namespace: regarding.key.namespace.clone(),
                name: regarding.key.name.clone(),
            },
        }
    }
}

impl FixtureEvent {
    /// `type reason apiVersion kind namespace/name`, to name it in a report.
    pub fn target(&self) -> String {
        let Regarding {
            api_version,
            kind,
            namespace,
            name,
        } = &self.regarding;
        let kind_of = match self.event_type {
            FixtureEventType::Normal => "Normal",
            FixtureEventType::Warning => "Warning",
        };
        format!(
            "{kind_of} {} {api_version} {kind} {}",
            self.reason,
            key_text(namespace, name)
        )
    }
}

/// `namespace/name`, or `name` alone for a cluster-scoped object.
fn key_text(namespace: &str, name: &str) -> String {
    match namespace {
        "" => name.to_owned(),
        namespace => format!("{namespace}/{name}"),
    }
}

impl FixtureWrite {
    /// `verb apiVersion kind namespace/name`, to name it in a report.
    pub fn target(&self) -> String {
        let status = if self.status { " (status)" } else { "" };
        let verb = serde_json::to_value(self.verb).unwrap_or_default();
        let verb = verb.as_str().unwrap_or_default();
        let key = key_text(&self.namespace, &self.name);
        format!("{verb}{status} {} {} {key}", self.api_version, self.kind)
    }
}

/// `time` (RFC 3339) as the time after the epoch; times before it are refused.
fn since_epoch(time: &str) -> Result<Duration, String> {
    let stamp: k8s_openapi::jiff::Timestamp = time.parse().map_err(|e| format!("{e}"))?;
    let nanos = u128::try_from(stamp.as_nanosecond()).map_err(|_| "before 1970".to_owned())?;
    let nanos = u64::try_from(nanos).map_err(|_| "past 2554".to_owned())?;
    Ok(Duration::from_nanos(nanos))
}

/// The fixture files `paths` names: files as given, and each folder's `.yaml`, `.yml` and `.json`
/// files in name order.
pub fn fixture_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, FixtureError> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let entries = std::fs::read_dir(path).map_err(|source| FixtureError::Read {
            path: path.clone(),
            source,
        })?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|file| {
                let extension = file.extension().and_then(|e| e.to_str());
                matches!(extension, Some("yaml" | "yml" | "json"))
            })
            .collect();
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// A delete's options as its body: only those set.
fn delete_body(options: &DeleteOptions) -> Value {
    let mut body = serde_json::Map::new();
    if let Some(uid) = &options.uid {
        body.insert("uid".into(), json!(uid));
    }
    if let Some(version) = &options.resource_version {
        body.insert("resourceVersion".into(), json!(version));
    }
    if let Some(propagation) = options.propagation {
        let policy = match propagation {
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
            Propagation::Orphan => "Orphan",
        };
        body.insert("propagationPolicy".into(), json!(policy));
    }
    if body.is_empty() {
        Value::Null
    } else {
        Value::Object(body)
    }
}

/// The kind, namespace and name of `object`, if it has them.
pub(crate) fn object_ref(object: &Value) -> Option<ObjectRef> {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    let api_version = text("/apiVersion")?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = GroupVersionKind::gvk(group, version, text("/kind")?);
    let namespace = text("/metadata/namespace").unwrap_or_default();
    Some(ObjectRef::new(&kind, namespace, text("/metadata/name")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmop_contract::object::ObjectKey;

    const FIXTURE: &str = r#"
name: creates its Deployment
objects:
  - apiVersion: example.wasmop.dev/v1
    kind: WebApp
    metadata: {namespace: shop, name: web}
    spec: {replicas: 2}
request: {namespace: shop, name: web}
expect:
  outcome: requeue-after 30s
  writes:
    - verb: apply
      force: true
      apiVersion: apps/v1
      kind: Deployment
      namespace: shop
      name: web
      body: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop}}
"#;

    #[test]
    fn a_fixture_reads_back_from_its_own_yaml() {
        let fixture = Fixture::parse(FIXTURE).unwrap();
        assert_eq!(fixture.request.name, "web");
        assert_eq!(fixture.expect.writes[0].verb, Verb::Apply);
        assert!(fixture.expect.writes[0].force);
        assert_eq!(Fixture::parse(&fixture.to_yaml()).unwrap(), fixture);
    }

    #[test]
    fn unknown_fields_and_objects_without_names_are_refused() {
        let typo = FIXTURE.replace("writes:", "wrties:");
        assert!(Fixture::parse(&typo).unwrap_err().contains("wrties"));
        let nameless = FIXTURE.replace("metadata: {namespace: shop, name: web}", "metadata: {}");
        let error = Fixture::parse(&nameless).unwrap_err();
        assert!(error.contains("objects[0]"), "{error}");
    }

    #[test]
    fn recorded_writes_read_as_the_fixture_states_them() {
        let target = ObjectRef {
            kind: GroupVersionKind::gvk("", "v1", "ConfigMap"),
            key: ObjectKey::new("shop", "settings"),
        };
        let patch = RecordedWrite {
            target: target.clone(),
            write: Write::Patch {
                patch: Patch::Merge(json!({"status": {"ready": true}})),
                status: true,
            },
            rejected: None,
        };
        let write = FixtureWrite::from(&patch);
        assert_eq!(
            (write.verb, write.status, write.api_version.as_str()),
            (Verb::MergePatch, true, "v1")
        );
        assert_eq!(
            write.target(),
            "merge-patch (status) v1 ConfigMap shop/settings"
        );
        let delete = RecordedWrite {
            target,
            write: Write::Delete(DeleteOptions {
                propagation: Some(Propagation::Foreground),
                ..DeleteOptions::default()
            }),
            rejected: Some(ApiError::new(ApiErrorKind::NotFound, "gone")),
        };
        let delete = FixtureWrite::from(&delete);
        assert_eq!(delete.body, json!({"propagationPolicy": "Foreground"}));
        assert_eq!(
            delete.rejected.map(|r| r.reason).as_deref(),
            Some("NotFound")
        );
    }

    #[test]
    fn the_clock_reads_the_fixtures_time_or_a_fixed_one() {
        let mut fixture = Fixture::parse(FIXTURE).unwrap();
        assert_eq!(fixture.now(), Duration::from_secs(1_767_225_600));
        fixture.now = Some("2026-12-03T07:42:49.5Z".into());
        assert_eq!(fixture.now(), Duration::from_millis(1_796_283_769_500));
        let late = FIXTURE.replace("name: creates", "now: yesterday\nname: creates");
        assert!(Fixture::parse(&late).unwrap_err().starts_with("now: "));
    }

    #[test]
    fn rejections_read_back_as_the_errors_they_stand_for() {
        let conflict = ApiError::new(ApiErrorKind::Conflict, "stale");
        let rejection = Rejection::from(&conflict);
        assert_eq!(rejection.reason, "Conflict");
        assert_eq!(rejection.error(), conflict);
        let forbidden = Rejection {
            reason: "Forbidden".into(),
            message: String::new(),
        };
        let kind = forbidden.error().kind;
        assert_eq!(kind, ApiErrorKind::Forbidden(DeniedBy::Apiserver));
    }
}
