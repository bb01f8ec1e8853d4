//! Recording reconciles as fixtures (`wasmop run --record DIR`): while a plugin reconciles a key,
//! every object its cache reads return (the first version of each) and every write it sends, with
//! the apiserver's answer, are kept, and once it ends they become a fixture — those objects, the
//! request, the wall clock at its start, and the writes and outcome as expected — in
//! `DIR/<plugin>/`. Replaying the folder against a new version (`wasmop test --replay DIR`) shows
//! every reconcile it would do differently.
//!
//! Invariants: nothing of a Secret's content reaches a recording, read or written, whatever field,
//! annotation or patch carries it — a Secret is kept as [`redact_secret`] rebuilds it from the
//! parts that are not secret, as it is read or once its write is answered (refused or not), so
//! the recording never holds it in the clear; a recording holds at most [`MAX_RECORDED_BYTES`] of
//! objects, and one that would hold more is dropped with a warning rather than written
//! incomplete.
//!
//! Webhook calls are recorded the same way, at the webhook server's seam ([`review`]).
//!
//! Imports: the contract, `fixture`, `runtime` and `webhook` (whose seams,
//! [`crate::runtime::Wrap`] and [`crate::webhook::AroundReview`], it is installed at); never
//! `testing`, which replays what it writes.

use std::cell::RefCell;
use std::collections::HashSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::fixture::{
    Expected, Fixture, FixtureEvent, FixtureWrite, RecordedWrite, Rejection, Request, Verb,
    object_ref,
};
use crate::runtime::{DispatchError, Outcome};
use wasmop_contract::imports::{ApiError, Event, Write};
use wasmop_contract::object::{GroupVersionKind, ObjectKey, ObjectRef};

mod outcome;
mod review;
mod wrap;

pub use outcome::outcome_text;

/// The most JSON bytes of objects one recording keeps.
pub const MAX_RECORDED_BYTES: usize = 16 << 20;
/// What a Secret's `data` values become (base64 of `redacted`).
const REDACTED_DATA: &str = "cmVkYWN0ZWQ=";
/// What every other value of a Secret becomes: `stringData` and annotation values, patch values,
/// the message of a refused write.
const REDACTED_TEXT: &str = "redacted";
/// The metadata of a Secret a recording keeps as it is.
const KEPT_METADATA: [&str; 5] = ["name", "namespace", "uid", "resourceVersion", "labels"];

tokio::task_local! {
    static RECORDING: RefCell<Recording>;
}

/// Numbers the files of every recording in this process, so names sort in the order reconciles
/// ended.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// What one reconcile read and wrote.
#[derive(Debug, Default)]
pub struct Recording {
    now: Duration,
    objects: Vec<Value>,
    seen: HashSet<ObjectRef>,
    bytes: usize,
    overflowed: bool,
    writes: Vec<FixtureWrite>,
    events: Vec<FixtureEvent>,
}

/// Runs `call` (one reconcile), recording what it reads and writes from this task; the guests it
/// runs read the wall clock frozen at the instant the recording keeps, so a replay stamps alike.
pub async fn recording<F: Future>(call: F) -> (F::Output, Recording) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let start = RefCell::new(Recording {
        now,
        ..Recording::default()
    });
    let call = crate::runtime::frozen_at(now, call);
    RECORDING
        .scope(start, async {
            let output = call.await;
            (output, RECORDING.with(RefCell::take))
        })
        .await
}

/// Notes an object of `kind` a cache read returned, when a recording is under way in this task.
pub(crate) fn read(kind: &GroupVersionKind, json: &str) {
    let _ = RECORDING.try_with(|recording| recording.borrow_mut().read(kind, json));
}

/// A copy of `write` to note once it is answered, when a recording is under way in this task.
pub(crate) fn copy(write: &Write) -> Option<Write> {
    RECORDING.try_with(|_| write.clone()).ok()
}

/// Notes `write` (a [`copy`]) to `target` with the apiserver's answer, the error it `rejected`
/// it with if any, redacted if it is a Secret's.
pub(crate) fn wrote(target: &ObjectRef, write: Option<Write>, rejected: Option<&ApiError>) {
    let Some(write) = write else {
        return;
    };
    let recorded = RecordedWrite {
        target: target.clone(),
        write,
        rejected: rejected.cloned(),
    };
    let mut write = FixtureWrite::from(&recorded);
    drop(recorded);
    redact_write(&mut write);
    let _ = RECORDING.try_with(|recording| recording.borrow_mut().writes.push(write));
}

