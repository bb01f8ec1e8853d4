//! Fuzzes the parsers of settings (`config/mod.rs`), of the `--policy` file and a
//! `WasmReconciler`'s `spec.policy` (`config/policy.rs`), and of the rest of a `WasmReconciler`'s
//! spec as `sources/crd.rs` reads it (`spec.module`, `memoryLimit`, `reconcileTimeout`). An
//! accepted duration is at most [`MAX_DURATION`] and can be added to any deadline; sizes and
//! rates are what their text says; a ceiling's maxima are at least one and its namespaces are
//! namespace names; a module reference names exactly one source, pinned, whose request path its
//! parts cannot change.

use std::time::Duration;

use kube::api::DynamicObject;
use kube::core::{ApiResource, Resource};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::boundary::json_value;
use super::{error_within, fuzz, hostile_text, mangled, parse, short_error};
use crate::config::{
    MAX_DURATION, PolicyError, ValueError, bytes, duration, narrowing, parse_policy, positive, rate,
};
use crate::distribution::module::ModuleRef;
use crate::rate::TokenBucket;
use wasmop_contract::Ceiling;
use wasmop_contract::boundary;
use wasmop_contract::capability;
use wasmop_contract::object::GroupVersionKind;

/// The longest YAML error: the message and a few cropped lines of the file around it.
const MAX_YAML_ERROR: usize = 4096;

#[test]
fn fuzz_durations() {
    fuzz("durations", number_with_unit(), |text| {
        let parsed = match parse(text.len(), || duration(&text))? {
            Ok(parsed) => parsed,
            Err(error) => return short_error(&error.to_string()),
        };
        prop_assert!(parsed <= MAX_DURATION, "{text:?} is {parsed:?}");
        prop_assert!(tokio::time::Instant::now().checked_add(parsed).is_some());
        let split = text.find(|c: char| !c.is_ascii_digit() && c != '.');
        let (number, unit) = text.split_at(split.unwrap_or(text.len()));
        let seconds = number.parse::<f64>().expect("an accepted number") / 1000.0;
        let seconds = seconds
            * match unit {
                "ms" => 1.0,
                "s" => 1000.0,
                "m" => 60_000.0,
                other => return Err(TestCaseError::fail(format!("accepted the unit {other:?}"))),
            };
        prop_assert!((parsed.as_secs_f64() - seconds).abs() <= 1e-6 * seconds.max(1.0));
        Ok(())
    });
}

#[test]
fn fuzz_sizes_rates_and_counts() {
    fuzz("sizes-rates-counts", number_with_unit(), |text| {
        match parse(text.len(), || bytes(&text))? {
            Ok(size) => {
                let split = text
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(text.len());
                let number: u128 = text[..split].parse().expect("an accepted size");
                let shift = match &text[split..] {
                    "Ki" => 10,
                    "Mi" => 20,
                    "Gi" => 30,
                    _ => 0,
                };
                prop_assert_eq!(size as u128, number << shift);
            }
            Err(error) => short_error(&error.to_string())?,
        }
        match parse(text.len(), || rate(&text))? {
            Ok(rate) => {
                prop_assert!(rate.per_second.is_finite() && rate.per_second > 0.0);
                prop_assert!(rate.burst >= 1);
                let mut bucket = TokenBucket::new(rate);
                for _ in 0..=rate.burst.min(4) {
                    let wait = bucket.reserve();
                    prop_assert!(tokio::time::Instant::now().checked_add(wait).is_some());
                }
            }
            Err(error) => short_error(&error.to_string())?,
        }
        match parse(text.len(), || positive(&text))? {
            Ok(count) => prop_assert!(count >= 1 && text.parse::<u32>() == Ok(count)),
            Err(error) => short_error(&error.to_string())?,
        }
        Ok(())
    });
}

