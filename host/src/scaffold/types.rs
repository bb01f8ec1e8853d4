//! A custom resource's spec and status types in a plugin's language, generated from the one
//! source of truth: the `openAPIV3Schema` of its CRD (`crd.yaml` in the plugin's folder, which
//! `wasmop new` writes and the author edits). `wasmop generate` writes them again after an edit,
//! and `--check` says whether they are current, so the CRD the apiserver validates with and the
//! types the plugin reads and writes never drift apart.
//!
//! Each object with properties becomes a type named after its path (`WidgetSpec`,
//! `WidgetStatusConditions` for the items of `status.conditions`); a map
//! (`additionalProperties`) a map of its values; anything the schema leaves open
//! (`x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`, no type) the
//! language's JSON value. A field not under `required` is optional.

use serde_json::Value;

/// A property's type, as the schema gives it.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// `string`.
    Text,
    /// `integer`.
    Integer,
    /// `number`.
    Number,
    /// `boolean`.
    Boolean,
    /// `array` of the items' shape.
    List(Box<Shape>),
    /// `object` with `additionalProperties` of this shape.
    Map(Box<Shape>),
    /// `object` with properties: the named type generated for it.
    Named(String),
    /// Anything else: a JSON value.
    Any,
}

impl Shape {
    /// Whether this shape, or one it holds, is `wanted`.
    fn holds(&self, wanted: fn(&Shape) -> bool) -> bool {
        match self {
            Shape::List(inner) | Shape::Map(inner) => wanted(self) || inner.holds(wanted),
            shape => wanted(shape),
        }
    }
}

/// Whether a field of `types` holds a shape that is `wanted` (a map, an open value), which
/// decides the imports a generated file needs.
fn uses(types: &[Type], wanted: fn(&Shape) -> bool) -> bool {
    let mut fields = types.iter().flat_map(|ty| &ty.fields);
    fields.any(|field| field.shape.holds(wanted))
}

/// One field of a generated type.
#[derive(Debug, Clone, PartialEq)]
struct Field {
    /// Its JSON name.
    name: String,
    shape: Shape,
    required: bool,
    description: Option<String>,
}

/// One generated type: an object of the schema with properties.
#[derive(Debug, Clone, PartialEq)]
struct Type {
    name: String,
    /// Where it is in the object: `spec`, `status.conditions[]`.
    path: String,
    description: Option<String>,
    fields: Vec<Field>,
}

/// The types of a custom resource `kind`'s `spec` and `status`, read from its CRD's
/// `openAPIV3Schema` (`schema`): each with properties, outermost first.
fn collect(kind: &str, schema: &Value) -> Vec<Type> {
    let mut types = Vec::new();
    for part in ["spec", "status"] {
        let Some(object) = schema.pointer(&format!("/properties/{part}")) else {
            continue;
        };
        shape(&format!("{kind}{}", camel(part)), part, object, &mut types);
    }
    types
}

/// The shape of the schema `object` at `path` (`status.conditions[]`), adding the types it (and
/// what it holds) needs to `types` under the name `name`.
fn shape(name: &str, path: &str, object: &Value, types: &mut Vec<Type>) -> Shape {
    let open = [
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
    ];
    if open.iter().any(|flag| object[flag] == true) {
        return Shape::Any;
    }
    match object["type"].as_str() {
        Some("string") => Shape::Text,
        Some("integer") => Shape::Integer,
        Some("number") => Shape::Number,
        Some("boolean") => Shape::Boolean,
        Some("array") => {
            let items = shape(name, &format!("{path}[]"), &object["items"], types);
            Shape::List(Box::new(items))
        }
        Some("object") if object["properties"].is_object() => {
            let at = types.len();
            types.push(Type {
                name: name.to_owned(),
                path: path.to_owned(),
                description: description(object),
                fields: Vec::new(),
            });
            let required: Vec<&str> = object["required"]
                .as_array()
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let properties = object["properties"].as_object().into_iter().flatten();
            let fields = properties
                .map(|(field, schema)| Field {
                    name: field.clone(),
                    shape: shape(
                        &format!("{name}{}", camel(field)),
                        &format!("{path}.{field}"),
                        schema,
                        types,
                    ),
                    required: required.contains(&field.as_str()),
                    description: description(schema),
                })
                .collect();
            types[at].fields = fields;
            Shape::Named(name.to_owned())
        }
        Some("object") if object["additionalProperties"].is_object() => {
            let values = shape(
                name,
                &format!("{path}{{}}"),
                &object["additionalProperties"],
                types,
            );
            Shape::Map(Box::new(values))
        }
        _ => Shape::Any,
    }
}

