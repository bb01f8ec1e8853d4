//! One plugin's overrides of the common plugin limits. Each limit is declared once, as a flag of
//! [`PluginLimits`]; [`OVERRIDES`] names the ones a plugin may override and the WasmReconciler
//! spec field each is set by. A config file's `plugins` entry sets them under the flags' names
//! (`memory-limit`), a WasmReconciler's spec under the CRD's (`memoryLimit`); both are parsed by
//! the flag's own parser (clap's, with no default and no environment variable) and applied by
//! clap's update of the parsed limits, so an override cannot mean anything its flag does not.

use std::ffi::OsString;

use clap::{Args, FromArgMatches};
use serde_json::{Map, Value};

use wasmop_contract::environment::Environment;

use super::{PluginLimits, SettingError, environment};

/// Every override: its flag's name (and a config file's key) and its WasmReconciler spec field.
pub const OVERRIDES: [(&str, &str); 6] = [
    ("memory-limit", "memoryLimit"),
    ("reconcile-timeout", "reconcileTimeout"),
    ("max-concurrent-reconciles", "maxConcurrentReconciles"),
    ("warm-instances", "warmInstances"),
    ("webhook-timeout", "webhookTimeout"),
    ("webhook-failure-policy", "webhookFailurePolicy"),
];

/// One plugin's overrides of [`PluginLimits`] (the flags it sets, each checked by its parser),
/// and the arguments and environment its guests start with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginOverrides {
    args: Vec<OsString>,
    environment: Environment,
    controllers: Vec<String>,
}

/// The flags of [`PluginLimits`] with no default and no environment variable, so that parsing
/// overrides yields only what they set.
fn limit_flags() -> clap::Command {
    PluginLimits::augment_args(clap::Command::new("overrides"))
        .no_binary_name(true)
        .mut_args(|arg| arg.default_value(None).env(None))
}

impl PluginOverrides {
    /// Sets the override of the flag `setting` to `text`, parsed as the flag parses it; an error
    /// for a bad value or a setting that is not one of [`OVERRIDES`].
    pub fn set(&mut self, setting: &str, text: &str) -> Result<(), SettingError> {
        if !OVERRIDES.iter().any(|(flag, _)| *flag == setting) {
            return Err(SettingError::Unknown {
                name: format!(" `{setting}`"),
                known: overrides(),
            });
        }
        let arg = OsString::from(format!("--{setting}={text}"));
        limit_flags()
            .try_get_matches_from([&arg])
            .map_err(|error| SettingError::Flag(clap_message(&error)))?;
        self.args
            .retain(|set| !set.to_string_lossy().starts_with(&format!("--{setting}=")));
        self.args.push(arg);
        Ok(())
    }

    /// The overrides a WasmReconciler's `spec` sets, under the CRD's field names, and its
    /// `args` and `env`; other fields are not overrides and are left alone.
    pub fn from_spec(spec: &Map<String, Value>) -> Result<Self, SettingError> {
        let mut overrides = PluginOverrides {
            environment: environment::from_fields(spec, "spec")?,
            ..PluginOverrides::default()
        };
        for (setting, field) in OVERRIDES {
            let Some(value) = spec.get(field).filter(|value| !value.is_null()) else {
                continue;
            };
            let at = |error: SettingError| error.at(format!("spec.{field}"));
            let text = super::file::scalar(value)
                .map_err(|found| at(SettingError::shape("a value", found)))?;
            overrides.set(setting, &text).map_err(at)?;
        }
        Ok(overrides)
    }

    /// The plugin's own `args` and `env` (a config file entry's, or its spec's), read from
    /// `fields` (named `at`).
    pub(super) fn read_environment(
        &mut self,
        fields: &Map<String, Value>,
        at: &str,
    ) -> Result<(), SettingError> {
        self.environment = environment::from_fields(fields, at)?;
        Ok(())
    }

    /// The arguments and environment variables the plugin's guests start with.
    pub fn environment(&self) -> &Environment {
        &self.environment
    }

    /// Runs each of `controllers`, of a module of several, as a plugin of its own.
    pub(super) fn set_controllers(&mut self, controllers: Vec<String>) {
        self.controllers = controllers;
    }

    /// The controllers of the module each run as a plugin of its own (none: the module is one
    /// plugin).
    pub fn controllers(&self) -> &[String] {
        &self.controllers
    }

    /// Applies the overrides to `limits`.
    pub fn apply(&self, limits: &mut PluginLimits) {
        let mut matches = limit_flags()
            .try_get_matches_from(&self.args)
            .expect("each override was parsed when it was set");
        limits
            .update_from_arg_matches_mut(&mut matches)
            .expect("the matches come from the limits' own flags");
    }
}

/// The names of [`OVERRIDES`], as a list to read.
pub(super) fn overrides() -> String {
    let names: Vec<&str> = OVERRIDES.iter().map(|(flag, _)| *flag).collect();
    names.join(", ")
}

