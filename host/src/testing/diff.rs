//! The difference between the writes a fixture expects and those a plugin sent, one line each.
//!
//! The two lists are aligned by target (verb, kind and key) as a text diff aligns lines, so one
//! write added or dropped shows as that write alone; an aligned pair differs field by field, by
//! JSON pointer. A write sent but not expected is explained by what it would change in the object
//! as the fixture cached it.

use serde_json::Value;

use crate::testing::fixture::{FixtureWrite, Verb, object_ref};

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

/// A line for each difference between `expected` and `sent` writes; `objects` are the fixture's
/// cached objects, which explain a write sent but not expected.
pub fn writes(expected: &[FixtureWrite], sent: &[FixtureWrite], objects: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for step in align(expected, sent) {
        match step {
            Step::Both(e, s) => {
                let mut fields = Vec::new();
                values("", &expected[e].body, &sent[s].body, &mut fields);
                let prefix = format!("write {s} `{}`: ", sent[s].target());
                bounded(&prefix, fields, &mut out);
            }
            Step::Expected(e) => out.push(format!(
                "expected write {e} `{}`: not sent",
                expected[e].target()
            )),
            Step::Sent(s) => {
                let write = &sent[s];
                out.push(format!(
                    "write {s} `{}`: sent, not expected{}",
                    write.target(),
                    changes_summary(write, objects)
                ));
                let prefix = format!("write {s} `{}`: ", write.target());
                bounded(&prefix, changes(write, objects), &mut out);
            }
        }
    }
    out
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

/// The longest common subsequence of targets, as steps through both lists in order.
fn align(expected: &[FixtureWrite], sent: &[FixtureWrite]) -> Vec<Step> {
    let (n, m) = (expected.len(), sent.len());
    if n.saturating_mul(m) > MAX_ALIGNED {
        return by_position(n, m);
    }
    // common[i][j]: the longest common run of expected[i..] and sent[j..].
    let mut common = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            common[i][j] = if same_target(&expected[i], &sent[j]) {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut steps) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && same_target(&expected[i], &sent[j]) {
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
fn values(path: &str, expected: &Value, sent: &Value, out: &mut Vec<String>) {
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

/// The cached object `write` targets, if the fixture holds it.
fn cached<'a>(write: &FixtureWrite, objects: &'a [Value]) -> Option<&'a Value> {
    objects.iter().find(|object| {
        object_ref(object).is_some_and(|target| {
            target.kind.api_version() == write.api_version
                && target.kind.kind == write.kind
                && target.key.namespace == write.namespace
                && target.key.name == write.name
        })
    })
}

/// What a write sent but not expected means for its target, in a few words.
fn changes_summary(write: &FixtureWrite, objects: &[Value]) -> &'static str {
    match (write.verb, cached(write, objects)) {
        (Verb::Create, _) | (_, None) => "",
        (Verb::Apply | Verb::MergePatch | Verb::Update, Some(_)) => {
            "; against the cached object it changes:"
        }
        _ => "",
    }
}

/// The fields an applied, merged or replacing body sets to other values than the cached object
/// has, one line each.
fn changes(write: &FixtureWrite, objects: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    if let (Verb::Apply | Verb::MergePatch | Verb::Update, Some(current)) =
        (write.verb, cached(write, objects))
    {
        setting("", &write.body, current, &mut out);
    }
    out
}

/// Adds a line to `out` for each leaf of `body` under `path` whose value `current` lacks or
/// holds otherwise; lists of one length are compared item by item, so fields the apiserver
/// defaulted in the cached object are no change.
fn setting(path: &str, body: &Value, current: &Value, out: &mut Vec<String>) {
    match (body, current) {
        (Value::Object(fields), Value::Object(_) | Value::Null) => {
            for (key, value) in fields {
                let at = pointer(path, key);
                setting(&at, value, current.get(key).unwrap_or(&Value::Null), out);
            }
        }
        (Value::Array(items), Value::Array(cached)) if items.len() == cached.len() => {
            for (index, (item, was)) in items.iter().zip(cached).enumerate() {
                setting(&format!("{path}/{index}"), item, was, out);
            }
        }
        _ if body != current => {
            let at = if path.is_empty() { "/" } else { path };
            out.push(format!("{at} from {} to {}", quote(current), quote(body)));
        }
        _ => {}
    }
}

/// `path` extended by `key`, escaped as JSON pointers escape.
fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// `value` as compact JSON, cut to [`MAX_QUOTED`] characters.
fn quote(value: &Value) -> String {
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
    fn bodies_differ_field_by_field() {
        let want =
            json!({"spec": {"replicas": 3, "paused": false}, "metadata": {"labels": {"a/b": "1"}}});
        let got = json!({"spec": {"replicas": 2}, "metadata": {"labels": {"a/b": "1", "c": "2"}}});
        let out = writes(&[apply("web", want)], &[apply("web", got)], &[]);
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
            &[],
        );
        assert_eq!(
            added,
            ["write 1 `apply apps/v1 Deployment shop/api`: sent, not expected"]
        );
        let dropped = writes(&[web.clone(), api, db.clone()], &[web, db], &[]);
        assert_eq!(
            dropped,
            ["expected write 1 `apply apps/v1 Deployment shop/api`: not sent"]
        );
    }

    #[test]
    fn a_write_not_expected_is_explained_against_the_cached_object() {
        let cached = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "shop", "name": "web", "annotations": {"by": "v1"}}, "spec": {"replicas": 2}});
        let body = json!({"metadata": {"annotations": {"by": "v2"}}, "spec": {"replicas": 2}});
        let out = writes(&[], &[apply("web", body)], &[cached]);
        let target = "write 0 `apply apps/v1 Deployment shop/web`: ";
        assert_eq!(
            out,
            [
                format!("{target}sent, not expected; against the cached object it changes:"),
                format!("{target}/metadata/annotations/by from \"v1\" to \"v2\""),
            ]
        );
    }

    #[test]
    fn long_lists_fall_back_to_positions_and_long_values_are_cut() {
        assert_eq!(by_position(2, 1), [Step::Both(0, 0), Step::Expected(1)]);
        let quoted = quote(&Value::String("x".repeat(500)));
        assert_eq!(quoted.chars().count(), MAX_QUOTED + 1);
        assert!(quoted.ends_with('…'));
    }
}
