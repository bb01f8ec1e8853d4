//! Fuzzes the guest boundary (`host/contract/src/boundary.rs`): kinds, namespaces and names; whole objects
//! turned into the request the host would send; patch bodies; and the cutting of log and event
//! text. What the boundary accepts must make a request whose path has exactly the segments of the
//! validated kind, namespace and name, with nothing a server would decode, clean or cut, and
//! nest no object deeper than [`MAX_DEPTH`].

use kube::api::{DeleteParams, DynamicObject, PatchParams, PostParams};
use kube::core::{ApiResource, Resource};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::{MAX_ERROR, fuzz, hostile_text, mangled, parse, short_error};
use wasmop_contract::boundary::{self, PatchText};
use wasmop_contract::depth::{self, MAX_DEPTH};
use wasmop_contract::imports::Patch;
use wasmop_contract::object::{GroupVersionKind, ObjectRef};

/// The object and patch limit the targets pass the boundary.
const MAX_BYTES: usize = 64 << 10;

#[test]
fn fuzz_kinds_namespaces_and_names() {
    fuzz(
        "kinds-namespaces-names",
        (kind(), hostile_text(), hostile_text()),
        |(kind, namespace, name)| {
            let len = kind.group.len() + kind.version.len() + kind.kind.len();
            let len = len + namespace.len() + name.len();
            let checked = parse(len, || {
                boundary::object_ref(kind.clone(), namespace.clone(), name.clone())
            })?;
            match checked {
                Ok(target) => {
                    prop_assert_eq!(&target.kind, &kind);
                    prop_assert_eq!(
                        (&target.key.namespace, &target.key.name),
                        (&namespace, &name)
                    );
                    for verb in [Verb::Get, Verb::Update, Verb::Patch, Verb::Delete] {
                        request_has_the_segments(&target, verb)?;
                    }
                }
                Err(error) => short_error(&error.message)?,
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_objects_become_requests() {
    fuzz(
        "objects",
        (object_text(), any::<bool>()),
        |(json, create)| {
            let checked = parse(json.len(), || boundary::object(&json, MAX_BYTES, create))?;
            let (target, value) = match checked {
                Ok(accepted) => accepted,
                Err(error) => return short_error(&error.message),
            };
            prop_assert!(json.len() <= MAX_BYTES);
            prop_assert!(depth::of_value(&value) <= MAX_DEPTH);
            prop_assert!(boundary::kind(&target.kind).is_ok());
            prop_assert!(boundary::namespace(&target.key.namespace).is_ok());
            let text = |pointer: &str| value.pointer(pointer).and_then(Value::as_str);
            let api_version = target.kind.api_version();
            prop_assert_eq!(
                text("/apiVersion"),
                Some(api_version.as_str()),
                "the object's apiVersion is not the kind's the request is checked for"
            );
            prop_assert_eq!(text("/kind"), Some(target.kind.kind.as_str()));
            prop_assert_eq!(
                text("/metadata/namespace").unwrap_or(""),
                &target.key.namespace
            );
            prop_assert_eq!(text("/metadata/name").unwrap_or(""), &target.key.name);
            let generated = text("/metadata/generateName").is_some_and(|g| !g.is_empty());
            if target.key.name.is_empty() {
                prop_assert!(
                    create && generated,
                    "an object without a name for an update"
                );
                return request_has_the_segments(&target, Verb::Create);
            }
            prop_assert!(boundary::name(&target.key.name).is_ok());
            let verbs = [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete];
            for verb in verbs {
                request_has_the_segments(&target, verb)?;
            }
            prop_assert!(
                serde_json::from_value::<DynamicObject>(value).is_ok(),
                "the client cannot send an object the boundary accepted"
            );
            Ok(())
        },
    );
}

#[test]
fn fuzz_patches() {
    fuzz(
        "patches",
        (0..3u8, patch_text(), any::<bool>()),
        |(which, text, force)| {
            let body = match which {
                0 => PatchText::Merge(text.clone()),
                1 => PatchText::Json(text.clone()),
                _ => PatchText::Apply {
                    object: text.clone(),
                    force,
                },
            };
            let checked = parse(text.len(), || boundary::patch(body, MAX_BYTES))?;
            let patch = match checked {
                Ok(patch) => patch,
                Err(error) => return short_error(&error.message),
            };
            prop_assert!(text.len() <= MAX_BYTES);
            match patch {
                Patch::Merge(object) => {
                    prop_assert!(object.is_object() && which == 0);
                    prop_assert!(depth::of_value(&object) <= MAX_DEPTH);
                }
                Patch::Json(ops) => {
                    prop_assert!(which == 1);
                    let ops = serde_json::from_value::<json_patch::Patch>(ops);
                    prop_assert!(
                        ops.is_ok(),
                        "the client cannot send a JSON patch the boundary accepted"
                    );
                    let mut patched = json!({});
                    if json_patch::patch(&mut patched, &ops.expect("checked")).is_ok() {
                        prop_assert!(depth::of_value(&patched) <= MAX_DEPTH);
                    }
                }
                Patch::Apply { object, force: f } => {
                    prop_assert!(which == 2 && f == force);
                    prop_assert!(depth::of_value(&object) <= MAX_DEPTH);
                    prop_assert!(
                        object.is_object(),
                        "an applied object that is not an object"
                    );
                }
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_log_and_event_text_is_cut_at_a_character() {
    fuzz("cut-text", (hostile_text(), 0..MAX_ERROR), |(text, max)| {
        let cut = parse(text.len(), || boundary::truncated(text.clone(), max))?;
        if text.len() <= max {
            prop_assert_eq!(cut, text);
            return Ok(());
        }
        let kept = cut.find("…[").expect("a cut text says so");
        prop_assert!(
            kept <= max && max - kept < 4,
            "kept {kept} of at most {max}"
        );
        prop_assert!(text.starts_with(&cut[..kept]));
        prop_assert_eq!(&cut[kept..], format!("…[{} more bytes]", text.len() - kept));
        Ok(())
    });
}

// === requests ===

/// The writes and reads the client sends for one object.
#[derive(Debug, Clone, Copy)]
pub(super) enum Verb {
    Create,
    Get,
    Update,
    Patch,
    Delete,
}

/// Checks that the request kube builds for `verb` on `target` (as the client does) has exactly
/// the path segments of the validated parts and no query the host did not set.
pub(super) fn request_has_the_segments(
    target: &ObjectRef,
    verb: Verb,
) -> Result<(), TestCaseError> {
    let resource = ApiResource::from_gvk(&target.kind);
    let namespace = Some(target.key.namespace.as_str()).filter(|n| !n.is_empty());
    let request = kube::core::Request::new(DynamicObject::url_path(&resource, namespace));
    let name = target.key.name.as_str();
    let body = br#"{}"#.to_vec();
    let built = match verb {
        Verb::Create => request.create(&PostParams::default(), body),
        Verb::Get => request.get(name, &Default::default()),
        Verb::Update => request.replace(name, &PostParams::default(), body),
        Verb::Patch => {
            let patch = kube::api::Patch::Merge(json!({}));
            request.patch(name, &PatchParams::default(), &patch)
        }
        Verb::Delete => request.delete(name, &DeleteParams::default()),
    };
    let built = built
        .map_err(|e| TestCaseError::fail(format!("{verb:?} of {target} cannot be built: {e}")))?;
    let kind = &target.kind;
    let mut expected: Vec<&str> = match kind.group.as_str() {
        "" => vec!["", "api", &kind.version],
        group => vec!["", "apis", group, &kind.version],
    };
    if let Some(namespace) = namespace {
        expected.extend(["namespaces", namespace]);
    }
    expected.push(&resource.plural);
    if !matches!(verb, Verb::Create) {
        expected.push(name);
    }
    let path: Vec<&str> = built.uri().path().split('/').collect();
    prop_assert_eq!(&path, &expected, "{:?} of {}", verb, target);
    for segment in &path[1..] {
        prop_assert!(
            !matches!(*segment, "" | "." | "..") && !segment.contains('%'),
            "segment {segment:?} a server would decode or clean"
        );
    }
    let query = built.uri().query().unwrap_or_default();
    prop_assert!(
        query.is_empty(),
        "{verb:?} of {target} carries the query {query:?}"
    );
    Ok(())
}

// === inputs ===

/// Kinds: real ones, near misses, and hostile parts.
pub(super) fn kind() -> impl Strategy<Value = GroupVersionKind> {
    let real = prop::sample::select(vec![
        ("", "v1", "ConfigMap"),
        ("apps", "v1", "Deployment"),
        ("example.wasmop.dev", "v1alpha1", "WebApp"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ])
    .prop_map(|(g, v, k)| GroupVersionKind::gvk(g, v, k));
    let hostile = (hostile_text(), hostile_text(), hostile_text())
        .prop_map(|(g, v, k)| GroupVersionKind::gvk(&g, &v, &k));
    let near = ("[a-z.]{0,20}", "v[0-9a-z]{0,8}", "[A-Z][A-Za-z0-9]{0,70}")
        .prop_map(|(g, v, k)| GroupVersionKind::gvk(&g, &v, &k));
    prop_oneof![2 => real, 1 => hostile, 2 => near]
}

/// JSON values of any shape, a few levels deep.
pub(super) fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        hostile_text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(hostile_text(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A field that is usually a string, sometimes absent or of another type.
fn field(text: impl Strategy<Value = String>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        6 => text.prop_map(|t| Some(Value::String(t))),
        1 => Just(None),
        1 => json_value().prop_map(Some),
    ]
}

/// The text of objects shaped like Kubernetes objects, with hostile parts, sometimes mangled.
fn object_text() -> impl Strategy<Value = String> {
    let api_version = prop_oneof![
        prop::sample::select(vec![
            "v1",
            "apps/v1",
            "example.wasmop.dev/v1alpha1",
            "/v1",
            "v1/"
        ])
        .prop_map(str::to_owned),
        "[a-z./]{0,12}",
        hostile_text(),
    ];
    let kind = prop_oneof![
        prop::sample::select(vec!["ConfigMap", "Deployment", "WebApp"]).prop_map(str::to_owned),
        hostile_text(),
    ];
    let name = prop_oneof![3 => "[a-z0-9.-]{1,20}", 2 => hostile_text()];
    let namespace = prop_oneof![3 => "[a-z0-9-]{0,12}", 1 => hostile_text()];
    let metadata = (
        field(namespace),
        field(name),
        field("[a-z-]{0,6}"),
        json_value(),
    );
    let document = (
        field(api_version),
        field(kind),
        metadata,
        json_value(),
        bulk(),
    );
    let text = document.prop_map(|(api_version, kind, metadata, data, bulk)| {
        let (namespace, name, generate_name, extra) = metadata;
        let mut meta = json!({ "labels": extra });
        let fields = [
            ("namespace", namespace),
            ("name", name),
            ("generateName", generate_name),
        ];
        for (key, value) in fields {
            if let Some(value) = value {
                meta[key] = value;
            }
        }
        let mut object = json!({ "metadata": meta, "data": data, "bulk": bulk });
        for (key, value) in [("apiVersion", api_version), ("kind", kind)] {
            if let Some(value) = value {
                object[key] = value;
            }
        }
        object.to_string()
    });
    repeated_name(text)
}

/// Patch bodies: merge objects, JSON patch operations, and JSON of any shape, sometimes mangled.
fn patch_text() -> impl Strategy<Value = String> {
    let op = (
        prop::sample::select(vec![
            "add", "remove", "replace", "move", "copy", "test", "x",
        ]),
        prop_oneof!["(/[a-z~01]{0,5}){0,4}", hostile_text()],
        json_value(),
    )
        .prop_map(
            |(op, path, value)| json!({"op": op, "path": path, "from": "/a", "value": value}),
        );
    let ops = prop::collection::vec(op, 0..5).prop_map(|ops| Value::Array(ops).to_string());
    let any = (json_value(), bulk()).prop_map(|(value, bulk)| match value {
        Value::Object(mut map) => {
            map.insert("bulk".into(), bulk);
            Value::Object(map).to_string()
        }
        other => other.to_string(),
    });
    mangled(prop_oneof![ops, any])
}

/// Now and then a large value (up to past [`MAX_BYTES`]) of the shape that costs the most per
/// byte to parse, or nesting past serde_json's depth limit.
fn bulk() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => Just(Value::Null),
        1 => (0..40_000usize).prop_map(|n| Value::Array(vec![Value::from(0); n])),
        1 => (0..200usize).prop_map(|depth| {
            (0..depth).fold(Value::Null, |inner, _| Value::Array(vec![inner]))
        }),
    ]
}

/// `text` mangled now and then, or with a key repeated (serde_json keeps the last of repeated
/// keys: the checks must see what is sent).
fn repeated_name(text: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    (mangled(text), any::<bool>(), hostile_text()).prop_map(|(text, repeat, name)| {
        match text.strip_suffix('}') {
            Some(object) if repeat => {
                format!("{object},\"metadata\":{{\"name\":{}}}}}", Value::from(name))
            }
            _ => text,
        }
    })
}