#[test]
fn fuzz_policy_files() {
    fuzz("policy-files", policy_yaml(), |yaml| {
        match parse(yaml.len(), || parse_policy(&yaml))? {
            Ok(ceiling) => a_sound_ceiling(&ceiling),
            // The operator's own file: the YAML parser quotes a few cropped lines around the error.
            Err(PolicyError::Yaml(error @ ValueError::Yaml(_))) => {
                error_within(&error.to_string(), MAX_YAML_ERROR)
            }
            Err(error) => short_error(&error.to_string()),
        }
    });
}

#[test]
fn fuzz_wasm_reconciler_specs() {
    fuzz("wasm-reconciler-specs", spec(), |spec| {
        let len = spec.to_string().len();
        let memory = spec["memoryLimit"].as_str().unwrap_or("64Mi");
        if let Err(error) = parse(len, || bytes(memory))? {
            short_error(&error.to_string())?;
        }
        let timeout = spec["reconcileTimeout"].as_str().unwrap_or("1s");
        match parse(len, || duration(timeout))? {
            Ok(timeout) => prop_assert!(timeout <= MAX_DURATION),
            Err(error) => short_error(&error.to_string())?,
        }
        match parse(len, || narrowing(&spec["policy"]))? {
            Ok(ceiling) => a_sound_ceiling(&ceiling)?,
            Err(error) => short_error(&error.to_string())?,
        }
        let module = parse(len, || {
            serde_json::from_value::<ModuleRef>(spec["module"].clone()).map(|m| {
                let checked = m.validate();
                (m, checked)
            })
        })?;
        let Ok((module, checked)) = module else {
            return Ok(());
        };
        if let Err(error) = checked {
            return short_error(&error.to_string());
        }
        let hex = module.sha256.as_deref().expect("a pinned module");
        let hex = hex.strip_prefix("sha256:").unwrap_or(hex);
        prop_assert!(hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        let sources = [
            module.config_map.is_some(),
            module.secret.is_some(),
            module.url.is_some(),
        ];
        prop_assert_eq!(sources.iter().filter(|s| **s).count(), 1);
        if let Some(url) = &module.url {
            let uri: hyper::Uri = url.parse().expect("an accepted URL parses");
            prop_assert!(matches!(uri.scheme_str(), Some("http" | "https")) && url.len() <= 2048);
        }
        let keys = [
            ("ConfigMap", &module.config_map),
            ("Secret", &module.secret),
        ];
        for (kind, key) in keys {
            let Some(key) = key else { continue };
            prop_assert!(boundary::dns_label(&key.namespace));
            let kind = GroupVersionKind::gvk("", "v1", kind);
            let resource = ApiResource::from_gvk(&kind);
            let url = DynamicObject::url_path(&resource, Some(&key.namespace));
            let request = kube::core::Request::new(url).get(&key.name, &Default::default());
            let request = request.map_err(|e| TestCaseError::fail(e.to_string()))?;
            let path: Vec<&str> = request.uri().path().split('/').collect();
            let plural = resource.plural.as_str();
            let expected = [
                "",
                "api",
                "v1",
                "namespaces",
                &key.namespace,
                plural,
                &key.name,
            ];
            prop_assert_eq!(&path[..], &expected[..]);
            prop_assert!(request.uri().query().unwrap_or_default().is_empty());
        }
        Ok(())
    });
}

/// Checks what a ceiling promises: maxima of at least one, a timeout a deadline can hold,
/// allowances with kinds and verbs, namespaces that are namespace names; and that admitting a
/// registration against it does not panic.
fn a_sound_ceiling(ceiling: &Ceiling) -> Result<(), TestCaseError> {
    prop_assert!(ceiling.max_concurrent_reconciles >= 1 && ceiling.max_instances >= 1);
    prop_assert!(ceiling.max_reconcile_timeout <= MAX_DURATION);
    for allowance in ceiling.allow.iter().flatten() {
        prop_assert!(!allowance.kinds.is_empty() && !allowance.verbs.is_empty());
        for namespace in &allowance.namespaces {
            prop_assert!(boundary::dns_label(namespace), "namespace {namespace:?}");
        }
    }
    let registration = wasmop_contract::Registration::minimal("fuzzed");
    let asked = wasmop_contract::Asked {
        concurrency: 1,
        timeout: Duration::from_secs(1),
        memory: 1 << 20,
        instances: 2,
        webhooks: Some((Duration::from_secs(2), wasmop_contract::FailurePolicy::Fail)),
    };
    let _ = ceiling.admit(asked);
    let policies = [ceiling.clone()];
    let subject = capability::Subject {
        registration: Some(&registration),
        policies: &policies,
        rights: None,
        tenant: None,
        home: None,
    };
    for power in capability::implied(&registration, None, None) {
        let _ = capability::check(subject, power);
    }
    Ok(())
}

// === inputs ===

/// A number and a unit, valid or nearly so, or hostile text.
fn number_with_unit() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        4 => "[0-9]{1,4}",
        2 => "[0-9]{0,3}\\.?[0-9]{0,3}",
        2 => "[0-9]{15,40}",
        1 => "[0-9]{300,400}",
        1 => "[0-9.:+eE-]{0,12}",
    ];
    let unit = prop_oneof![
        prop::sample::select(vec![
            "ms", "s", "m", "h", "", "Ki", "Mi", "Gi", "Ti", "S", ":5"
        ])
        .prop_map(str::to_owned),
        hostile_text(),
    ];
    let joined = (number, unit).prop_map(|(number, unit)| format!("{number}{unit}"));
    prop_oneof![8 => joined, 1 => hostile_text()]
}

