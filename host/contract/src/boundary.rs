//! The one boundary for what a guest hands the host. Every kind, namespace, name, object body,
//! patch and selector a guest passes is checked here, where it enters, before the permission check
//! and before anything is sent: names follow Kubernetes' own rules (DNS labels and subdomains for
//! namespaces and groups, path-segment names without `/`, `%`, `?`, `#` or what a request path
//! cannot carry for objects), so no string a guest chooses can change the path of the request
//! the host sends. An object's apiVersion is exactly its kind's, its metadata is object metadata,
//! a JSON patch's operations are operations and an applied object is an object, so what passes
//! here is what the client can send. Nothing a guest sends can make a stored object nest deeper
//! than [`MAX_DEPTH`]: whole objects, merge patches and applied objects are measured as sent; a
//! JSON patch operation's path and value together ([`json_patch_depth`]). Anything else is
//! `invalid`, and nothing is sent; messages quote at most [`cut`] of what was refused.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;

use crate::depth::{self, MAX_DEPTH};
use crate::imports::{ApiError, ApiErrorKind, Patch};
use crate::object::{GroupVersionKind, ObjectKey, ObjectRef};

/// The longest object name Kubernetes accepts.
const MAX_NAME: usize = 253;
/// The longest DNS label (namespaces, versions).
const MAX_LABEL: usize = 63;
/// The longest short text a guest hands the host: UIDs, resourceVersions, index names and values.
pub const MAX_SHORT_TEXT: usize = 1024;

/// A kind, namespace or name a guest handed the host that Kubernetes would not take; each
/// quotes at most [`cut`] of what was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// A group that is not a DNS subdomain.
    #[error("group {0:?} is not a DNS subdomain")]
    Group(String),
    /// A version that is not a DNS label.
    #[error("version {0:?} is not a DNS label")]
    Version(String),
    /// A kind that is not a word.
    #[error("kind {0:?} must be 1-63 letters and digits starting with a letter")]
    Kind(String),
    /// A namespace that is not a DNS label.
    #[error("namespace {0:?} is not a DNS label (1-63 lowercase letters, digits or dashes)")]
    Namespace(String),
    /// A name that is not a path segment.
    #[error(
        "name {0:?} is not a valid object name (1-253 printable characters, no / % ? # \\ < > `, \
         not . or ..)"
    )]
    Name(String),
}

impl From<Malformed> for ApiError {
    fn from(malformed: Malformed) -> Self {
        invalid(malformed.to_string())
    }
}

/// An `invalid` error for a guest's request.
pub fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(ApiErrorKind::Invalid, message)
}

/// Checks a kind: group a DNS subdomain (or empty for the core group), version a DNS label,
/// kind an alphanumeric word starting with a letter.
pub fn kind(kind: &GroupVersionKind) -> Result<(), Malformed> {
    permitted_kind(kind)?;
    match kind.version.is_empty() {
        true => Err(Malformed::Version(String::new())),
        false => Ok(()),
    }
}

/// Checks a kind a permission names: as [`kind`], but its version may be empty (every version
/// the apiserver serves, as an RBAC rule grants).
pub fn permitted_kind(kind: &GroupVersionKind) -> Result<(), Malformed> {
    if !kind.group.is_empty() && !dns_subdomain(&kind.group) {
        return Err(Malformed::Group(cut(&kind.group).to_owned()));
    }
    if !kind.version.is_empty() && !dns_label(&kind.version) {
        return Err(Malformed::Version(cut(&kind.version).to_owned()));
    }
    let word = kind.kind.len() <= MAX_LABEL
        && kind.kind.starts_with(|c: char| c.is_ascii_alphabetic())
        && kind.kind.bytes().all(|b| b.is_ascii_alphanumeric());
    if !word {
        return Err(Malformed::Kind(cut(&kind.kind).to_owned()));
    }
    Ok(())
}

/// Checks a namespace: empty (cluster-scoped, or all namespaces) or a DNS label.
pub fn namespace(namespace: &str) -> Result<(), Malformed> {
    if namespace.is_empty() || dns_label(namespace) {
        return Ok(());
    }
    Err(Malformed::Namespace(cut(namespace).to_owned()))
}

/// Checks an object name: 1-253 printable ASCII characters, not `.` or `..`, without `/`, `%`,
/// `?`, `#` or `\` (Kubernetes' path-segment rule, plus what would end a path) and without `<`,
/// `>` or `` ` `` (which no request path may carry unescaped).
pub fn name(name: &str) -> Result<(), Malformed> {
    let segment = !name.is_empty()
        && name.len() <= MAX_NAME
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"/%?#\\<>`".contains(&b));
    if segment {
        return Ok(());
    }
    Err(Malformed::Name(cut(name).to_owned()))
}

