//! One plugin's overrides of the common plugin limits, each declared once here: a config file's
//! `plugins` entry sets them under the flags' names (`memory-limit`), a WasmReconciler's spec
//! under the CRD's (`memoryLimit`), and both parse them with the flags' own parsers and apply
//! them the same way.

use std::time::Duration;

use serde_json::{Map, Value};
use wasmop_contract::FailurePolicy;

use super::{PluginLimits, bytes, duration, positive, webhook_timeout};

/// Every override: its flag's name (and a config file's key) and its WasmReconciler spec field.
pub const OVERRIDES: [(&str, &str); 6] = [
    ("memory-limit", "memoryLimit"),
    ("reconcile-timeout", "reconcileTimeout"),
    ("max-concurrent-reconciles", "maxConcurrentReconciles"),
    ("warm-instances", "warmInstances"),
    ("webhook-timeout", "webhookTimeout"),
    ("webhook-failure-policy", "webhookFailurePolicy"),
];

/// One plugin's overrides of [`PluginLimits`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginOverrides {
    /// Overrides `memory-limit`.
    pub memory_limit: Option<usize>,
    /// Overrides `reconcile-timeout`.
    pub reconcile_timeout: Option<Duration>,
    /// Overrides `max-concurrent-reconciles`.
    pub max_concurrent_reconciles: Option<u32>,
    /// Overrides `warm-instances`.
    pub warm_instances: Option<usize>,
    /// Overrides `webhook-timeout`.
    pub webhook_timeout: Option<Duration>,
    /// Overrides `webhook-failure-policy`.
    pub webhook_failure_policy: Option<FailurePolicy>,
}

impl PluginOverrides {
    /// Sets the override of the flag `setting` to `text`, parsed as the flag parses it; an error
    /// for a bad value or a setting that is not one of [`OVERRIDES`].
    pub fn set(&mut self, setting: &str, text: &str) -> Result<(), String> {
        match setting {
            "memory-limit" => self.memory_limit = Some(bytes(text)?),
            "reconcile-timeout" => self.reconcile_timeout = Some(duration(text)?),
            "max-concurrent-reconciles" => self.max_concurrent_reconciles = Some(positive(text)?),
            "warm-instances" => {
                let count = text.parse();
                self.warm_instances =
                    Some(count.map_err(|_| format!("`{text}` is not a whole number"))?)
            }
            "webhook-timeout" => self.webhook_timeout = Some(webhook_timeout(text)?),
            "webhook-failure-policy" => {
                self.webhook_failure_policy = Some(FailurePolicy::parse(text)?)
            }
            _ => return Err(format!("`{setting}` is not a plugin override")),
        }
        Ok(())
    }

    /// The overrides a WasmReconciler's `spec` sets, under the CRD's field names; other fields
    /// are not overrides and are left alone.
    pub fn from_spec(spec: &Map<String, Value>) -> Result<Self, String> {
        let mut overrides = PluginOverrides::default();
        for (setting, field) in OVERRIDES {
            let Some(value) = spec.get(field).filter(|value| !value.is_null()) else {
                continue;
            };
            let at = |message: String| format!("spec.{field}: {message}");
            let text = super::file::scalar(value)
                .map_err(|found| at(format!("expected a value, found {found}")))?;
            overrides.set(setting, &text).map_err(at)?;
        }
        Ok(overrides)
    }

    /// Applies the overrides to `limits`.
    pub fn apply(&self, limits: &mut PluginLimits) {
        limits.memory_limit = self.memory_limit.unwrap_or(limits.memory_limit);
        limits.reconcile_timeout = self.reconcile_timeout.or(limits.reconcile_timeout);
        limits.max_concurrent_reconciles = self
            .max_concurrent_reconciles
            .or(limits.max_concurrent_reconciles);
        limits.warm_instances = self.warm_instances.unwrap_or(limits.warm_instances);
        limits.webhook_timeout = self.webhook_timeout.unwrap_or(limits.webhook_timeout);
        limits.webhook_failure_policy = self
            .webhook_failure_policy
            .unwrap_or(limits.webhook_failure_policy);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
        assert_eq!(from_spec.memory_limit, Some(128 << 20));
        assert_eq!(
            from_spec.webhook_failure_policy,
            Some(FailurePolicy::Ignore)
        );
    }

    #[test]
    fn a_bad_spec_value_names_its_field() {
        let spec = json!({"webhookTimeout": "40s"});
        let error = PluginOverrides::from_spec(spec.as_object().unwrap()).unwrap_err();
        assert!(error.starts_with("spec.webhookTimeout: "), "{error}");
        let spec = json!({"maxConcurrentReconciles": 0});
        let error = PluginOverrides::from_spec(spec.as_object().unwrap()).unwrap_err();
        assert!(
            error.starts_with("spec.maxConcurrentReconciles: "),
            "{error}"
        );
    }
}
