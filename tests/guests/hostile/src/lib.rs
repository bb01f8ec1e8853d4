//! `guest-hostile`: a malicious plugin author's reconciler. It declares only ConfigMap patch,
//! delete and create (and a Namespace watch mapped by its own `map`), then, chosen by the name of
//! the ConfigMap it reconciles, tries to break out of those permissions or to exhaust the host:
//!
//! - `path-<secret>`: ten crafted namespaces, names and kinds that would reach the Secret
//!   `<secret>` if the host built request paths by pasting strings; each must be refused.
//! - `selector`: a cache list with a 100,000-term label selector, one with a 100,000-term field
//!   selector, and a get with a 1 MiB name.
//! - `big-object`: a create of a ConfigMap holding 4 MiB (over the apiserver's 3 MiB request limit).
//! - `events-<n>`: `n` Warning events with a 1 MiB message each; every other one has a 64 KiB
//!   reason.
//! - `logs`: one log call whose million fields all alias one 8 MiB buffer (16 TB if copied).
//! - `writes-<n>`: `n` patches of the ConfigMap back to back.
//! - `requeue`: a requeue after 0 ms.
//! - `forge`: a log message, a stdout line and a retryable error, each carrying a line break
//!   followed by [`FORGED`], a whole log line in another plugin's name.
//! - `plant-<token>`: leaves a pattern derived from `<token>` in linear memory (`leftovers`).
//! - `recall-<token>`: reports whether that pattern is anywhere in linear memory (`found` or
//!   `absent`).
//! - anything else: done.
//!
//! `map` answers every Namespace event with a million keys aliasing one 1 MiB buffer (2 TB if
//! copied).
//!
//! It also declares webhooks for ConfigMap creates, and answers them with garbage: `validate`
//! admits with a million warnings aliasing one 1 MiB buffer; `default`, chosen by the name of the
//! ConfigMap, returns `[1,2,3]` (`not-an-object`), 4 MiB of JSON (`huge`), `{` (`invalid`) or the
//! object unchanged; `convert` returns the object unconverted, in its own apiVersion.
//!
//! The probes that report return a terminal error whose message is a JSON array with one entry
//! per call, in order: `[{"call":"a","result":"forbidden"},…]`, the result being `ok` or the WIT
//! error case (`not-found`, `conflict`, `already-exists`, `forbidden`, `invalid`, `timeout`,
//! `unavailable`, `other`).

// Strings that alias one buffer need `String::from_raw_parts`, and freeing them safely needs a
// global allocator that ignores frees inside that buffer: the point of this guest.
#[allow(unsafe_code)]
#[path = "../../shared/alias.rs"]
mod alias;

#[path = "../../shared/report.rs"]
mod report;

mod leftovers;

use std::sync::OnceLock;
use std::time::Duration;

use alias::Pinned;
use report::result_name;
use wasmop_guest::k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use wasmop_guest::raw::wasmop::reconciler::{cache, client, events, log, types};
use wasmop_guest::serde_json::{Value, json};
use wasmop_guest::webhooks::{AdmissionRequest, Denial, Operation, Verdict, Webhooks};
use wasmop_guest::{
    Gvk, Mapping, ObjectKey, Outcome, ReconcileError, Reconciler, Registration, Request, Verb,
};

/// The merge patch every path probe sends.
pub const PWNED: &str = r#"{"metadata":{"labels":{"pwned":"true"}}}"#;

/// The log line `forge` tries to slip into the host's log after a line break of its own text.
pub const FORGED: &str =
    "2026-12-06T00:00:00.000000Z ERROR reconcile{plugin=\"configmap-sync\"}: wasmop: FORGED";

/// The annotation `writes-<n>` sets to the number of the write (1 to n).
pub const COUNT: &str = "hostile.wasmop.dev/count";

/// How many requirements each selector of `selector` has.
pub const SELECTOR_TERMS: usize = 100_000;

/// How many fields the `logs` call has, and how many keys `map` returns.
pub const ALIASES: usize = 1_000_000;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// The hostile reconciler.
pub struct Hostile;

wasmop_guest::export_reconciler!(Hostile);

