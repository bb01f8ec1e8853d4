//! kube-apiserver's audit log: every request a control plane answered, who made it and how it was
//! answered, read back as [`AuditEvent`]s.
//!
//! Each control plane logs at level `Metadata` (no bodies), without the `RequestReceived` stage,
//! to `audit.log` in its directory, in batch mode so that requests never wait for the log (events
//! are dropped only if 100,000 wait to be written). An event therefore appears a few tens of
//! milliseconds after its response; poll for it. The log rotates at [`MAX_MEGABYTES`] keeping one
//! old file, which [`AuditLog`] does not read.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;

use crate::Error;

/// The size in megabytes at which the log rotates: several hundred thousand events.
const MAX_MEGABYTES: u32 = 512;

/// The audit policy every control plane runs with.
const POLICY: &str = "\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
";

/// Writes the audit policy into `dir`; returns kube-apiserver's flags logging to `dir/audit.log`.
pub(crate) fn configure(dir: &Path) -> Result<Vec<String>, Error> {
    let policy = dir.join("audit-policy.yaml");
    std::fs::write(&policy, POLICY).map_err(Error::io("writing the audit policy"))?;
    Ok(vec![
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", log_path(dir).display()),
        format!("--audit-log-maxsize={MAX_MEGABYTES}"),
        "--audit-log-maxbackup=1".into(),
        "--audit-log-mode=batch".into(),
        "--audit-log-batch-buffer-size=100000".into(),
        "--audit-log-batch-max-size=100".into(),
        "--audit-log-batch-max-wait=20ms".into(),
    ])
}

/// Where the control plane in `dir` writes its audit log.
pub(crate) fn log_path(dir: &Path) -> PathBuf {
    dir.join("audit.log")
}

/// One audit event: a request at one stage (`ResponseComplete`, or `ResponseStarted` for a watch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEvent {
    /// Who made the request (`user.username`, e.g. `system:serviceaccount:ns:name`).
    pub user: String,
    /// Whom it impersonated (`impersonatedUser.username`); empty when nobody.
    pub impersonated: String,
    /// The request's verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, ….
    pub verb: String,
    /// The resource (`objectRef.resource`, e.g. `services`); empty for non-resource URLs.
    pub resource: String,
    /// The subresource (`status`, …); empty when none.
    pub subresource: String,
    /// The object's namespace; empty when cluster-scoped or across namespaces.
    pub namespace: String,
    /// The object's name; empty for lists, watches and creates by POST.
    pub name: String,
    /// The HTTP status code of the response (`responseStatus.code`), when it had one.
    pub code: Option<u16>,
    /// Why a request failed (`responseStatus.reason`: `Conflict`, `AlreadyExists`,
    /// `Forbidden`, …); empty on success.
    pub reason: String,
    /// The client's `User-Agent`.
    pub user_agent: String,
    /// The stage this event records (`ResponseComplete`, `ResponseStarted`, `Panic`).
    pub stage: String,
    /// When the request reached this stage.
    pub stage_timestamp: Timestamp,
}

impl AuditEvent {
    /// Whether the request changed (or tried to change) an object.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }
}

/// A reader of a control plane's audit log that remembers how far it read.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    offset: u64,
}

impl AuditLog {
    /// A reader of the log at `path` from its beginning.
    pub(crate) fn new(path: PathBuf) -> Self {
        AuditLog { path, offset: 0 }
    }

    /// The events logged since the previous read (since the start on the first), oldest first.
    /// A line still being written is left for the next read; after a rotation, reading restarts
    /// at the new file's beginning.
    pub fn read_new(&mut self) -> Result<Vec<AuditEvent>, Error> {
        let context = || format!("reading the audit log {}", self.path.display());
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(context())(e)),
        };
        let length = file.metadata().map_err(Error::io(context()))?.len();
        let mut offset = if length < self.offset { 0 } else { self.offset };
        let mut reader = BufReader::with_capacity(1 << 18, file);
        reader
            .seek(SeekFrom::Start(offset))
            .map_err(Error::io(context()))?;
        let mut events = Vec::new();
        let mut line = Vec::with_capacity(2048);
        loop {
            line.clear();
            let read = reader
                .read_until(b'\n', &mut line)
                .map_err(Error::io(context()))?;
            if read == 0 || line.last() != Some(&b'\n') {
                self.offset = offset;
                return Ok(events);
            }
            let raw: RawEvent = serde_json::from_slice(&line).map_err(|e| Error::Audit {
                path: self.path.clone(),
                offset,
                reason: e.to_string(),
            })?;
            events.push(raw.into());
            offset += read as u64;
        }
    }
}