fn description(schema: &Value) -> Option<String> {
    let text = schema["description"].as_str()?;
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `name` in CamelCase: its first letter and each letter after a non-alphanumeric upper case,
/// everything that is not a letter or digit dropped.
fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            upper = true;
            continue;
        }
        out.push(if upper { c.to_ascii_uppercase() } else { c });
        upper = false;
    }
    out
}

/// `name` in snake_case.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(if c.is_ascii_alphanumeric() {
            c.to_ascii_lowercase()
        } else {
            '_'
        });
    }
    out
}

/// The header every generated file starts with.
fn header(comment: &str, kind: &str) -> String {
    format!(
        "{comment} The spec and status of {kind}, generated by `wasmop generate` from crd.yaml's\n\
         {comment} openAPIV3Schema: edit the CRD, then run `wasmop generate` again; do not edit this file.\n"
    )
}

/// Rust: serde structs, optional fields as `Option`, JSON names kept by `rename`.
pub fn rust(kind: &str, schema: &Value) -> String {
    let types = collect(kind, schema);
    let mut out = header("//", kind);
    if uses(&types, |shape| matches!(shape, Shape::Map(_))) {
        out.push_str("\nuse std::collections::BTreeMap;\n");
    }
    out.push_str("\nuse serde::{Deserialize, Serialize};\n");
    if uses(&types, |shape| matches!(shape, Shape::Any)) {
        out.push_str("use wasmop_guest::serde_json::Value;\n");
    }
    for ty in types {
        let doc = ty
            .description
            .unwrap_or_else(|| format!("`{}` of a {kind}.", ty.path));
        out.push_str(&format!("\n/// {doc}\n"));
        out.push_str("#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]\n");
        out.push_str(&format!("pub struct {} {{\n", ty.name));
        for field in ty.fields {
            let doc = field
                .description
                .unwrap_or_else(|| format!("`{}`.", field.name));
            out.push_str(&format!("    /// {doc}\n"));
            let ident = rust_ident(&field.name);
            if ident.trim_start_matches("r#") != field.name {
                out.push_str(&format!("    #[serde(rename = \"{}\")]\n", field.name));
            }
            let ty = rust_shape(&field.shape);
            if field.required {
                out.push_str(&format!("    pub {ident}: {ty},\n"));
            } else {
                out.push_str("    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n");
                out.push_str(&format!("    pub {ident}: Option<{ty}>,\n"));
            }
        }
        out.push_str("}\n");
    }
    out
}

fn rust_shape(shape: &Shape) -> String {
    match shape {
        Shape::Text => "String".into(),
        Shape::Integer => "i64".into(),
        Shape::Number => "f64".into(),
        Shape::Boolean => "bool".into(),
        Shape::List(items) => format!("Vec<{}>", rust_shape(items)),
        Shape::Map(values) => format!("BTreeMap<String, {}>", rust_shape(values)),
        Shape::Named(name) => name.clone(),
        Shape::Any => "Value".into(),
    }
}

/// A Rust field name for the JSON `name`: snake case, a raw identifier for a keyword.
fn rust_ident(name: &str) -> String {
    const KEYWORDS: [&str; 12] = [
        "type", "match", "ref", "use", "mod", "move", "loop", "where", "impl", "fn", "in", "as",
    ];
    let ident = snake(name);
    match KEYWORDS.contains(&ident.as_str()) {
        true => format!("r#{ident}"),
        false => ident,
    }
}

