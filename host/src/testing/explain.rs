//! Why a write sent was not expected, whatever its verb: against the closest expected write (one
//! to the same object by another verb), the field that differs; otherwise against the object the
//! host held, what an update, apply or merge patch would change, what an update of the status
//! would change in it, what each JSON patch operation replaces, that a create meets an object
//! already there, that a delete removes the one at its resourceVersion, or that the fixture
//! holds no such object.

use serde_json::Value;

use crate::fixture::{FixtureWrite, Verb, object_ref};
use crate::testing::diff::{pointer, quote, values};

/// The metadata the host gives a fixture object that lacks it.
const ASSIGNED: [&str; 3] = ["uid", "resourceVersion", "generation"];

/// The objects a fixture's host held before the reconcile: as the fixture gives them, and as
/// the host holds them (with the uid, resourceVersion and generation it gave those that lacked
/// them), in the same order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cached {
    /// As the fixture gives them.
    given: Vec<Value>,
    /// As the host holds them.
    held: Vec<Value>,
}

impl Cached {
    /// `given` objects, held by the host as `held`.
    pub fn new(given: Vec<Value>, held: Vec<Value>) -> Self {
        Cached { given, held }
    }

    /// The object `write` targets, as the host held it, and as the fixture gave it.
    fn object(&self, write: &FixtureWrite) -> Option<(&Value, &Value)> {
        let index = self
            .given
            .iter()
            .rposition(|object| targets(write, object))?;
        Some((self.held.get(index)?, &self.given[index]))
    }

    /// `write`'s body without the metadata the host gave its target — fields the fixture's
    /// object lacked and `expected` omits too — when it carries the value the host gave.
    pub fn without_assigned(&self, write: &FixtureWrite, expected: &Value) -> Value {
        let mut body = write.body.clone();
        let Some((held, given)) = self.object(write) else {
            return body;
        };
        for field in ASSIGNED {
            let at = format!("/metadata/{field}");
            let assigned = given.pointer(&at).is_none() && expected.pointer(&at).is_none();
            let same = body.pointer(&at).is_some() && body.pointer(&at) == held.pointer(&at);
            let metadata = body.get_mut("metadata").and_then(Value::as_object_mut);
            if let Some(metadata) = metadata.filter(|_| assigned && same) {
                metadata.remove(field);
            }
        }
        body
    }
}

/// Whether `write` targets `object`.
fn targets(write: &FixtureWrite, object: &Value) -> bool {
    object_ref(object).is_some_and(|target| {
        target.kind.api_version() == write.api_version
            && target.kind.kind == write.kind
            && target.key.namespace == write.namespace
            && target.key.name == write.name
    })
}

/// Whether `a` and `b` write the same object, by whatever verb.
pub fn same_object(a: &FixtureWrite, b: &FixtureWrite) -> bool {
    (&a.api_version, &a.kind, &a.namespace, &a.name)
        == (&b.api_version, &b.kind, &b.namespace, &b.name)
}

/// Why `write`, sent but not expected, was not: a few words to follow "sent, not expected", and
/// a line for each field that explains it. `closest` is an expected write to the same object
/// that nothing sent matched, with its index.
pub fn unexpected(
    write: &FixtureWrite,
    closest: Option<(usize, &FixtureWrite)>,
    cached: &Cached,
) -> (String, Vec<String>) {
    if let Some((index, expected)) = closest {
        let mut fields = Vec::new();
        values("", &expected.body, &write.body, &mut fields);
        let same = if fields.is_empty() {
            ", with the same body"
        } else {
            ", whose body differs:"
        };
        let summary = format!(
            "; the closest expected is write {index} `{}`{same}",
            expected.target()
        );
        return (summary, fields);
    }
    let Some((current, _)) = cached.object(write) else {
        return (absent(write.verb).to_owned(), Vec::new());
    };
    let mut out = Vec::new();
    let summary = match write.verb {
        Verb::Apply | Verb::MergePatch | Verb::Update => {
            setting("", &write.body, current, &mut out);
            "; against the cached object it changes"
        }
        Verb::UpdateStatus => {
            let status = write.body.get("status").unwrap_or(&Value::Null);
            let was = current.get("status").unwrap_or(&Value::Null);
            setting("/status", status, was, &mut out);
            "; against the cached object's status it changes"
        }
        Verb::JsonPatch => {
            operations(&write.body, current, &mut out);
            "; against the cached object its operations"
        }
        Verb::Create => {
            setting("", &write.body, current, &mut out);
            "; the cached object exists already (the apiserver answers AlreadyExists), and it changes"
        }
        Verb::Delete => {
            let version = quote(&current["metadata"]["resourceVersion"]);
            return (
                format!("; it deletes the cached object, at resourceVersion {version}"),
                Vec::new(),
            );
        }
    };
    if out.is_empty() {
        (format!("{summary} nothing"), out)
    } else {
        (format!("{summary}:"), out)
    }
}

/// Why a write to an object the fixture does not hold was not expected.
fn absent(verb: Verb) -> &'static str {
    match verb {
        Verb::Create | Verb::Apply => "; the fixture holds no such object: it creates one",
        _ => "; the fixture holds no such object (the apiserver answers NotFound)",
    }
}