/// Checks a kind, namespace and name and makes them a reference.
pub fn object_ref(
    kind: GroupVersionKind,
    namespace: String,
    name: String,
) -> Result<ObjectRef, ApiError> {
    self::kind(&kind)?;
    self::namespace(&namespace)?;
    self::name(&name)?;
    Ok(ObjectRef {
        kind,
        key: ObjectKey { namespace, name },
    })
}

/// Checks that `text` is at most `max` bytes.
pub fn bounded(what: &str, text: &str, max: usize) -> Result<(), ApiError> {
    if text.len() <= max {
        return Ok(());
    }
    Err(invalid(format!(
        "{what} is {} bytes, over the limit of {max}",
        text.len()
    )))
}

/// Checks that `text` nests at most [`MAX_DEPTH`] levels.
fn shallow(what: &'static str, text: &str, enclosing: usize) -> Result<(), ApiError> {
    depth::check(what, text.as_bytes(), enclosing).map_err(|e| invalid(e.to_string()))
}

/// Parses a guest's whole object (at most `max_bytes`, at most [`MAX_DEPTH`] deep) and finds
/// what it is: the kind from apiVersion and kind, the key from metadata. A create may leave the
/// name to `generateName`.
pub fn object(json: &str, max_bytes: usize, create: bool) -> Result<(ObjectRef, Value), ApiError> {
    bounded("the object", json, max_bytes)?;
    shallow("the object", json, 0)?;
    let value: Value = serde_json::from_str(json)
        .map_err(|e| invalid(format!("object is not valid JSON: {e}")))?;
    let text = |pointer: &str| match value.pointer(pointer) {
        None => Ok(""),
        Some(Value::String(text)) => Ok(text.as_str()),
        Some(_) => Err(invalid(format!("{pointer} is not a string"))),
    };
    let (api_version, kind) = (text("/apiVersion")?, text("/kind")?);
    if api_version.is_empty() || kind.is_empty() {
        return Err(invalid("object has no apiVersion or kind"));
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = GroupVersionKind::gvk(group, version, kind);
    self::kind(&kind)?;
    if kind.api_version() != api_version {
        return Err(invalid(format!(
            "apiVersion {:?} is not group/version, or version for the core group",
            cut(api_version)
        )));
    }
    let (namespace, name) = (text("/metadata/namespace")?, text("/metadata/name")?);
    self::namespace(namespace)?;
    let generated = create && name.is_empty() && !text("/metadata/generateName")?.is_empty();
    if !generated {
        self::name(name)?;
    }
    let metadata = value.get("metadata").unwrap_or(&Value::Null);
    ObjectMeta::deserialize(metadata).map_err(|e| {
        invalid(format!(
            "metadata is not object metadata: {}",
            cut(&e.to_string())
        ))
    })?;
    let target = ObjectRef {
        kind,
        key: ObjectKey::new(namespace, name),
    };
    Ok((target, value))
}

/// A patch body as the guest sent it.
pub enum PatchText {
    /// JSON merge patch.
    Merge(String),
    /// JSON patch operations.
    Json(String),
    /// Server-side apply of a partial object.
    Apply {
        /// The applied object.
        object: String,
        /// Take over conflicting fields.
        force: bool,
    },
}

/// Parses a guest's patch body of at most `max_bytes`. A merge patch or an applied object nests
/// at most [`MAX_DEPTH`] levels, so what it makes of an object does too; a JSON patch's
/// operations are checked by [`json_patch_depth`].
pub fn patch(body: PatchText, max_bytes: usize) -> Result<Patch, ApiError> {
    let parse = |text: &str, what: &'static str, enclosing: usize| {
        bounded(what, text, max_bytes)?;
        shallow(what, text, enclosing)?;
        serde_json::from_str::<Value>(text)
            .map_err(|e| invalid(format!("{what} is not valid JSON: {e}")))
    };
    Ok(match body {
        PatchText::Merge(text) => match parse(&text, "merge patch", 0)? {
            object @ Value::Object(_) => Patch::Merge(object),
            _ => return Err(invalid("a merge patch must be a JSON object")),
        },
        // An operation's value sits inside the array and the operation.
        PatchText::Json(text) => match parse(&text, "JSON patch", 2)? {
            ops @ Value::Array(_) => {
                json_patch::Patch::deserialize(&ops).map_err(|e| {
                    invalid(format!(
                        "a JSON patch operation is malformed: {}",
                        cut(&e.to_string())
                    ))
                })?;
                json_patch_depth(&ops)?;
                Patch::Json(ops)
            }
            _ => return Err(invalid("a JSON patch must be an array of operations")),
        },
        PatchText::Apply { object, force } => match parse(&object, "applied object", 0)? {
            object @ Value::Object(_) => Patch::Apply { object, force },
            _ => return Err(invalid("an applied object must be a JSON object")),
        },
    })
}