/// TypeScript: interfaces, optional fields marked `?`.
pub fn typescript(kind: &str, schema: &Value) -> String {
    let mut out = header("//", kind);
    for ty in collect(kind, schema) {
        let doc = ty
            .description
            .unwrap_or_else(|| format!("`{}` of a {kind}.", ty.path));
        out.push_str(&format!(
            "\n/** {doc} */\nexport interface {} {{\n",
            ty.name
        ));
        for field in ty.fields {
            if let Some(doc) = field.description {
                out.push_str(&format!("  /** {doc} */\n"));
            }
            let key = match field
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                true => field.name.clone(),
                false => format!("'{}'", field.name.replace('\'', "\\'")),
            };
            let optional = if field.required { "" } else { "?" };
            out.push_str(&format!("  {key}{optional}: {};\n", ts_shape(&field.shape)));
        }
        out.push_str("}\n");
    }
    out
}

fn ts_shape(shape: &Shape) -> String {
    match shape {
        Shape::Text => "string".into(),
        Shape::Integer | Shape::Number => "number".into(),
        Shape::Boolean => "boolean".into(),
        Shape::List(items) => format!("Array<{}>", ts_shape(items)),
        Shape::Map(values) => format!("Record<string, {}>", ts_shape(values)),
        Shape::Named(name) => name.clone(),
        Shape::Any => "unknown".into(),
    }
}

/// Go: structs with JSON tags; optional scalars and objects as pointers, `omitempty`.
pub fn go(kind: &str, schema: &Value) -> String {
    let mut out = header("//", kind);
    out.push_str("\npackage main\n");
    let types = collect(kind, schema);
    if uses(&types, |shape| matches!(shape, Shape::Any)) {
        out.push_str("\nimport \"encoding/json\"\n");
    }
    for ty in types {
        let doc = match &ty.description {
            Some(description) => lower_first(description),
            None => format!("`{}` of a {kind}.", ty.path),
        };
        let name = &ty.name;
        out.push_str(&format!("\n// {name} is {doc}\ntype {name} struct {{\n"));
        for field in ty.fields {
            if let Some(doc) = field.description {
                out.push_str(&format!("\t// {doc}\n"));
            }
            let shape = go_shape(&field.shape);
            let pointer = !field.required
                && !matches!(field.shape, Shape::List(_) | Shape::Map(_) | Shape::Any);
            let (ty, tag) = match (field.required, pointer) {
                (true, _) => (shape, field.name.clone()),
                (false, true) => (format!("*{shape}"), format!("{},omitempty", field.name)),
                (false, false) => (shape, format!("{},omitempty", field.name)),
            };
            out.push_str(&format!("\t{} {ty} `json:\"{tag}\"`\n", camel(&field.name)));
        }
        out.push_str("}\n");
    }
    out
}

fn go_shape(shape: &Shape) -> String {
    match shape {
        Shape::Text => "string".into(),
        Shape::Integer => "int64".into(),
        Shape::Number => "float64".into(),
        Shape::Boolean => "bool".into(),
        Shape::List(items) => format!("[]{}", go_shape(items)),
        Shape::Map(values) => format!("map[string]{}", go_shape(values)),
        Shape::Named(name) => name.clone(),
        Shape::Any => "json.RawMessage".into(),
    }
}