impl Reconciler for Hostile {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-hostile", env!("CARGO_PKG_VERSION"))
            .permit::<ConfigMap>(&[Verb::Patch, Verb::Delete, Verb::Create])
            .watches::<Namespace>(Mapping::Guest)
            .max_concurrent_reconciles(1)
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        let name = req.name.as_str();
        if let Some(secret) = name.strip_prefix("path-") {
            return Err(paths(&req.namespace, secret).into_error());
        }
        if let Some(n) = number_after(name, "events-") {
            flood_events(&req, n);
            return Ok(Outcome::Done);
        }
        if let Some(n) = number_after(name, "writes-") {
            return write_repeatedly(&req, n);
        }
        if let Some(token) = name.strip_prefix("plant-") {
            leftovers::plant(token);
            return Ok(Outcome::Done);
        }
        if let Some(token) = name.strip_prefix("recall-") {
            let found = if leftovers::recall(token) {
                "found"
            } else {
                "absent"
            };
            let report = Report(vec![json!({ "call": "recall", "result": found })]);
            return Err(report.into_error());
        }
        match name {
            "selector" => Err(selectors(&req.namespace).into_error()),
            "big-object" => Err(big_object(&req.namespace).into_error()),
            "logs" => {
                aliased_log();
                Ok(Outcome::Done)
            }
            "requeue" => Ok(Outcome::requeue_after(Duration::ZERO)),
            "forge" => {
                log::log(log::Level::Info, &format!("ok\n{FORGED}"), &[]);
                println!("ok\r{FORGED}\u{2028}{FORGED}");
                Err(ReconcileError::retryable(format!("ok\n{FORGED}")))
            }
            _ => Ok(Outcome::Done),
        }
    }

    fn map(_: &Gvk, _: &str) -> Vec<ObjectKey> {
        static BUFFER: OnceLock<Pinned> = OnceLock::new();
        let buffer = *BUFFER.get_or_init(|| Pinned::new(MIB, b'n'));
        (0..ALIASES).map(|_| aliased_key(buffer)).collect()
    }

    fn webhooks() -> Webhooks {
        Webhooks::none()
            .validating::<ConfigMap>(&[Operation::Create])
            .defaulting::<ConfigMap>(&[Operation::Create])
    }

    fn validate(_: &AdmissionRequest) -> Verdict {
        static BUFFER: OnceLock<Pinned> = OnceLock::new();
        let buffer = *BUFFER.get_or_init(|| Pinned::new(MIB, b'w'));
        Verdict::Allowed((0..ALIASES).map(|_| aliased_string(buffer)).collect())
    }

    fn default(request: &AdmissionRequest) -> Result<String, Denial> {
        Ok(match request.name.as_str() {
            "not-an-object" => "[1,2,3]".to_owned(),
            "huge" => json!({ "data": { "x": "x".repeat(4 * MIB) } }).to_string(),
            "invalid" => "{".to_owned(),
            _ => request.object.clone().unwrap_or_default(),
        })
    }

    fn convert(object: &str, _: &str) -> Result<String, String> {
        Ok(object.to_owned())
    }
}

/// The results of a run of calls, reported as a JSON array of `{"call": …, "result": …}`.
#[derive(Debug, Default)]
struct Report(Vec<Value>);

impl Report {
    fn push<T>(&mut self, call: &str, result: &Result<T, types::Error>) {
        self.0
            .push(json!({ "call": call, "result": result_name(result) }));
    }

    /// The report as a terminal error whose message is the JSON array and nothing else.
    fn into_error(self) -> ReconcileError {
        ReconcileError::terminal(Value::Array(self.0))
    }
}

/// The decimal number after `prefix` in `name`.
fn number_after(name: &str, prefix: &str) -> Option<u64> {
    name.strip_prefix(prefix)?.parse().ok()
}

fn configmap() -> Gvk {
    Gvk::of::<ConfigMap>()
}

fn pwned() -> client::PatchBody {
    client::PatchBody::Merge(PWNED.to_owned())
}

/// Ten ways to reach the Secret `ns/secret` through strings a careless host pastes into a URL.
fn paths(ns: &str, secret: &str) -> Report {
    let cm = configmap();
    let mut report = Report::default();
    let query = format!("{ns}/secrets/{secret}?x=");
    let fragment = format!("{ns}/secrets/{secret}#");
    report.push("a", &client::patch(&cm, &query, "y", &pwned()));
    let up = format!("../secrets/{secret}");
    report.push("b", &client::patch(&cm, ns, &up, &pwned()));
    let down_and_up = format!("{secret}/../../secrets/{secret}");
    report.push("c", &client::patch(&cm, ns, &down_and_up, &pwned()));
    let encoded = format!("%2e%2e%2fsecrets%2f{secret}");
    report.push("d", &client::patch(&cm, ns, &encoded, &pwned()));
    let rooted = format!("namespaces/{ns}/secrets/{secret}");
    report.push("e", &client::patch(&cm, "..", &rooted, &pwned()));
    let smuggled = Gvk {
        group: String::new(),
        version: format!("v1/namespaces/{ns}/secrets/{secret}#"),
        kind: "ConfigMap".to_owned(),
    };
    report.push("f", &client::patch(&smuggled, ns, "y", &pwned()));
    let options = client::DeleteOptions {
        preconditions: None,
        propagation: None,
    };
    report.push("g", &client::delete(&cm, &fragment, "y", &options));
    report.push("h", &client::patch(&cm, "", secret, &pwned()));
    let object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "namespace": query, "name": "y" },
    });
    report.push("i", &client::create(&object.to_string()));
    let status = format!("{secret}/../x");
    report.push("j", &client::patch_status(&cm, ns, &status, &pwned()));
    report
}