/// Checks that no operation of a JSON patch can make the object nest deeper than [`MAX_DEPTH`],
/// without knowing the object: an operation's value lands as deep as its path has segments, so
/// `add`, `replace` and `test` need segments plus the value's depth within the bound, and `copy`
/// and `move`, whose value comes from the object, may not put it deeper than they take it from
/// (so they never make an object deeper than it was). A `remove` path is within the bound like
/// any other. Conservative: a copy into a deeper place is refused even when the value is shallow.
fn json_patch_depth(ops: &Value) -> Result<(), ApiError> {
    let segments = |pointer: &Value| {
        let pointer = pointer.as_str().unwrap_or_default();
        pointer.bytes().filter(|&b| b == b'/').count()
    };
    for (index, op) in ops.as_array().into_iter().flatten().enumerate() {
        let path = segments(&op["path"]);
        let value = op.get("value").map_or(0, depth::of_value);
        let deepest = match op["op"].as_str() {
            Some("copy" | "move") if path > segments(&op["from"]) => {
                return Err(invalid(format!(
                    "JSON patch operation {index} copies or moves a value to a deeper path than \
                     it takes it from, which could nest the object deeper than {MAX_DEPTH} levels"
                )));
            }
            _ => path + value,
        };
        if deepest > MAX_DEPTH {
            return Err(invalid(format!(
                "JSON patch operation {index} would nest the object {deepest} levels deep \
                 ({path} path segments and a value {value} deep), over the limit of {MAX_DEPTH}"
            )));
        }
    }
    Ok(())
}

/// `text` cut to at most `max` bytes at a character boundary, saying how much was cut.
pub fn truncated(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let cut_at = (0..=max)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let dropped = text.len() - cut_at;
    text.truncate(cut_at);
    text.push_str(&format!("…[{dropped} more bytes]"));
    text
}

/// The start of a rejected string, for an error message that cannot itself be huge.
pub fn cut(text: &str) -> &str {
    let end = (0..=text.len().min(64))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    &text[..end]
}