/// `--policy` files: the documented form with hostile values, YAML's anchors, aliases, tags and
/// documents, alias bombs, and now and then mangled text.
fn policy_yaml() -> impl Strategy<Value = String> {
    let document =
        policy().prop_map(|policy| serde_json::to_string_pretty(&policy).expect("JSON is YAML"));
    let yaml = (
        prop::collection::vec(setting(), 0..5),
        prop::collection::vec(allow_entry_yaml(), 0..3),
    )
        .prop_map(|(settings, allows)| {
            let mut text = settings.join("\n");
            if !allows.is_empty() {
                text.push_str("\nallow:\n");
                text.push_str(&allows.join("\n"));
            }
            text
        });
    let decorated = (yaml, 0..6u8).prop_map(|(text, how)| match how {
        0 => format!("--- !!map\n{text}\n...\n---\n{text}"),
        1 => format!("%YAML 1.2\n---\n{text}"),
        2 => format!("base: &base\n  verbs: [get]\n{text}\n"),
        _ => text,
    });
    prop_oneof![
        4 => mangled(decorated),
        2 => document,
        1 => alias_bomb(),
        1 => hostile_text(),
    ]
}

/// One `key: value` line of the top level.
fn setting() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        4 => prop::sample::select(vec![
            "max-concurrent-reconciles",
            "max-reconcile-timeout",
            "max-memory-limit",
            "max-instances",
        ])
        .prop_map(str::to_owned),
        1 => hostile_text(),
    ];
    let value = prop_oneof![
        4 => number_with_unit(),
        1 => Just("[1, 2]".to_owned()),
        1 => Just("{a: b}".to_owned()),
        1 => Just("~".to_owned()),
        1 => Just("!!binary aGVsbG8=".to_owned()),
        1 => Just("&anchor 5".to_owned()),
        1 => hostile_text(),
    ];
    (key, value).prop_map(|(key, value)| format!("{key}: {value}"))
}

/// One `allow` entry in block style.
fn allow_entry_yaml() -> impl Strategy<Value = String> {
    let item = || prop_oneof![4 => "[a-zA-Z0-9./*-]{1,24}", 1 => hostile_text()];
    let list = move || prop::collection::vec(item(), 0..4).prop_map(|items| items.join(", "));
    (list(), list(), prop::option::of(list())).prop_map(|(kinds, verbs, namespaces)| {
        let mut entry = format!("  - kinds: [{kinds}]\n    verbs: [{verbs}]");
        if let Some(namespaces) = namespaces {
            entry.push_str(&format!("\n    namespaces: [{namespaces}]"));
        }
        entry
    })
}