/// `text` with its first letter in lower case, to follow "X is" in a Go doc comment.
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Python: `TypedDict`s over the JSON dictionaries the SDK hands out, required keys marked
/// `Required`.
pub fn python(kind: &str, schema: &Value) -> String {
    let mut out = header("#", kind);
    out.push_str("\nfrom typing import Any, Dict, List, Required, TypedDict\n");
    // Inner types first: Python reads a class's annotations as it defines it.
    for ty in collect(kind, schema).into_iter().rev() {
        let doc = ty
            .description
            .unwrap_or_else(|| format!("`{}` of a {kind}.", ty.path));
        let fields: Vec<String> = ty
            .fields
            .iter()
            .map(|field| {
                let shape = py_shape(&field.shape);
                let shape = if field.required {
                    format!("Required[{shape}]")
                } else {
                    shape
                };
                let doc = field
                    .description
                    .as_ref()
                    .map(|doc| format!("        # {doc}\n"));
                format!(
                    "{}        {:?}: {shape},\n",
                    doc.unwrap_or_default(),
                    field.name
                )
            })
            .collect();
        out.push_str(&format!(
            "\n{name} = TypedDict(\n    {name:?},\n    {{\n{fields}    }},\n    total=False,\n)\n{name}.__doc__ = {doc:?}\n",
            name = ty.name,
            fields = fields.concat(),
        ));
    }
    out
}

fn py_shape(shape: &Shape) -> String {
    match shape {
        Shape::Text => "str".into(),
        Shape::Integer => "int".into(),
        Shape::Number => "float".into(),
        Shape::Boolean => "bool".into(),
        Shape::List(items) => format!("List[{}]", py_shape(items)),
        Shape::Map(values) => format!("Dict[str, {}]", py_shape(values)),
        Shape::Named(name) => name.clone(),
        Shape::Any => "Any".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["type"], "properties": {
                "type": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "port": {"x-kubernetes-int-or-string": true},
                "weight": {"type": "number"},
                "on": {"type": "boolean"},
                "backends": {"type": "array", "items": {"type": "object", "properties": {"host-name": {"type": "string"}}}},
            }},
        }})
    }

    #[test]
    fn every_shape_has_its_type_in_each_language() {
        let rust = rust("Route", &schema());
        for line in [
            "    /// `type`.\n    pub r#type: String,",
            "pub labels: Option<BTreeMap<String, String>>,",
            "pub port: Option<Value>,",
            "pub weight: Option<f64>,",
            "pub backends: Option<Vec<RouteSpecBackends>>,",
            "    #[serde(rename = \"host-name\")]\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub host_name: Option<String>,",
        ] {
            assert!(rust.contains(line), "{line}\n{rust}");
        }
        assert!(
            rust.contains("use std::collections::BTreeMap;")
                && rust.contains("use wasmop_guest::serde_json::Value;")
        );
        let ts = typescript("Route", &schema());
        assert!(
            ts.contains("  type: string;\n") && ts.contains("  labels?: Record<string, string>;"),
            "{ts}"
        );
        assert!(
            ts.contains("  'host-name'?: string;") && ts.contains("  port?: unknown;"),
            "{ts}"
        );
        let go = go("Route", &schema());
        assert!(
            go.contains("\tType string `json:\"type\"`")
                && go.contains("\tPort json.RawMessage `json:\"port,omitempty\"`"),
            "{go}"
        );
        assert!(
            go.contains("import \"encoding/json\"")
                && go.contains("\tHostName *string `json:\"host-name,omitempty\"`"),
            "{go}"
        );
        let python = python("Route", &schema());
        assert!(
            python.contains("\"type\": Required[str],")
                && python.contains("\"backends\": List[RouteSpecBackends],"),
            "{python}"
        );
        let inner = python.find("RouteSpecBackends = TypedDict").unwrap();
        assert!(
            inner < python.find("RouteSpec = TypedDict").unwrap(),
            "inner types first: {python}"
        );
    }

    #[test]
    fn a_schema_without_spec_or_status_generates_no_type() {
        let empty = json!({"type": "object"});
        assert!(!rust("Empty", &empty).contains("pub struct"));
        assert!(!rust("Empty", &empty).contains("BTreeMap"));
        assert_eq!(camel("last-transition_time"), "LastTransitionTime");
        assert_eq!(snake("observedGeneration"), "observed_generation");
    }
}