/// Adds a line to `out` for each operation of a JSON patch: the path it sets and what `current`
/// held there, or what it removes, moves or copies.
fn operations(patch: &Value, current: &Value, out: &mut Vec<String>) {
    for operation in patch.as_array().into_iter().flatten() {
        let text = |field: &str| operation.get(field).and_then(Value::as_str).unwrap_or("");
        let (op, path) = (text("op"), text("path"));
        let was = current.pointer(path).unwrap_or(&Value::Null);
        let value = operation.get("value").unwrap_or(&Value::Null);
        out.push(match op {
            "add" | "replace" => format!("{op} {path} from {} to {}", quote(was), quote(value)),
            "remove" => format!("remove {path}, which was {}", quote(was)),
            "test" => format!("test {path} is {}; it is {}", quote(value), quote(was)),
            _ => format!("{op} {} to {path}", text("from")),
        });
    }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn write(verb: Verb, body: Value) -> FixtureWrite {
        FixtureWrite {
            verb,
            status: false,
            force: false,
            api_version: "example.wasmop.dev/v1".into(),
            kind: "WebApp".into(),
            namespace: "shop".into(),
            name: "web".into(),
            body,
            rejected: None,
            redacted: false,
        }
    }

    fn webapp() -> Value {
        json!({"apiVersion": "example.wasmop.dev/v1", "kind": "WebApp", "metadata": {"namespace": "shop", "name": "web", "resourceVersion": "7"}, "spec": {"replicas": 2}, "status": {"ready": 1}})
    }

    fn cached() -> Cached {
        Cached::new(vec![webapp()], vec![webapp()])
    }

    #[test]
    fn a_status_update_is_explained_by_the_status_it_changes() {
        let mut body = webapp();
        body["status"] = json!({"ready": 2});
        let (summary, lines) = unexpected(&write(Verb::UpdateStatus, body), None, &cached());
        assert_eq!(summary, "; against the cached object's status it changes:");
        assert_eq!(lines, ["/status/ready from 1 to 2"]);
    }

    #[test]
    fn every_verb_is_explained_against_the_cached_object() {
        let patch = json!([{"op": "replace", "path": "/spec/replicas", "value": 3}, {"op": "remove", "path": "/status"}]);
        let (summary, lines) = unexpected(&write(Verb::JsonPatch, patch), None, &cached());
        assert_eq!(summary, "; against the cached object its operations:");
        assert_eq!(
            lines,
            [
                "replace /spec/replicas from 2 to 3",
                "remove /status, which was {\"ready\":1}"
            ]
        );
        let (summary, _) = unexpected(&write(Verb::Delete, Value::Null), None, &cached());
        assert_eq!(
            summary,
            "; it deletes the cached object, at resourceVersion \"7\""
        );
        let (summary, lines) = unexpected(&write(Verb::Create, webapp()), None, &cached());
        assert!(
            summary.starts_with("; the cached object exists already"),
            "{summary}"
        );
        assert!(
            summary.ends_with(" nothing") && lines.is_empty(),
            "{summary}"
        );
        let none = Cached::default();
        let (summary, _) = unexpected(&write(Verb::Create, webapp()), None, &none);
        assert_eq!(
            summary,
            "; the fixture holds no such object: it creates one"
        );
        let (summary, _) = unexpected(&write(Verb::UpdateStatus, webapp()), None, &none);
        assert!(
            summary.ends_with("(the apiserver answers NotFound)"),
            "{summary}"
        );
    }

    #[test]
    fn a_write_by_another_verb_is_explained_by_the_expected_one() {
        let mut expected = write(Verb::Apply, webapp());
        expected.force = true;
        let mut sent = webapp();
        sent["spec"]["replicas"] = json!(3);
        let (summary, lines) =
            unexpected(&write(Verb::Create, sent), Some((4, &expected)), &cached());
        assert_eq!(
            summary,
            "; the closest expected is write 4 `apply example.wasmop.dev/v1 WebApp shop/web`, whose body differs:"
        );
        assert_eq!(lines, ["at /spec/replicas: expected 2, sent 3"]);
    }

    #[test]
    fn metadata_the_host_gave_is_no_difference_where_the_fixture_omits_it() {
        let mut given = webapp();
        given["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("resourceVersion");
        let mut held = given.clone();
        held["metadata"]["resourceVersion"] = json!("1");
        held["metadata"]["uid"] = json!("uid-1");
        let cached = Cached::new(vec![given.clone()], vec![held.clone()]);
        let sent = write(Verb::Update, held.clone());
        assert_eq!(cached.without_assigned(&sent, &given), given);
        let mut stated = given.clone();
        stated["metadata"]["resourceVersion"] = json!("1");
        let kept = cached.without_assigned(&sent, &stated);
        assert_eq!(kept["metadata"]["resourceVersion"], "1");
        let mut other = held;
        other["metadata"]["uid"] = json!("uid-9");
        let kept = cached.without_assigned(&write(Verb::Update, other), &given);
        assert_eq!(kept["metadata"]["uid"], "uid-9");
        let patch = json!([{"op": "replace", "path": "/metadata/uid", "value": "uid-1"}]);
        let sent = write(Verb::JsonPatch, patch.clone());
        assert_eq!(cached.without_assigned(&sent, &Value::Null), patch);
    }
}
