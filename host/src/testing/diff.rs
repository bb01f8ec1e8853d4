//! The difference between what a fixture expects and what a plugin did, one line each: the
//! writes it sent and the events it recorded.
//!
//! Each pair of lists is aligned by target (for writes the verb, kind and key; for events the
//! type, reason and object) as a text diff aligns lines, so one write added or dropped shows as
//! that write alone; an aligned pair of writes differs field by field, by JSON pointer. A write
//! sent but not expected is explained ([`explain`]) against the closest expected write or the
//! cached object. Fields the host gave a fixture object that lacked them (uid, resourceVersion,
//! generation) are not differences where the expected write omits them too.

use serde_json::Value;

use crate::fixture::{Expected, FixtureEvent, FixtureWrite};
use crate::testing::explain::{self, Cached};

/// The most differences reported for one write.
const MAX_FIELD_DIFFERENCES: usize = 20;
/// The longest JSON value quoted in a difference.
const MAX_QUOTED: usize = 120;
/// The largest expected × sent table aligned; longer lists are compared by position.
const MAX_ALIGNED: usize = 1 << 20;

/// One step through the two lists.
#[derive(Debug, PartialEq)]
enum Step {
    /// Expected `.0` and sent `.1` name the same target.
    Both(usize, usize),
    /// Expected, not sent.
    Expected(usize),
    /// Sent, not expected.
    Sent(usize),
}