/// The first line of clap's message, without its `error: ` prefix.
pub(super) fn clap_message(error: &clap::Error) -> String {
    let rendered = error.to_string();
    let first = rendered.lines().next().unwrap_or_default();
    first.trim_start_matches("error: ").to_owned()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use wasmop_contract::FailurePolicy;

    use super::*;

    /// The limits with every flag at its default.
    fn defaults() -> PluginLimits {
        let command = PluginLimits::augment_args(clap::Command::new("limits")).no_binary_name(true);
        let matches = command.get_matches_from(Vec::<String>::new());
        PluginLimits::from_arg_matches(&matches).unwrap()
    }

    #[test]
    fn a_spec_and_a_file_entry_set_the_same_overrides_with_the_same_parsers() {
        let spec = json!({
            "module": {"url": "https://x"},
            "memoryLimit": "128Mi",
            "reconcileTimeout": "30s",
            "maxConcurrentReconciles": 3,
            "warmInstances": 2,
            "webhookTimeout": "5s",
            "webhookFailurePolicy": "Ignore",
        });
        let from_spec = PluginOverrides::from_spec(spec.as_object().unwrap()).unwrap();
        let mut from_file = PluginOverrides::default();
        let values = ["128Mi", "30s", "3", "2", "5s", "Ignore"];
        for ((setting, _), value) in OVERRIDES.iter().zip(values) {
            from_file.set(setting, value).unwrap();
        }
        assert_eq!(from_spec, from_file);
        let mut limits = defaults();
        from_spec.apply(&mut limits);
        assert_eq!(limits.memory_limit, 128 << 20);
        assert_eq!(limits.reconcile_timeout, Some(Duration::from_secs(30)));
        assert_eq!(limits.max_concurrent_reconciles, Some(3));
        assert_eq!(limits.warm_instances, 2);
        assert_eq!(limits.webhook_timeout, Duration::from_secs(5));
        assert_eq!(limits.webhook_failure_policy, FailurePolicy::Ignore);
    }

    #[test]
    fn what_a_plugin_does_not_override_keeps_the_common_limit() {
        let mut limits = defaults();
        limits.memory_limit = 32 << 20;
        limits.reconcile_timeout = Some(Duration::from_secs(9));
        let mut overrides = PluginOverrides::default();
        overrides.set("warm-instances", "1").unwrap();
        overrides.set("warm-instances", "4").unwrap();
        overrides.apply(&mut limits);
        assert_eq!(limits.warm_instances, 4, "the last value set wins");
        assert_eq!(limits.memory_limit, 32 << 20);
        assert_eq!(limits.reconcile_timeout, Some(Duration::from_secs(9)));
        assert_eq!(limits.guest.max_call_bytes, defaults().guest.max_call_bytes);
    }

    #[test]
    fn a_bad_spec_value_names_its_field() {
        let key =
            |spec: serde_json::Value| match PluginOverrides::from_spec(spec.as_object().unwrap())
                .unwrap_err()
            {
                SettingError::At { key, problem } => (key, *problem),
                other => panic!("not under a key: {other}"),
            };
        let (at, problem) = key(json!({"webhookTimeout": "40s"}));
        assert_eq!(at, "spec.webhookTimeout");
        assert!(matches!(problem, SettingError::Flag(_)), "{problem}");
        let (at, _) = key(json!({"maxConcurrentReconciles": 0}));
        assert_eq!(at, "spec.maxConcurrentReconciles");
        let mut overrides = PluginOverrides::default();
        let error = overrides.set("record", "/tmp").unwrap_err();
        assert!(
            matches!(&error, SettingError::Unknown { name, .. } if name == " `record`"),
            "{error}"
        );
        assert!(
            error.to_string().contains("known: memory-limit, "),
            "{error}"
        );
    }

    /// The CRD's override fields, read from the manifest: field name, type and description.
    fn crd_overrides() -> Vec<(String, String, String)> {
        let crd = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../deploy/crds/wasmreconciler.yaml"
        );
        let crd: Value = super::super::yaml(&std::fs::read_to_string(crd).unwrap()).unwrap();
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        spec["properties"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, field)| text(&field["description"]).starts_with("Overrides "))
            .map(|(name, field)| {
                (
                    name.clone(),
                    text(&field["type"]),
                    text(&field["description"]),
                )
            })
            .collect()
    }

    #[test]
    fn every_override_is_a_limit_flag_and_a_crd_field_and_nothing_else_is() {
        let flags = limit_flags();
        let crd = crd_overrides();
        for (setting, field) in OVERRIDES {
            let arg = flags
                .get_arguments()
                .find(|arg| arg.get_long() == Some(setting));
            let arg = arg.unwrap_or_else(|| panic!("`{setting}` is no flag of the limits"));
            let (_, kind, description) = crd
                .iter()
                .find(|(name, _, _)| name == field)
                .unwrap_or_else(|| panic!("the CRD has no `{field}` overriding `{setting}`"));
            assert!(
                description.starts_with(&format!("Overrides {setting}")),
                "spec.{field} describes itself as overriding another flag: {description}"
            );
            let numeric = ["max-concurrent-reconciles", "warm-instances"].contains(&setting);
            let expected = if numeric { "integer" } else { "string" };
            assert_eq!(
                kind,
                expected,
                "spec.{field}'s type (flag {})",
                arg.get_id()
            );
        }
        let declared: Vec<&str> = OVERRIDES.iter().map(|(_, field)| *field).collect();
        for (field, _, _) in &crd {
            assert!(
                declared.contains(&field.as_str()),
                "spec.{field} is not in OVERRIDES"
            );
        }
    }
}