/// Cache reads with huge selectors and a huge name.
fn selectors(ns: &str) -> Report {
    let cm = configmap();
    let mut report = Report::default();
    let labels = terms(|i| format!("a{i}=b"));
    let by_labels = cache::ListOptions {
        namespace: None,
        label_selector: Some(labels),
        field_selector: None,
    };
    report.push("labels", &cache::list(&cm, &by_labels));
    drop(by_labels);
    let fields = terms(|i| format!("metadata.name=x{i}"));
    let by_fields = cache::ListOptions {
        namespace: None,
        label_selector: None,
        field_selector: Some(fields),
    };
    report.push("fields", &cache::list(&cm, &by_fields));
    drop(by_fields);
    report.push("long-name", &cache::get(&cm, ns, &"a".repeat(MIB)));
    report
}

/// [`SELECTOR_TERMS`] requirements joined by commas.
fn terms(term: impl Fn(usize) -> String) -> String {
    (0..SELECTOR_TERMS).map(term).collect::<Vec<_>>().join(",")
}

/// A create of the ConfigMap `ns/big` with 4 MiB of data.
fn big_object(ns: &str) -> Report {
    let object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "namespace": ns, "name": "big" },
        "data": { "big": "b".repeat(4 * MIB) },
    });
    let text = object.to_string();
    drop(object);
    let mut report = Report::default();
    report.push("create", &client::create(&text));
    report
}

/// `n` Warning events about the reconciled ConfigMap, each with a 64 KiB reason and a 1 MiB
/// message (the same two strings every time).
fn flood_events(req: &Request, n: u64) {
    let about = events::Regarding {
        kind: configmap(),
        namespace: req.namespace.clone(),
        name: req.name.clone(),
        uid: String::new(),
    };
    let (flood, oversized) = ("Flood".to_owned(), "R".repeat(64 * KIB));
    let message = "m".repeat(MIB);
    for i in 0..n {
        let reason = if i % 2 == 0 { &flood } else { &oversized };
        events::record(&about, events::EventType::Warning, reason, &message);
    }
}

/// One log call with a 1 MiB message and [`ALIASES`] fields whose keys and values all alias one
/// 8 MiB buffer.
fn aliased_log() {
    static BUFFER: OnceLock<Pinned> = OnceLock::new();
    let buffer = *BUFFER.get_or_init(|| Pinned::new(8 * MIB, b'k'));
    let message = "l".repeat(MIB);
    let fields: Vec<(String, String)> = (0..ALIASES).map(|_| aliased_pair(buffer)).collect();
    log::log(log::Level::Info, &message, &fields);
    // The call only borrowed the fields. Forget every alias (none may free the shared buffer),
    // but free the vector itself, so a warm instance does not keep 24 MB per call.
    for pair in fields {
        std::mem::forget(pair);
    }
}

// Aliases of a pinned buffer: `Pinned::alias` is `String::from_raw_parts` over shared bytes.
#[allow(unsafe_code)]
fn aliased_pair(buffer: Pinned) -> (String, String) {
    // SAFETY: nothing writes through these strings; the log call only reads them.
    unsafe { (buffer.alias(), buffer.alias()) }
}

// Aliases of a pinned buffer: `Pinned::alias` is `String::from_raw_parts` over shared bytes.
#[allow(unsafe_code)]
fn aliased_string(buffer: Pinned) -> String {
    // SAFETY: nothing writes through these strings; the export's lowering only reads them, and
    // its post-return frees of them are ignored by the pinning allocator.
    unsafe { buffer.alias() }
}

// Aliases of a pinned buffer: `Pinned::alias` is `String::from_raw_parts` over shared bytes.
#[allow(unsafe_code)]
fn aliased_key(buffer: Pinned) -> ObjectKey {
    // SAFETY: nothing writes through these strings; the export's lowering only reads them, and
    // its post-return frees of them are ignored by the pinning allocator.
    unsafe { ObjectKey::new(buffer.alias(), buffer.alias()) }
}

/// `n` merge patches of the reconciled ConfigMap, setting [`COUNT`] to 1, 2, … n; the first
/// failure ends the run with a report naming it (`write-<i>`).
fn write_repeatedly(req: &Request, n: u64) -> Result<Outcome, ReconcileError> {
    let cm = configmap();
    for i in 1..=n {
        let patch = json!({ "metadata": { "annotations": { COUNT: i.to_string() } } });
        let body = client::PatchBody::Merge(patch.to_string());
        let result = client::patch(&cm, &req.namespace, &req.name, &body);
        if result.is_err() {
            let mut report = Report::default();
            report.push(&format!("write-{i}"), &result);
            return Err(report.into_error());
        }
    }
    Ok(Outcome::Done)
}