/// A line for each difference between `expected` and `sent` writes; `cached` is what the host
/// held before the reconcile, which explains a write sent but not expected.
pub fn writes(expected: &[FixtureWrite], sent: &[FixtureWrite], cached: &Cached) -> Vec<String> {
    let steps = align(expected, sent, same_target);
    let unmatched: Vec<usize> = steps
        .iter()
        .filter_map(|step| match step {
            Step::Expected(e) => Some(*e),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for step in steps {
        match step {
            Step::Both(e, s) => {
                let sent_body = cached.without_assigned(&sent[s], &expected[e].body);
                let mut fields = Vec::new();
                values("", &expected[e].body, &sent_body, &mut fields);
                let prefix = format!("write {s} `{}`: ", sent[s].target());
                bounded(&prefix, fields, &mut out);
            }
            Step::Expected(e) => out.push(format!(
                "expected write {e} `{}`: not sent",
                expected[e].target()
            )),
            Step::Sent(s) => {
                let write = &sent[s];
                let closest = unmatched
                    .iter()
                    .find(|&&e| explain::same_object(&expected[e], write))
                    .map(|&e| (e, &expected[e]));
                let (summary, details) = explain::unexpected(write, closest, cached);
                out.push(format!(
                    "write {s} `{}`: sent, not expected{summary}",
                    write.target()
                ));
                let prefix = format!("write {s} `{}`: ", write.target());
                bounded(&prefix, details, &mut out);
            }
        }
    }
    out
}

/// A line for each difference between `expected` and `sent` events.
pub fn events(expected: &[FixtureEvent], sent: &[FixtureEvent]) -> Vec<String> {
    let same = |a: &FixtureEvent, b: &FixtureEvent| a.target() == b.target();
    let mut out = Vec::new();
    for step in align(expected, sent, same) {
        match step {
            Step::Both(e, s) if expected[e].message != sent[s].message => out.push(format!(
                "event {s} `{}`: message: expected {}, recorded {}",
                sent[s].target(),
                quote(&Value::String(expected[e].message.clone())),
                quote(&Value::String(sent[s].message.clone()))
            )),
            Step::Both(..) => {}
            Step::Expected(e) => out.push(format!(
                "expected event {e} `{}`: not recorded",
                expected[e].target()
            )),
            Step::Sent(s) => out.push(format!(
                "event {s} `{}`: recorded, not expected: {}",
                sent[s].target(),
                quote(&Value::String(sent[s].message.clone()))
            )),
        }
    }
    out
}

/// A line for each difference between the webhook answer `expected` states and the one the
/// plugin gave (`answered`, every part stated).
pub fn answer(expected: &Expected, answered: &Expected) -> Vec<String> {
    let mut out = Vec::new();
    let shown = |value: Option<Value>| value.as_ref().map_or_else(|| "none".to_owned(), quote);
    if let Some(want) = expected
        .allowed
        .filter(|want| answered.allowed != Some(*want))
    {
        out.push(format!(
            "allowed: expected {want}, answered {}",
            shown(answered.allowed.map(Value::from))
        ));
    }
    if let Some(want) = expected
        .message
        .as_ref()
        .filter(|want| answered.message.as_ref() != Some(*want))
    {
        let got = answered.message.clone().map(Value::from);
        out.push(format!(
            "message: expected {}, answered {}",
            quote(&Value::from(want.as_str())),
            shown(got)
        ));
    }
    if let Some(want) = expected
        .warnings
        .as_ref()
        .filter(|want| answered.warnings.as_ref() != Some(*want))
    {
        let got = answered.warnings.clone().map(Value::from);
        out.push(format!(
            "warnings: expected {}, answered {}",
            quote(&Value::from(want.clone())),
            shown(got)
        ));
    }
    answered_list(
        "patch",
        expected.patch.as_ref(),
        answered.patch.as_ref(),
        &mut out,
    );
    answered_list(
        "converted",
        expected.converted.as_ref(),
        answered.converted.as_ref(),
        &mut out,
    );
    out
}

/// The differences between a list an answer is expected to hold and the one it held.
fn answered_list(
    name: &str,
    expected: Option<&Vec<Value>>,
    answered: Option<&Vec<Value>>,
    out: &mut Vec<String>,
) {
    let Some(want) = expected else {
        return;
    };
    let Some(got) = answered else {
        out.push(format!(
            "{name}: expected {} items, answered none",
            want.len()
        ));
        return;
    };
    let mut fields = Vec::new();
    values(
        "",
        &Value::from(want.clone()),
        &Value::from(got.clone()),
        &mut fields,
    );
    bounded(&format!("{name}: "), fields, out);
}

/// Adds `fields` to `out` after `prefix`, at most [`MAX_FIELD_DIFFERENCES`] of them.
fn bounded(prefix: &str, fields: Vec<String>, out: &mut Vec<String>) {
    let hidden = fields.len().saturating_sub(MAX_FIELD_DIFFERENCES);
    for field in fields.into_iter().take(MAX_FIELD_DIFFERENCES) {
        out.push(format!("{prefix}{field}"));
    }
    if hidden > 0 {
        out.push(format!("{prefix}{hidden} more differences"));
    }
}

/// Whether `a` and `b` are writes of one kind to one target.
fn same_target(a: &FixtureWrite, b: &FixtureWrite) -> bool {
    a.target() == b.target() && a.force == b.force
}

/// The longest common subsequence of items that are the `same`, as steps through both lists in
/// order.
fn align<T>(expected: &[T], sent: &[T], same: impl Fn(&T, &T) -> bool) -> Vec<Step> {
    let (n, m) = (expected.len(), sent.len());
    if n.saturating_mul(m) > MAX_ALIGNED {
        return by_position(n, m);
    }
    // common[i][j]: the longest common run of expected[i..] and sent[j..].
    let mut common = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            common[i][j] = if same(&expected[i], &sent[j]) {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut steps) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && same(&expected[i], &sent[j]) {
            steps.push(Step::Both(i, j));
            (i, j) = (i + 1, j + 1);
        } else if j < m && (i == n || common[i][j + 1] >= common[i + 1][j]) {
            steps.push(Step::Sent(j));
            j += 1;
        } else {
            steps.push(Step::Expected(i));
            i += 1;
        }
    }
    steps
}

/// Steps pairing the lists by position, for lists too long to align.
fn by_position(n: usize, m: usize) -> Vec<Step> {
    (0..n.max(m))
        .map(|k| match (k < n, k < m) {
            (true, true) => Step::Both(k, k),
            (true, false) => Step::Expected(k),
            _ => Step::Sent(k),
        })
        .collect()
}

/// Adds a line to `out` for each field where `expected` and `sent` differ, under `path` (a JSON
/// pointer).
pub(super) fn values(path: &str, expected: &Value, sent: &Value, out: &mut Vec<String>) {
    match (expected, sent) {
        (Value::Object(want), Value::Object(got)) => {
            let mut keys: Vec<&String> = want.keys().chain(got.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let at = pointer(path, key);
                match (want.get(key), got.get(key)) {
                    (Some(w), Some(g)) => values(&at, w, g, out),
                    (Some(w), None) => out.push(format!("at {at}: expected {}, absent", quote(w))),
                    (None, Some(g)) => {
                        out.push(format!("at {at}: not expected, sent {}", quote(g)))
                    }
                    (None, None) => {}
                }
            }
        }
        (Value::Array(want), Value::Array(got)) if want.len() == got.len() => {
            for (index, (w, g)) in want.iter().zip(got).enumerate() {
                values(&format!("{path}/{index}"), w, g, out);
            }
        }
        _ if expected != sent => {
            let at = if path.is_empty() { "/" } else { path };
            out.push(format!(
                "at {at}: expected {}, sent {}",
                quote(expected),
                quote(sent)
            ));
        }
        _ => {}
    }
}

/// `path` extended by `key`, escaped as JSON pointers escape.
pub(super) fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// `value` as compact JSON, cut to [`MAX_QUOTED`] characters.
pub(super) fn quote(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(MAX_QUOTED) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fixture::{FixtureEventType, Regarding, Verb};

    fn apply(name: &str, body: Value) -> FixtureWrite {
        FixtureWrite {
            verb: Verb::Apply,
            status: false,
            force: true,
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: "shop".into(),
            name: name.into(),
            body,
            rejected: None,
            redacted: false,
        }
    }

    #[test]
    fn webhook_answers_differ_part_by_part() {
        let expected = Expected {
            allowed: Some(false),
            message: Some("too many".into()),
            patch: Some(vec![
                json!({"op": "add", "path": "/spec/port", "value": 8080}),
            ]),
            ..Expected::default()
        };
        let answered = Expected {
            allowed: Some(true),
            warnings: Some(vec![]),
            patch: Some(vec![
                json!({"op": "add", "path": "/spec/port", "value": 80}),
            ]),
            ..Expected::default()
        };
        assert_eq!(
            answer(&expected, &answered),
            [
                "allowed: expected false, answered true",
                "message: expected \"too many\", answered none",
                "patch: at /0/value: expected 8080, sent 80",
            ]
        );
        assert!(answer(&Expected::default(), &answered).is_empty());
    }

    #[test]
    fn bodies_differ_field_by_field() {
        let want =
            json!({"spec": {"replicas": 3, "paused": false}, "metadata": {"labels": {"a/b": "1"}}});
        let got = json!({"spec": {"replicas": 2}, "metadata": {"labels": {"a/b": "1", "c": "2"}}});
        let out = writes(
            &[apply("web", want)],
            &[apply("web", got)],
            &Cached::default(),
        );
        let prefix = "write 0 `apply apps/v1 Deployment shop/web`: ";
        assert_eq!(
            out,
            [
                format!("{prefix}at /metadata/labels/c: not expected, sent \"2\""),
                format!("{prefix}at /spec/paused: expected false, absent"),
                format!("{prefix}at /spec/replicas: expected 3, sent 2"),
            ]
        );
    }

    #[test]
    fn an_added_or_dropped_write_shows_alone() {
        let (web, api, db) = (
            apply("web", json!({})),
            apply("api", json!({})),
            apply("db", json!({})),
        );
        let added = writes(
            &[web.clone(), db.clone()],
            &[web.clone(), api.clone(), db.clone()],
            &Cached::default(),
        );
        assert_eq!(
            added,
            [
                "write 1 `apply apps/v1 Deployment shop/api`: sent, not expected; the fixture holds no such object: it creates one"
            ]
        );
        let dropped = writes(
            &[web.clone(), api, db.clone()],
            &[web, db],
            &Cached::default(),
        );
        assert_eq!(
            dropped,
            ["expected write 1 `apply apps/v1 Deployment shop/api`: not sent"]
        );
    }

    #[test]
    fn a_write_not_expected_is_explained_against_the_cached_object() {
        let cached = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "shop", "name": "web", "annotations": {"by": "v1"}}, "spec": {"replicas": 2}});
        let body = json!({"metadata": {"annotations": {"by": "v2"}}, "spec": {"replicas": 2}});
        let cached = Cached::new(vec![cached.clone()], vec![cached]);
        let out = writes(&[], &[apply("web", body)], &cached);
        let target = "write 0 `apply apps/v1 Deployment shop/web`: ";
        assert_eq!(
            out,
            [
                format!("{target}sent, not expected; against the cached object it changes:"),
                format!("{target}/metadata/annotations/by from \"v1\" to \"v2\""),
            ]
        );
    }

    fn event(reason: &str, message: &str) -> FixtureEvent {
        FixtureEvent {
            event_type: FixtureEventType::Normal,
            reason: reason.into(),
            message: message.into(),
            regarding: Regarding {
                api_version: "example.wasmop.dev/v1".into(),
                kind: "WebApp".into(),
                namespace: "shop".into(),
                name: "web".into(),
            },
        }
    }

    #[test]
    fn events_differ_as_writes_do() {
        let created = event("Created", "Created Deployment shop/web");
        let scaled = event("Scaled", "Scaled to 3");
        let out = events(
            &[created.clone(), scaled.clone()],
            &[
                event("Created", "Created Deployment shop/api"),
                event("Failed", "no room"),
            ],
        );
        let target = "Normal Created example.wasmop.dev/v1 WebApp shop/web";
        assert_eq!(
            out,
            [
                format!("event 0 `{target}`: message: expected \"Created Deployment shop/web\", recorded \"Created Deployment shop/api\""),
                "event 1 `Normal Failed example.wasmop.dev/v1 WebApp shop/web`: recorded, not expected: \"no room\"".to_owned(),
                "expected event 1 `Normal Scaled example.wasmop.dev/v1 WebApp shop/web`: not recorded".to_owned(),
            ]
        );
        let once = std::slice::from_ref(&created);
        assert!(events(once, once).is_empty());
    }

    #[test]
    fn long_lists_fall_back_to_positions_and_long_values_are_cut() {
        assert_eq!(by_position(2, 1), [Step::Both(0, 0), Step::Expected(1)]);
        let quoted = quote(&Value::String("x".repeat(500)));
        assert_eq!(quoted.chars().count(), MAX_QUOTED + 1);
        assert!(quoted.ends_with('…'));
    }
}
