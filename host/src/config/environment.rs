//! A plugin's `args` and `env` as a config file's `plugins` entry and a WasmReconciler's spec
//! give them, in a container's shape: `args` a list of strings, `env` a list of `{name, value}`.
//! They are checked against the contract's bounds ([`Environment::new`]) where they are read, so
//! a tenant's spec cannot make every instance start with more than the bounds allow.

use serde_json::{Map, Value};
use wasmop_contract::environment::Environment;

use super::SettingError;
use super::file::scalar;

/// The keys this module reads.
pub(super) const KEYS: [&str; 2] = ["args", "env"];

/// The environment `fields` (an entry or a spec, named `at`) set; empty when they set none.
pub(super) fn from_fields(
    fields: &Map<String, Value>,
    at: &str,
) -> Result<Environment, SettingError> {
    let present = |key: &str| fields.get(key).filter(|value| !value.is_null());
    let args = match present("args") {
        Some(value) => args(value).map_err(|error| error.at(format!("{at}.args")))?,
        None => Vec::new(),
    };
    let vars = match present("env") {
        Some(value) => vars(value).map_err(|error| error.at(format!("{at}.env")))?,
        None => Vec::new(),
    };
    Environment::new(args, vars).map_err(|error| SettingError::from(error).at(at.to_owned()))
}

/// A list of scalars, as text.
fn args(value: &Value) -> Result<Vec<String>, SettingError> {
    let Value::Array(items) = value else {
        return Err(SettingError::shape("a list of arguments", value));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            scalar(item)
                .map_err(|found| SettingError::shape("a value", found).at(format!("[{index}]")))
        })
        .collect()
}

/// A list of `{name, value}`.
fn vars(value: &Value) -> Result<Vec<(String, String)>, SettingError> {
    let Value::Array(items) = value else {
        return Err(SettingError::shape("a list of {name, value}", value));
    };
    let mut vars = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = |error: SettingError| error.at(format!("[{index}]"));
        let Value::Object(fields) = item else {
            return Err(at(SettingError::shape("a mapping of name and value", item)));
        };
        if let Some(key) = fields
            .keys()
            .find(|key| !["name", "value"].contains(&key.as_str()))
        {
            return Err(at(SettingError::Unknown {
                name: format!(" `{key}`"),
                known: "name, value".into(),
            }));
        }
        let text = |key: &str| match fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => scalar(value)
                .map(Some)
                .map_err(|found| at(SettingError::shape("a value", found).at(key.to_owned()))),
        };
        let name = text("name")?.ok_or_else(|| at(SettingError::Missing("name")))?;
        vars.push((name, text("value")?.unwrap_or_default()));
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(fields: Value) -> Result<Environment, String> {
        from_fields(fields.as_object().unwrap(), "spec").map_err(|error| error.to_string())
    }

    #[test]
    fn args_and_env_are_read_in_a_containers_shape() {
        let env = read(json!({
            "args": ["--feature-gates=RayJobDeletionPolicy=true", 2, true],
            "env": [{"name": "LOG_LEVEL", "value": "debug"}, {"name": "EMPTY"}],
            "memoryLimit": "64Mi",
        }))
        .unwrap();
        assert_eq!(
            env.args(),
            ["--feature-gates=RayJobDeletionPolicy=true", "2", "true"]
        );
        let vars = [
            ("LOG_LEVEL".into(), "debug".into()),
            ("EMPTY".into(), String::new()),
        ];
        assert_eq!(env.vars(), vars);
        assert_eq!(read(json!({})).unwrap(), Environment::default());
    }

    #[test]
    fn a_wrong_shape_or_an_unbounded_environment_names_where_it_is() {
        let cases = [
            (
                json!({"args": "--v=2"}),
                "`spec.args`: expected a list of arguments",
            ),
            (
                json!({"args": [{"a": 1}]}),
                "`spec.args`: `[0]`: expected a value",
            ),
            (
                json!({"env": {"A": "1"}}),
                "`spec.env`: expected a list of {name, value}",
            ),
            (
                json!({"env": [{"value": "1"}]}),
                "`spec.env`: `[0]`: a mapping needs `name`",
            ),
            (
                json!({"env": [{"name": "A", "valueFrom": {}}]}),
                "unknown setting `valueFrom`",
            ),
            (
                json!({"env": [{"name": "A-B"}]}),
                "`spec`: variable name \"A-B\"",
            ),
            (
                json!({"args": vec!["x"; 129]}),
                "`spec`: 129 arguments, over the limit of 128",
            ),
        ];
        for (fields, expected) in cases {
            let message = read(fields.clone()).unwrap_err();
            assert!(message.contains(expected), "{fields}: {message}");
        }
    }
}
