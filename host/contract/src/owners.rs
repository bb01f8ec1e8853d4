//! The owner references a plugin's write would set. The garbage collector deletes an object
//! whose owners are all gone, so an owner reference is a power: a plugin that may only patch an
//! object could otherwise get it deleted by naming an owner that does not exist. Every owner
//! reference a write sets must name an object the plugin may read, in the written object's
//! namespace or cluster-scoped, that its cache holds with that uid
//! ([`crate::capability::Power::Own`]).
//!
//! A JSON patch may set whole references (or the whole list, `metadata` or the object), never one
//! field of a reference, and may not copy or move anything into them: the host checks what it
//! can see before sending.

use serde::Deserialize;
use serde_json::Value;

use crate::boundary::{self, invalid};
use crate::imports::{ApiError, Patch, Write};
use crate::object::GroupVersionKind;

/// Where the owner references live in an object.
const OWNERS: &str = "/metadata/ownerReferences";

/// One owner reference a write sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The owner's kind.
    pub kind: GroupVersionKind,
    /// Its name.
    pub name: String,
    /// The uid the reference names.
    pub uid: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reference {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
}

/// The owner references `write` sets, checked to be references.
pub fn set_by(write: &Write) -> Result<Vec<Owner>, ApiError> {
    match write {
        Write::Create(object) | Write::Update(object) => in_object(object),
        Write::Patch {
            status: false,
            patch: Patch::Merge(object) | Patch::Apply { object, .. },
        } => in_object(object),
        Write::Patch {
            status: false,
            patch: Patch::Json(operations),
        } => in_operations(operations),
        Write::Patch { status: true, .. } | Write::UpdateStatus(_) | Write::Delete(_) => {
            Ok(Vec::new())
        }
    }
}

/// The owner references of an object (or a merge patch or applied object).
fn in_object(object: &Value) -> Result<Vec<Owner>, ApiError> {
    match object.pointer(OWNERS) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(list) => in_list(list),
    }
}

fn in_list(list: &Value) -> Result<Vec<Owner>, ApiError> {
    match list {
        Value::Array(references) => references.iter().map(owner).collect(),
        _ => Err(invalid("metadata.ownerReferences is not a list")),
    }
}

/// The owner references a JSON patch sets, wherever its operations put them.
fn in_operations(operations: &Value) -> Result<Vec<Owner>, ApiError> {
    let mut owners = Vec::new();
    for operation in operations.as_array().into_iter().flatten() {
        let text = |field: &str| operation.get(field).and_then(Value::as_str);
        let (op, path) = (text("op").unwrap_or(""), text("path").unwrap_or(""));
        let value = operation.get("value").unwrap_or(&Value::Null);
        let under = path
            .strip_prefix(OWNERS)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'));
        let holds = under.is_some() || path.is_empty() || path == "/metadata";
        if !holds || matches!(op, "remove" | "test") {
            continue;
        }
        if matches!(op, "move" | "copy") {
            return Err(invalid(
                "a JSON patch may not copy or move a value into metadata.ownerReferences",
            ));
        }
        let found = match under {
            Some("") => in_list(value)?,
            Some(index) if !index[1..].contains('/') => vec![owner(value)?],
            Some(_) => {
                return Err(invalid(
                    "a JSON patch may set whole owner references only, not their fields",
                ));
            }
            None if path.is_empty() => in_object(value)?,
            None => match value.get("ownerReferences") {
                None | Some(Value::Null) => Vec::new(),
                Some(list) => in_list(list)?,
            },
        };
        owners.extend(found);
    }
    Ok(owners)
}

/// One owner reference, its kind and name checked as a guest's are.
fn owner(reference: &Value) -> Result<Owner, ApiError> {
    let reference = Reference::deserialize(reference).map_err(|e| {
        invalid(format!(
            "an owner reference is not one: {}",
            boundary::cut(&e.to_string())
        ))
    })?;
    let (group, version) = reference
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", &reference.api_version));
    let kind = GroupVersionKind::gvk(group, version, &reference.kind);
    boundary::kind(&kind)?;
    boundary::name(&reference.name)?;
    boundary::bounded("an owner's uid", &reference.uid, boundary::MAX_SHORT_TEXT)?;
    Ok(Owner {
        kind,
        name: reference.name,
        uid: reference.uid,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn reference(uid: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": uid})
    }

    fn patch(operations: Value) -> Result<Vec<Owner>, ApiError> {
        set_by(&Write::Patch {
            patch: Patch::Json(operations),
            status: false,
        })
    }

    #[test]
    fn objects_and_merge_patches_give_their_references() {
        let object = json!({"metadata": {"ownerReferences": [reference("u1")]}});
        let owners = set_by(&Write::Create(object.clone())).unwrap();
        assert_eq!(
            owners[0].kind,
            GroupVersionKind::gvk("apps", "v1", "Deployment")
        );
        assert_eq!(
            (owners[0].name.as_str(), owners[0].uid.as_str()),
            ("web", "u1")
        );
        let merge = Write::Patch {
            patch: Patch::Merge(object),
            status: false,
        };
        assert_eq!(set_by(&merge).unwrap().len(), 1);
        let cleared = json!({"metadata": {"ownerReferences": null}});
        assert!(set_by(&Write::Update(cleared)).unwrap().is_empty());
        let status = Write::UpdateStatus(json!({"metadata": {"ownerReferences": [1]}}));
        assert!(set_by(&status).unwrap().is_empty());
    }

    #[test]
    fn json_patches_give_whole_references_wherever_they_put_them() {
        let whole = json!([{"op": "add", "path": "", "value":
            {"metadata": {"ownerReferences": [reference("a")]}}}]);
        let list = json!([{"op": "replace", "path": OWNERS, "value": [reference("b")]}]);
        let one =
            json!([{"op": "add", "path": "/metadata/ownerReferences/-", "value": reference("c")}]);
        let metadata = json!([{"op": "add", "path": "/metadata", "value":
            {"ownerReferences": [reference("d")]}}]);
        for (operations, uid) in [(whole, "a"), (list, "b"), (one, "c"), (metadata, "d")] {
            assert_eq!(patch(operations).unwrap()[0].uid, uid);
        }
        let unrelated = json!([{"op": "add", "path": "/metadata/labels/a", "value": "b"},
            {"op": "remove", "path": "/metadata/ownerReferences/0"}]);
        assert!(patch(unrelated).unwrap().is_empty());
    }

    #[test]
    fn field_edits_copies_and_malformed_references_are_invalid() {
        let field =
            json!([{"op": "replace", "path": "/metadata/ownerReferences/0/uid", "value": "x"}]);
        assert!(patch(field).is_err());
        let moved = json!([{"op": "copy", "from": "/spec", "path": "/metadata/ownerReferences"}]);
        assert!(patch(moved).is_err());
        let bad_kind = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Con/figMap", "name": "a", "uid": "u"}]}});
        assert!(set_by(&Write::Create(bad_kind)).is_err());
        let not_a_list = json!({"metadata": {"ownerReferences": {"a": 1}}});
        assert!(set_by(&Write::Create(not_a_list)).is_err());
    }
}
