//! Recording reconciles as fixtures (`wasmop run --record DIR`): while a plugin reconciles a key,
//! every object its cache reads return (the first version of each) and every write it sends are
//! kept, and once it ends they become a fixture — those objects, the request, the wall clock at
//! its start, and the writes and outcome as expected — in `DIR/<plugin>/`. Replaying the folder
//! against a new version (`wasmop test --replay DIR`) shows every reconcile it would do
//! differently.
//!
//! Invariants: a Secret's `data` and `stringData` values never reach a file, read or written; a
//! recording holds at most [`MAX_RECORDED_BYTES`] of objects, and one that would hold more is
//! dropped with a warning rather than written incomplete.

use std::cell::RefCell;
use std::collections::HashSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::object::{ObjectKey, ObjectRef};
use crate::runtime::imports::{ApiError, Write};
use crate::runtime::{DispatchError, Outcome};
use crate::testing::fixture::{Expected, Fixture, FixtureWrite, Request, object_ref, outcome_text};
use crate::testing::memory::RecordedWrite;

/// The most JSON bytes of objects one recording keeps.
pub const MAX_RECORDED_BYTES: usize = 16 << 20;
/// What a Secret's `data` values become (base64 of `redacted`).
const REDACTED_DATA: &str = "cmVkYWN0ZWQ=";
/// What a Secret's `stringData` values become.
const REDACTED_TEXT: &str = "redacted";

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
    writes: Vec<RecordedWrite>,
}

/// Runs `call` (one reconcile), recording what it reads and writes from this task.
pub async fn recording<F: Future>(call: F) -> (F::Output, Recording) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let start = RefCell::new(Recording {
        now,
        ..Recording::default()
    });
    RECORDING
        .scope(start, async {
            let output = call.await;
            (output, RECORDING.with(RefCell::take))
        })
        .await
}

/// Notes an object a cache read returned, when a recording is under way in this task.
pub(crate) fn read(json: &str) {
    let _ = RECORDING.try_with(|recording| recording.borrow_mut().read(json));
}

/// Notes a write about to be sent, when a recording is under way in this task.
pub(crate) fn wrote(target: &ObjectRef, write: &Write) {
    let _ = RECORDING.try_with(|recording| {
        recording.borrow_mut().writes.push(RecordedWrite {
            target: target.clone(),
            write: write.clone(),
            rejected: None,
        });
    });
}

/// Notes the error the write noted last was answered with (a guest's writes are sequential).
pub(crate) fn rejected(error: &ApiError) {
    let _ = RECORDING.try_with(|recording| {
        if let Some(last) = recording.borrow_mut().writes.last_mut() {
            last.rejected = Some(error.clone());
        }
    });
}

impl Recording {
    fn read(&mut self, json: &str) {
        if self.overflowed {
            return;
        }
        let Ok(object) = serde_json::from_str::<Value>(json) else {
            return;
        };
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
        let mut objects = self.objects;
        objects.iter_mut().for_each(redact_object);
        let mut writes: Vec<FixtureWrite> = self.writes.iter().map(Into::into).collect();
        writes.iter_mut().for_each(redact_write);
        let now = k8s_openapi::jiff::Timestamp::from_duration(self.now.try_into().ok()?).ok()?;
        Some(Fixture {
            name: Some(format!("{plugin} reconciling {key}")),
            now: Some(now.to_string()),
            objects,
            request: Request {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            },
            expect: Expected {
                outcome: Some(outcome_text(result)),
                writes,
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
        let folder = Recorder::folder(&self.root, plugin);
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "{number:08}-{}-{}.yaml",
            file_part(&key.namespace),
            file_part(&key.name)
        );
        let written = async {
            tokio::fs::create_dir_all(&folder).await?;
            tokio::fs::write(folder.join(&name), fixture.to_yaml()).await
        };
        if let Err(error) = written.await {
            tracing::warn!(plugin, %key, "recording to {} failed: {error}", folder.display());
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

fn redact_object(object: &mut Value) {
    let text = |field: &str| object[field].as_str().unwrap_or_default().to_owned();
    if is_secret(&text("apiVersion"), &text("kind")) {
        redact_fields(object);
    }
}

fn redact_write(write: &mut FixtureWrite) {
    if !is_secret(&write.api_version, &write.kind) {
        return;
    }
    match &mut write.body {
        Value::Array(operations) => {
            for operation in operations {
                let path = operation["path"].as_str().unwrap_or_default();
                if path.starts_with("/data") || path.starts_with("/stringData") {
                    operation["value"] = Value::String(REDACTED_TEXT.to_owned());
                }
            }
        }
        body => redact_fields(body),
    }
}

/// Replaces every value under `data` and `stringData` of `object`.
fn redact_fields(object: &mut Value) {
    for (field, redacted) in [("data", REDACTED_DATA), ("stringData", REDACTED_TEXT)] {
        if let Some(values) = object.get_mut(field).and_then(Value::as_object_mut) {
            for value in values.values_mut() {
                *value = Value::String(redacted.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::object::GroupVersionKind;
    use crate::runtime::imports::{ApiErrorKind, Patch};

    fn secret_ref() -> ObjectRef {
        ObjectRef::new(&GroupVersionKind::gvk("", "v1", "Secret"), "shop", "db")
    }

    #[tokio::test]
    async fn a_recording_keeps_first_reads_and_every_write_with_secrets_redacted() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "shop", "name": "db"}, "data": {"password": "aHVudGVyMg=="}});
        let app = json!({"apiVersion": "example.wasmop.dev/v1", "kind": "App", "metadata": {"namespace": "shop", "name": "web"}});
        let (done, recording) = recording(async {
            read(&secret.to_string());
            read(&app.to_string());
            let mut changed = app.clone();
            changed["spec"] = json!({"replicas": 9});
            read(&changed.to_string());
            let patch = Patch::Merge(json!({"stringData": {"password": "hunter2"}}));
            let write = Write::Patch {
                patch,
                status: false,
            };
            wrote(&secret_ref(), &write);
            rejected(&ApiError::new(ApiErrorKind::Conflict, "stale"));
            "done"
        })
        .await;
        assert_eq!(done, "done");
        let key = ObjectKey::new("shop", "web");
        let fixture = recording.fixture("app", &key, &Ok(Outcome::Done)).unwrap();
        assert_eq!(fixture.objects.len(), 2);
        assert_eq!(fixture.objects[0]["data"]["password"], REDACTED_DATA);
        assert_eq!(fixture.objects[1], app);
        let body = &fixture.expect.writes[0].body;
        assert_eq!(body, &json!({"stringData": {"password": REDACTED_TEXT}}));
        let rejection = fixture.expect.writes[0].rejected.as_ref().unwrap();
        assert_eq!(rejection.reason, "Conflict");
        assert!(!fixture.to_yaml().contains("hunter2"));
        assert!(!fixture.to_yaml().contains("aHVudGVyMg=="));
        assert_eq!(fixture.expect.outcome.as_deref(), Some("done"));
    }

    #[tokio::test]
    async fn another_tasks_reads_and_writes_are_not_kept() {
        let (_, recording) = recording(async {
            tokio::spawn(async {
                read(r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}"#);
                wrote(&secret_ref(), &Write::Delete(Default::default()));
            })
            .await
            .unwrap();
        })
        .await;
        assert!(recording.objects.is_empty() && recording.writes.is_empty());
    }

    #[tokio::test]
    async fn a_recording_over_its_bound_is_dropped() {
        let big = "x".repeat(1 << 20);
        let (_, recording) = recording(async {
            for i in 0..20 {
                let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}, "data": {"k": big}});
                read(&object.to_string());
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