/// The fields of an `audit.k8s.io/v1` Event that [`AuditEvent`] keeps; serde skips the rest.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEvent {
    stage: String,
    verb: String,
    #[serde(default)]
    user: RawUser,
    #[serde(default)]
    impersonated_user: RawUser,
    #[serde(default)]
    user_agent: String,
    #[serde(default)]
    object_ref: RawObjectRef,
    response_status: Option<RawStatus>,
    stage_timestamp: Timestamp,
}

#[derive(Default, Deserialize)]
struct RawUser {
    #[serde(default)]
    username: String,
}

#[derive(Default, Deserialize)]
struct RawObjectRef {
    #[serde(default)]
    resource: String,
    #[serde(default)]
    subresource: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct RawStatus {
    code: Option<u16>,
    #[serde(default)]
    reason: String,
}

impl From<RawEvent> for AuditEvent {
    fn from(raw: RawEvent) -> Self {
        let object = raw.object_ref;
        let (code, reason) = raw
            .response_status
            .map_or((None, String::new()), |s| (s.code, s.reason));
        AuditEvent {
            user: raw.user.username,
            impersonated: raw.impersonated_user.username,
            verb: raw.verb,
            resource: object.resource,
            subresource: object.subresource,
            namespace: object.namespace,
            name: object.name,
            code,
            reason,
            user_agent: raw.user_agent,
            stage: raw.stage,
            stage_timestamp: raw.stage_timestamp,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const CONFLICT: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/apis/example.wasmop.dev/v1alpha1/namespaces/ns/webapps/shop","verb":"update","user":{"username":"system:serviceaccount:ns:wasmop","groups":["system:serviceaccounts"]},"sourceIPs":["127.0.0.1"],"userAgent":"webapp/v0.0.0","objectRef":{"resource":"webapps","namespace":"ns","name":"shop","apiGroup":"example.wasmop.dev","apiVersion":"v1alpha1"},"responseStatus":{"metadata":{},"status":"Failure","message":"conflict","reason":"Conflict","code":409},"requestReceivedTimestamp":"2026-01-02T03:04:05.123456Z","stageTimestamp":"2026-01-02T03:04:05.125000Z"}"#;
    const READYZ: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a2","stage":"ResponseComplete","requestURI":"/readyz","verb":"get","user":{"username":"admin"},"responseStatus":{"metadata":{},"code":200},"stageTimestamp":"2026-01-02T03:04:06.000001Z"}"#;

    #[test]
    fn events_are_read_once_each_and_a_partial_line_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = log_path(dir.path());
        let mut log = AuditLog::new(path.clone());
        assert_eq!(log.read_new().unwrap(), []);
        let mut file = std::fs::File::create(&path).unwrap();
        write!(file, "{CONFLICT}\n{}", &READYZ[..40]).unwrap();

        let events = log.read_new().unwrap();
        assert_eq!(events.len(), 1);
        let conflict = &events[0];
        assert_eq!(
            (conflict.user.as_str(), conflict.verb.as_str()),
            ("system:serviceaccount:ns:wasmop", "update")
        );
        assert_eq!(
            (conflict.resource.as_str(), conflict.subresource.as_str()),
            ("webapps", "")
        );
        assert_eq!(
            (conflict.namespace.as_str(), conflict.name.as_str()),
            ("ns", "shop")
        );
        assert_eq!(
            (conflict.code, conflict.reason.as_str()),
            (Some(409), "Conflict")
        );
        assert_eq!(conflict.user_agent, "webapp/v0.0.0");
        assert_eq!(conflict.stage, "ResponseComplete");
        assert_eq!(
            conflict.stage_timestamp,
            "2026-01-02T03:04:05.125Z".parse::<Timestamp>().unwrap()
        );
        assert!(conflict.is_write());

        writeln!(file, "{}", &READYZ[40..]).unwrap();
        let events = log.read_new().unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(
            (events[0].resource.as_str(), events[0].code),
            ("", Some(200))
        );
        assert!(!events[0].is_write());
        assert_eq!(log.read_new().unwrap(), []);
    }

    #[test]
    fn a_malformed_line_names_the_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = log_path(dir.path());
        std::fs::write(&path, format!("{CONFLICT}\nnot json\n")).unwrap();
        let error = AuditLog::new(path).read_new().unwrap_err();
        let message = error.to_string();
        assert!(message.contains("audit.log"), "{message}");
        assert!(
            message.contains(&format!("offset {}", CONFLICT.len() + 1)),
            "{message}"
        );
    }
}