/// A document of anchors that each alias the previous one `width` times: `width^depth` values
/// if expanded.
fn alias_bomb() -> impl Strategy<Value = String> {
    (2..12usize, 1..10usize).prop_map(|(width, depth)| {
        let mut text = format!("a0: &a0 [{}]\n", vec!["lol"; width].join(", "));
        for level in 1..=depth {
            let aliases = vec![format!("*a{}", level - 1); width].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{aliases}]\n"));
        }
        text
    })
}

/// A `spec.policy` as JSON: the documented keys with values of any shape.
fn policy() -> impl Strategy<Value = Value> {
    let text = || prop_oneof![4 => number_with_unit().prop_map(Value::from), 1 => json_value()];
    let strings = || {
        prop_oneof![
            4 => prop::collection::vec("[a-zA-Z0-9./*-]{0,24}", 0..4).prop_map(|v| json!(v)),
            1 => json_value(),
        ]
    };
    let allowance = (strings(), strings(), prop::option::of(strings())).prop_map(
        |(kinds, verbs, namespaces)| {
            let mut entry = json!({"kinds": kinds, "verbs": verbs});
            if let Some(namespaces) = namespaces {
                entry["namespaces"] = namespaces;
            }
            entry
        },
    );
    let allow = prop_oneof![
        4 => prop::collection::vec(allowance, 0..3).prop_map(Value::Array),
        1 => json_value(),
    ];
    (
        text(),
        text(),
        text(),
        text(),
        allow,
        any::<u8>(),
        hostile_text(),
    )
        .prop_map(
            |(concurrency, timeout, memory, instances, allow, present, unknown)| {
                let fields = [
                    ("max-concurrent-reconciles", concurrency),
                    ("max-reconcile-timeout", timeout),
                    ("max-memory-limit", memory),
                    ("max-instances", instances),
                    ("allow", allow),
                    (unknown.as_str(), Value::Null),
                ];
                let mut policy = serde_json::Map::new();
                for (i, (key, value)) in fields.into_iter().enumerate() {
                    if present.rotate_left(i as u32) & 0b11 != 0 {
                        policy.insert(key.to_owned(), value);
                    }
                }
                Value::Object(policy)
            },
        )
}

/// A `WasmReconciler`'s spec with hostile fields.
fn spec() -> impl Strategy<Value = Value> {
    let text = || prop_oneof![4 => "[a-z0-9-]{1,12}", 1 => hostile_text()];
    let key = (text(), text(), text()).prop_map(
        |(namespace, name, key)| json!({"namespace": namespace, "name": name, "key": key}),
    );
    let sha256 = prop_oneof![
        4 => "(sha256:)?[0-9a-fA-F]{64}",
        1 => "[0-9a-f]{0,70}",
        1 => hostile_text(),
    ];
    let url = prop_oneof![
        "https?://[a-z.]{1,12}(:[0-9]{1,5})?/[a-z./]{0,12}",
        hostile_text(),
    ];
    let module = (
        prop::option::of(key.clone()),
        prop::option::of(key),
        prop::option::of(url),
        prop::option::of(sha256),
        json_value(),
    )
        .prop_map(|(config_map, secret, url, sha256, other)| {
            let mut module = json!({});
            if let Some(config_map) = config_map {
                module["configMap"] = config_map;
            }
            if let Some(secret) = secret {
                module["secret"] = secret;
            }
            if let Some(url) = url {
                module["url"] = json!(url);
            }
            if let Some(sha256) = sha256 {
                module["sha256"] = json!(sha256);
            }
            if module.as_object().is_some_and(|m| m.is_empty()) {
                return other;
            }
            module
        });
    (module, number_with_unit(), number_with_unit(), policy()).prop_map(
        |(module, memory, timeout, policy)| {
            json!({
                "module": module,
                "memoryLimit": memory,
                "reconcileTimeout": timeout,
                "policy": policy,
            })
        },
    )
}