/// Notes `event`, which the plugin's reconcile emitted, when a recording is under way in this
/// task.
pub(crate) fn event(event: &Event) {
    let _ = RECORDING.try_with(|recording| recording.borrow_mut().events.push(event.into()));
}

impl Recording {
    fn read(&mut self, kind: &GroupVersionKind, json: &str) {
        if self.overflowed {
            return;
        }
        let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(json) else {
            return;
        };
        // Objects a list returned carry no apiVersion and kind: the read's own kind says them
        // (and says whether the object is a Secret, whatever its JSON claims).
        fields.insert("apiVersion".to_owned(), Value::String(kind.api_version()));
        fields.insert("kind".to_owned(), Value::String(kind.kind.clone()));
        let mut object = Value::Object(fields);
        redact_object(&mut object);
        let Some(target) = object_ref(&object) else {
            return;
        };
        if !self.seen.insert(target) {
            return;
        }
        self.bytes += json.len();
        self.overflowed = self.bytes > MAX_RECORDED_BYTES;
        self.objects.push(object);
    }

    /// The fixture of this reconcile of `key`, which ended with `result`; `None` when it read
    /// more than a recording keeps.
    pub fn fixture(
        self,
        plugin: &str,
        key: &ObjectKey,
        result: &Result<Outcome, DispatchError>,
    ) -> Option<Fixture> {
        if self.overflowed {
            return None;
        }
        let (objects, writes, events) = (self.objects, self.writes, self.events);
        let now = k8s_openapi::jiff::Timestamp::from_duration(self.now.try_into().ok()?).ok()?;
        Some(Fixture {
            name: Some(format!("{plugin} reconciling {key}")),
            now: Some(now.to_string()),
            objects,
            request: Some(Request {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            }),
            validate: None,
            default: None,
            convert: None,
            expect: Expected {
                outcome: Some(outcome_text(result)),
                writes,
                events: Some(events),
                ..Expected::default()
            },
        })
    }
}

/// Where recordings go: one folder per plugin under a root.
#[derive(Debug, Clone)]
pub struct Recorder {
    root: PathBuf,
}

impl Recorder {
    /// Records under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Recorder { root: root.into() }
    }

    /// The folder of `plugin`'s recordings.
    pub fn folder(root: &Path, plugin: &str) -> PathBuf {
        root.join(file_part(plugin))
    }

    /// Writes `recording` of `plugin`'s reconcile of `key` as a fixture file; a failure is
    /// logged, never the reconcile's.
    pub async fn save(
        &self,
        plugin: &str,
        key: &ObjectKey,
        recording: Recording,
        result: &Result<Outcome, DispatchError>,
    ) {
        let Some(fixture) = recording.fixture(plugin, key, result) else {
            tracing::warn!(plugin, %key, "not recorded: the reconcile read over {MAX_RECORDED_BYTES} bytes of objects");
            return;
        };
        let name = format!("{}-{}", file_part(&key.namespace), file_part(&key.name));
        self.store(plugin, &name, &fixture).await;
    }

    /// Writes `fixture` of `plugin` as the next file of its folder, its name ending in `name`; a
    /// failure is logged.
    async fn store(&self, plugin: &str, name: &str, fixture: &Fixture) {
        let folder = Recorder::folder(&self.root, plugin);
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        let file = folder.join(format!("{number:08}-{name}.yaml"));
        let written = async {
            tokio::fs::create_dir_all(&folder).await?;
            tokio::fs::write(&file, fixture.to_yaml()).await
        };
        if let Err(error) = written.await {
            tracing::warn!(plugin, "recording to {} failed: {error}", file.display());
        }
    }
}

/// `text` with every character but ASCII letters, digits, `-` and `.` made `_`, and a leading
/// `.` too, so it names a file inside its folder.
fn file_part(text: &str) -> String {
    let part: String = text
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '.' => c,
            _ => '_',
        })
        .collect();
    match part.strip_prefix('.') {
        Some(rest) => format!("_{rest}"),
        None => part,
    }
}

/// Whether `api_version` and `kind` name the core Secret.
fn is_secret(api_version: &str, kind: &str) -> bool {
    api_version == "v1" && kind == "Secret"
}

/// `object` as a recording keeps it: a Secret as [`redact_secret`] rebuilds it.
fn redact_object(object: &mut Value) {
    let text = |field: &str| object[field].as_str().unwrap_or_default().to_owned();
    if is_secret(&text("apiVersion"), &text("kind")) {
        *object = redact_secret(object);
    }
}