/// Whether `text` is a DNS-1123 label: 1-63 lowercase letters, digits or dashes, no dash at
/// either end.
pub fn dns_label(text: &str) -> bool {
    (1..=MAX_LABEL).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// Whether `text` is a DNS-1123 subdomain: dot-separated labels, at most 253 characters.
pub fn dns_subdomain(text: &str) -> bool {
    text.len() <= MAX_NAME && text.split('.').all(dns_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_change_the_request_path_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            "../secrets/token",
            "a/b",
            "%2e%2e",
            "x?dryRun=All",
            "x#frag",
            "a b",
            "a\\b",
            "naïve",
            "a<b",
            "a`b",
            &"a".repeat(254),
        ] {
            assert!(name(bad).is_err(), "{bad:?} passed");
        }
        for good in [
            "web",
            "web-1.example",
            "system:controller:x",
            &"a".repeat(253),
        ] {
            assert!(name(good).is_ok(), "{good:?} refused");
        }
    }

    #[test]
    fn namespaces_and_kinds_follow_kubernetes_rules() {
        assert!(namespace("").is_ok() && namespace("team-a").is_ok());
        for bad in ["Team", "a/secrets/x?", "..", "-a", &"a".repeat(64)] {
            assert!(namespace(bad).is_err(), "{bad:?} passed");
        }
        assert!(kind(&GroupVersionKind::gvk("", "v1", "ConfigMap")).is_ok());
        assert!(kind(&GroupVersionKind::gvk("apps", "v1", "Deployment")).is_ok());
        for (group, version, name) in [
            ("", "v1/namespaces/a/secrets/b#", "ConfigMap"),
            ("apps/v1", "v1", "Deployment"),
            ("", "v1", "Config/Map"),
            ("", "v1", ""),
            ("", "", "ConfigMap"),
            ("Apps", "v1", "Deployment"),
        ] {
            let gvk = GroupVersionKind::gvk(group, version, name);
            assert!(kind(&gvk).is_err(), "{gvk:?} passed");
        }
    }

    #[test]
    fn objects_are_parsed_into_their_kind_and_key() {
        let json = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"shop","name":"web"}}"#;
        let (target, value) = object(json, 1 << 20, false).unwrap();
        assert_eq!(target.to_string(), "Deployment.apps/v1 shop/web");
        assert_eq!(value["kind"], "Deployment");
        let generated = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"a","generateName":"x-"}}"#;
        assert!(object(generated, 1 << 20, true).is_ok());
        assert!(
            object(generated, 1 << 20, false).is_err(),
            "an update needs a name"
        );
    }

    #[test]
    fn malformed_or_oversized_objects_are_invalid() {
        let message = |json: &str| object(json, 256, false).unwrap_err().message;
        assert!(
            message(r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"#)
                .contains("not valid JSON")
        );
        assert!(message(r#"{"metadata":{}}"#).contains("no apiVersion or kind"));
        assert!(
            message(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":7}}"#)
                .contains("not a string")
        );
        let smuggled = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"a/secrets/b?x=","name":"y"}}"#;
        assert!(message(smuggled).contains("not a DNS label"));
        let big = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","data":{{"a":"{}"}}}}"#,
            "x".repeat(300)
        );
        assert!(message(&big).contains("over the limit of 256"));
        let not_ops = patch(PatchText::Json("{}".to_owned()), 256).unwrap_err();
        assert!(not_ops.message.contains("array of operations"));
        let not_object = patch(PatchText::Merge("[]".to_owned()), 256).unwrap_err();
        assert!(not_object.message.contains("JSON object"));
    }

    #[test]
    fn what_the_client_could_not_send_as_checked_is_invalid_here() {
        // Inputs the fuzz targets found (host/src/fuzz/boundary.rs): each passed the boundary and
        // then failed in the client as `unavailable`, or was checked as another apiVersion.
        let message = |json: &str| object(json, 1 << 10, false).unwrap_err().message;
        let core_with_a_slash =
            r#"{"apiVersion":"/v1","kind":"ConfigMap","metadata":{"name":"a"}}"#;
        assert!(message(core_with_a_slash).contains("apiVersion \"/v1\""));
        let bad_metadata =
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":false}}"#;
        assert!(message(bad_metadata).contains("not object metadata"));
        let apply = |text: &str| {
            let object = text.to_owned();
            patch(
                PatchText::Apply {
                    object,
                    force: false,
                },
                256,
            )
        };
        assert!(
            apply("[]")
                .unwrap_err()
                .message
                .contains("must be a JSON object")
        );
        assert!(apply(r#"{"metadata":{}}"#).is_ok());
        let ops = |text: &str| patch(PatchText::Json(text.to_owned()), 256);
        assert!(
            ops("[1]")
                .unwrap_err()
                .message
                .contains("operation is malformed")
        );
        assert!(ops(r#"[{"op":"remove","path":"/data/a"}]"#).is_ok());
    }

    #[test]
    fn nothing_a_guest_sends_can_nest_an_object_deeper_than_the_bound() {
        let object = |spec: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a"}},"x":{spec}}}"#
            )
        };
        let max = 1 << 20;
        let deepest = object(&depth::nested(MAX_DEPTH - 1));
        assert!(self::object(&deepest, max, false).is_ok());
        let message = self::object(&object(&depth::nested(300)), max, false)
            .unwrap_err()
            .message;
        assert_eq!(
            message,
            "the object is nested 301 levels deep, over the limit of 64"
        );
        let merge = |text: String| patch(PatchText::Merge(text), max);
        assert!(merge(depth::nested(MAX_DEPTH)).is_ok());
        assert!(merge(depth::nested(MAX_DEPTH + 1)).is_err());
        let apply = |text: String| {
            let object = text;
            patch(
                PatchText::Apply {
                    object,
                    force: true,
                },
                max,
            )
        };
        assert!(apply(depth::nested(MAX_DEPTH + 1)).is_err());

        let ops = |ops: Value| patch(PatchText::Json(ops.to_string()), max);
        let path = |segments: usize| "/a".repeat(segments);
        // The attack of the issue: one level at a time, through the path.
        assert!(ops(serde_json::json!([{"op": "add", "path": path(64), "value": {}}])).is_err());
        assert!(ops(serde_json::json!([{"op": "add", "path": path(63), "value": {}}])).is_ok());
        assert!(ops(serde_json::json!([{"op": "add", "path": path(64), "value": 1}])).is_ok());
        assert!(ops(serde_json::json!([{"op": "remove", "path": path(65)}])).is_err());
        let value: Value = serde_json::from_str(&depth::nested(10)).unwrap();
        let refused = ops(serde_json::json!([{"op": "replace", "path": path(55), "value": value}]))
            .unwrap_err();
        assert!(
            refused
                .message
                .contains("65 levels deep (55 path segments and a value 10 deep)"),
            "{}",
            refused.message
        );
        for (from, to, ok) in [(3, 3, true), (3, 1, true), (1, 2, false)] {
            for op in ["copy", "move"] {
                let sent = serde_json::json!([{"op": op, "from": path(from), "path": path(to)}]);
                assert_eq!(ops(sent).is_ok(), ok, "{op} from {from} to {to}");
            }
        }
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        assert_eq!(truncated("héllo".to_owned(), 2), "h…[5 more bytes]");
        assert_eq!(truncated("short".to_owned(), 10), "short");
    }
}