/// `write` as a recording keeps it: a write to a Secret with every value of its body redacted
/// (an object or merge patch rebuilt by [`redact_secret`], each JSON patch operation's value,
/// anything else whole; a delete's options, which hold no content, kept) and the message of its
/// rejection too, marked `redacted` so that a replay compares what the plugin sends redacted the
/// same way. Other writes are kept as they are.
pub(crate) fn redact_write(write: &mut FixtureWrite) {
    if !is_secret(&write.api_version, &write.kind) {
        return;
    }
    write.redacted = true;
    if let Some(rejection) = &mut write.rejected {
        *rejection = Rejection {
            reason: rejection.reason.clone(),
            message: REDACTED_TEXT.to_owned(),
        };
    }
    if write.verb == Verb::Delete {
        return;
    }
    write.body = match &write.body {
        Value::Array(operations) => operations.iter().map(redact_operation).collect(),
        Value::Object(_) => redact_secret(&write.body),
        _ => Value::String(REDACTED_TEXT.to_owned()),
    };
}

/// A JSON patch operation with its `op`, `path` and `from` kept and its `value`, if any,
/// redacted.
fn redact_operation(operation: &Value) -> Value {
    let mut kept = Map::new();
    for field in ["op", "path", "from"] {
        if let Some(text) = operation.get(field).and_then(Value::as_str) {
            kept.insert(field.to_owned(), Value::String(text.to_owned()));
        }
    }
    if operation.get("value").is_some() {
        kept.insert("value".to_owned(), Value::String(REDACTED_TEXT.to_owned()));
    }
    Value::Object(kept)
}

/// A Secret (or a patch of one) rebuilt from what is not secret: its `apiVersion`, `kind` and
/// `type`, the [`KEPT_METADATA`] of its metadata, and the keys of its annotations, `data` and
/// `stringData`, each with its value redacted. Nothing else of it is carried over.
pub(crate) fn redact_secret(secret: &Value) -> Value {
    let mut kept = Map::new();
    for field in ["apiVersion", "kind", "type"] {
        if let Some(text) = secret.get(field).and_then(Value::as_str) {
            kept.insert(field.to_owned(), Value::String(text.to_owned()));
        }
    }
    let keys = |map: Option<&Value>, redacted: &str| -> Option<Value> {
        let map = map?.as_object()?;
        let keys = map
            .keys()
            .map(|k| (k.clone(), Value::String(redacted.to_owned())));
        Some(Value::Object(keys.collect()))
    };
    if let Some(metadata) = secret.get("metadata").and_then(Value::as_object) {
        let mut meta = Map::new();
        for field in KEPT_METADATA {
            if let Some(value) = metadata.get(field).filter(|v| plain(field, v)) {
                meta.insert(field.to_owned(), value.clone());
            }
        }
        if let Some(annotations) = keys(metadata.get("annotations"), REDACTED_TEXT) {
            meta.insert("annotations".to_owned(), annotations);
        }
        kept.insert("metadata".to_owned(), Value::Object(meta));
    }
    for (field, redacted) in [("data", REDACTED_DATA), ("stringData", REDACTED_TEXT)] {
        if let Some(values) = keys(secret.get(field), redacted) {
            kept.insert(field.to_owned(), values);
        }
    }
    Value::Object(kept)
}

/// Whether `value` is what the kept metadata `field` of a Secret may be: labels a map of
/// strings, the others a string. Anything else there is dropped.
fn plain(field: &str, value: &Value) -> bool {
    match (field, value) {
        ("labels", Value::Object(labels)) => labels.values().all(Value::is_string),
        ("labels", _) => false,
        (_, value) => value.is_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use wasmop_contract::imports::{ApiErrorKind, EventType, Patch};

    fn secret_ref() -> ObjectRef {
        ObjectRef::new(&GroupVersionKind::gvk("", "v1", "Secret"), "shop", "db")
    }

    /// The password every test Secret holds, in the clear and in base64.
    const PASSWORD: &str = "hunter2";
    const PASSWORD_BASE64: &str = "aHVudGVyMg==";

    /// A Secret as `kubectl apply` leaves it: its whole manifest, password included, in the
    /// last-applied annotation.
    fn applied_secret() -> Value {
        let manifest = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "shop", "name": "db"}, "stringData": {"password": PASSWORD}});
        json!({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {
                "namespace": "shop", "name": "db", "uid": "u-1", "resourceVersion": "7",
                "labels": {"app": "shop"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": manifest.to_string()},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:data": {"f:password": {}}}}],
            },
            "data": {"password": PASSWORD_BASE64},
        })
    }

    /// Notes `object` as a cache read of its own kind returns it.
    fn read_value(object: &Value) {
        let api_version = object["apiVersion"].as_str().unwrap();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let kind = GroupVersionKind::gvk(group, version, object["kind"].as_str().unwrap());
        read(&kind, &object.to_string());
    }

    /// Sends `write` to the Secret as `host.rs` does: copied before, noted with its answer.
    fn send(write: Write, answer: Option<ApiError>) {
        let copy = copy(&write);
        drop(write);
        wrote(&secret_ref(), copy, answer.as_ref());
    }

    /// The fixture of what `call` read and wrote.
    async fn recorded(call: impl Future<Output = ()>) -> Fixture {
        let ((), recording) = recording(call).await;
        let key = ObjectKey::new("shop", "web");
        recording.fixture("app", &key, &Ok(Outcome::Done)).unwrap()
    }

    fn assert_no_secret(fixture: &Fixture) {
        let text = fixture.to_yaml();
        for secret in [PASSWORD, PASSWORD_BASE64] {
            assert!(!text.contains(secret), "{secret} recorded:\n{text}");
        }
    }

    #[tokio::test]
    async fn a_recording_keeps_first_reads_and_every_write_with_secrets_redacted() {
        let app = json!({"apiVersion": "example.wasmop.dev/v1", "kind": "App", "metadata": {"namespace": "shop", "name": "web"}});
        let fixture = recorded(async {
            read_value(&applied_secret());
            read_value(&app);
            let mut changed = app.clone();
            changed["spec"] = json!({"replicas": 9});
            read_value(&changed);
            let patch = Patch::Merge(json!({"stringData": {"password": PASSWORD}}));
            let write = Write::Patch {
                patch,
                status: false,
            };
            send(write, Some(ApiError::new(ApiErrorKind::Conflict, "stale")));
        })
        .await;
        assert_eq!(fixture.objects.len(), 2);
        assert_eq!(fixture.objects[0]["data"]["password"], REDACTED_DATA);
        assert_eq!(fixture.objects[1], app);
        let body = &fixture.expect.writes[0].body;
        assert_eq!(body, &json!({"stringData": {"password": REDACTED_TEXT}}));
        let rejection = fixture.expect.writes[0].rejected.as_ref().unwrap();
        assert_eq!(rejection.reason, "Conflict");
        assert_no_secret(&fixture);
        assert_eq!(fixture.expect.outcome.as_deref(), Some("done"));
    }

    #[tokio::test]
    async fn a_recording_expects_the_events_the_reconcile_emitted() {
        let web = ObjectRef::new(
            &GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "shop",
            "web",
        );
        let fixture = recorded(async {
            event(&Event {
                regarding: web.clone(),
                uid: String::new(),
                event_type: EventType::Warning,
                reason: "Stuck".into(),
                message: "0/2 ready".into(),
                reconcile_id: None,
            })
        })
        .await;
        let events = fixture.expect.events.as_deref().unwrap_or_default();
        let targets: Vec<String> = events.iter().map(FixtureEvent::target).collect();
        assert_eq!(targets, ["Warning Stuck apps/v1 Deployment shop/web"]);
        assert_eq!(events[0].message, "0/2 ready");
        let nothing = recorded(async {}).await;
        assert_eq!(nothing.expect.events, Some(Vec::new()));
    }

    #[tokio::test]
    async fn a_secret_read_keeps_its_names_and_keys_alone() {
        let fixture = recorded(async { read_value(&applied_secret()) }).await;
        assert_no_secret(&fixture);
        let redacted = json!({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {
                "namespace": "shop", "name": "db", "uid": "u-1", "resourceVersion": "7",
                "labels": {"app": "shop"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": REDACTED_TEXT},
            },
            "data": {"password": REDACTED_DATA},
        });
        assert_eq!(fixture.objects, [redacted]);
    }

    #[tokio::test]
    async fn a_listed_secret_without_its_kind_is_redacted_by_the_kind_read() {
        let mut listed = applied_secret();
        let fields = listed.as_object_mut().unwrap();
        fields.remove("apiVersion");
        fields.remove("kind");
        let secret = GroupVersionKind::gvk("", "v1", "Secret");
        let fixture = recorded(async { read(&secret, &listed.to_string()) }).await;
        assert_no_secret(&fixture);
        assert_eq!(fixture.objects.len(), 1);
        assert_eq!(fixture.objects[0]["kind"], "Secret");
        assert_eq!(fixture.objects[0]["data"]["password"], REDACTED_DATA);
    }

    #[tokio::test]
    async fn every_write_to_a_secret_is_redacted_whatever_carries_it() {
        let whole = json!([
            {"op": "replace", "path": "", "value": applied_secret()},
            {"op": "add", "path": "/data/password", "value": PASSWORD_BASE64},
            {"op": "test", "path": "/metadata/annotations", "value": {"note": PASSWORD}},
            {"op": "copy", "from": "/data/password", "path": "/data/copy"},
        ]);
        let mut annotated = applied_secret();
        annotated["metadata"]["name"] = json!({"hidden": PASSWORD});
        annotated["spec"] = json!({"password": PASSWORD});
        let fixture = recorded(async {
            let patch = |patch| Write::Patch {
                patch,
                status: false,
            };
            send(patch(Patch::Json(whole.clone())), None);
            send(patch(Patch::Merge(annotated.clone())), None);
            let apply = Patch::Apply {
                object: applied_secret(),
                force: true,
            };
            send(patch(apply), None);
            send(Write::Create(applied_secret()), None);
            send(Write::Update(applied_secret()), None);
            send(Write::Delete(Default::default()), None);
        })
        .await;
        assert_no_secret(&fixture);
        let writes = &fixture.expect.writes;
        assert_eq!(writes.len(), 6);
        assert!(writes.iter().all(|w| w.redacted));
        assert_eq!(
            writes[0].body,
            json!([
                {"op": "replace", "path": "", "value": REDACTED_TEXT},
                {"op": "add", "path": "/data/password", "value": REDACTED_TEXT},
                {"op": "test", "path": "/metadata/annotations", "value": REDACTED_TEXT},
                {"op": "copy", "from": "/data/password", "path": "/data/copy"},
            ])
        );
        let merged = &writes[1].body;
        assert!(merged.get("spec").is_none(), "{merged}");
        assert!(merged["metadata"].get("name").is_none(), "{merged}");
        assert_eq!(writes[2].body, writes[3].body);
    }

    #[tokio::test]
    async fn a_refused_write_is_noted_with_its_answer_and_redacted_the_same() {
        let fixture = recorded(async {
            let echoed = format!("Secret \"db\" is invalid: data[password]: {PASSWORD}");
            let invalid = ApiError::new(ApiErrorKind::Invalid, echoed);
            send(Write::Create(applied_secret()), Some(invalid));
        })
        .await;
        assert_no_secret(&fixture);
        let rejection = fixture.expect.writes[0].rejected.as_ref().unwrap();
        assert_eq!(
            (rejection.reason.as_str(), rejection.message.as_str()),
            ("Invalid", REDACTED_TEXT)
        );
    }

    #[tokio::test]
    async fn another_tasks_reads_and_writes_are_not_kept() {
        let (_, recording) = recording(async {
            tokio::spawn(async {
                read_value(
                    &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
                );
                send(Write::Delete(Default::default()), None);
            })
            .await
            .unwrap();
        })
        .await;
        assert!(recording.objects.is_empty() && recording.writes.is_empty());
    }

    #[tokio::test]
    async fn guests_read_the_instant_the_recording_keeps_however_long_they_run() {
        use wasmtime_wasi::HostWallClock;
        let (read, recording) = recording(async {
            tokio::time::sleep(Duration::from_millis(1_100)).await;
            crate::runtime::HostClock.now()
        })
        .await;
        assert_eq!(read, recording.now);
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        assert!(since - read >= Duration::from_secs(1));
    }

    #[tokio::test]
    async fn a_recording_over_its_bound_is_dropped() {
        let big = "x".repeat(1 << 20);
        let (_, recording) = recording(async {
            for i in 0..20 {
                let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}, "data": {"k": big}});
                read_value(&object);
            }
        })
        .await;
        let key = ObjectKey::new("", "c0");
        assert!(recording.fixture("big", &key, &Ok(Outcome::Done)).is_none());
    }

    #[test]
    fn names_become_file_names_inside_their_folder() {
        assert_eq!(file_part("web-1.shop"), "web-1.shop");
        assert_eq!(file_part("../etc/passwd"), "_._etc_passwd");
        assert_eq!(file_part(".hidden"), "_hidden");
    }
}
