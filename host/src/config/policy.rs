//! The `--policy` file: the operator's ceiling over every plugin, in YAML.
//!
//! ```yaml
//! max-concurrent-reconciles: 16   # the most any plugin may run at once
//! max-reconcile-timeout: 5m
//! max-memory-limit: 256Mi
//! max-instances: 32
//! max-webhook-timeout: 5s         # the longest a plugin's webhook call may take (25s when absent)
//! webhook-failure-policies: [Ignore]  # those its webhooks may use: Ignore admits when it fails
//! allow:                          # the grants plugins may hold; anything when absent
//!   - kinds: [core/ConfigMap, apps/Deployment, example.wasmop.dev/v1alpha1/WebApp]
//!     verbs: [get, list, watch, create, patch, update, delete, status]
//!     namespaces: [team-a]        # all (and cluster-scoped kinds) when absent
//! conversions:                    # custom resources whose conversion a plugin may own (none
//!                                 # with a policy unless named; any without a policy file)
//!   example.wasmop.dev/WebApp: webapp   # a ClusterWasmReconciler's: clusterwasmreconciler/NAME
//! identities:                     # identity mode: a source running as another plugin's name
//!   webapp-canary: webapp
//! modules:                        # where WasmReconciler modules may be read from
//!   namespaces: [wasmop-system]   # ConfigMaps and Secrets in these namespaces only ([]: none)
//!   private-addresses: false      # URLs on loopback, link-local, private addresses: refused
//! signatures:                     # who may sign modules pulled from registries (cosign's format)
//!   keys:                         # ECDSA P-256 public keys by name: a PEM file's path, or the PEM
//!     release: /etc/wasmop/keys/release.pub
//!   require: true                 # every module from a registry signed by one of them
//! ```
//!
//! Without `modules.namespaces`, modules are read from the host's own namespace only
//! (`POD_NAMESPACE`, else the pod's service-account namespace; none off-cluster).
//!
//! A plugin's webhooks reach `kube-system` and the host's own namespace only for the kinds and
//! verbs an allowance here lists them by name for (`namespaces: [kube-system]`); an allowance
//! without namespaces does not name them.
//!
//! Unknown keys are errors, as in the config file. A `WasmReconciler`'s `spec.policy` has the
//! same form without `conversions`, `identities`, `modules` and `signatures` (which only the operator
//! sets)
//! and narrows this one for its plugin.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::file::scalar;
use super::{ConfigError, ValueError, bytes, duration, positive, webhook_timeout};
use wasmop_contract::boundary::{cut, dns_label};
use wasmop_contract::{
    Allowance, BadPattern, Ceiling, Conversion, FailurePolicy, KeyError, KindPattern,
    ModuleSources, Signatures, TrustedKey, UnknownFailurePolicy, Verb,
};

/// The settings only the operator's policy may hold: a `WasmReconciler`'s own narrows grants
/// and limits, it never grants.
const OPERATOR_ONLY: [&str; 4] = ["conversions", "identities", "modules", "signatures"];

/// Why a `--policy` file or a `WasmReconciler`'s `spec.policy` is not a ceiling; its text names
/// the setting as the file spells it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The text is not YAML, or is too large or deep to read.
    #[error(transparent)]
    Yaml(ValueError),
    /// What is wrong under the setting `key`.
    #[error("`{key}`: {problem}")]
    At {
        /// The setting (or list entry) as the file spells it.
        key: String,
        /// What is wrong there.
        problem: Box<PolicyError>,
    },
    /// A value of another shape than the one expected.
    #[error("expected {expected}, found {found}")]
    Shape {
        /// What was expected.
        expected: &'static str,
        /// What was found: a list, a mapping, null or a scalar.
        found: &'static str,
    },
    /// A value that is not what was expected, not quoted.
    #[error("expected {0}")]
    Expected(&'static str),
    /// A key the place it is in does not know.
    #[error("unknown {what} `{name}`; known: {known}")]
    Unknown {
        /// A setting, a key or a verb.
        what: &'static str,
        /// The key, cut to a readable length.
        name: String,
        /// Those known there.
        known: &'static str,
    },
    /// A setting only the operator's policy holds, in a `WasmReconciler`'s.
    #[error("`{0}` is granted only by the operator's --policy, not by a WasmReconciler")]
    OperatorOnly(&'static str),
    /// A name that is not the kind of name it must be.
    #[error("`{name}` is not {must_be}")]
    NotA {
        /// The name, cut to a readable length.
        name: String,
        /// What it must be.
        must_be: &'static str,
    },
    /// Settings that do not hold together, or a list that may not be empty.
    #[error("{0}")]
    Incomplete(&'static str),
    /// A count, duration, size or timeout its parser refuses.
    #[error(transparent)]
    Setting(#[from] ValueError),
    /// A kind pattern the contract's reader refuses.
    #[error(transparent)]
    Pattern(#[from] BadPattern),
    /// A failure policy that is neither Fail nor Ignore.
    #[error(transparent)]
    FailurePolicy(#[from] UnknownFailurePolicy),
    /// A trusted key that is no P-256 public key.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A trusted key's file that cannot be read.
    #[error("key `{name}`: reading {file}: {reason}")]
    KeyFile {
        /// The key's name.
        name: String,
        /// The file.
        file: String,
        /// The I/O error.
        reason: String,
    },
}

impl PolicyError {
    /// This error, found under the setting `key`.
    fn at(self, key: &str) -> Self {
        PolicyError::At {
            key: cut(key).to_owned(),
            problem: Box::new(self),
        }
    }

    /// A shape error: `expected` was expected, `value` was found.
    fn shape(expected: &'static str, value: &Value) -> Self {
        PolicyError::Shape {
            expected,
            found: kind_of(value),
        }
    }

    /// A key `name` unknown where `known` are.
    fn unknown(what: &'static str, name: &str, known: &'static str) -> Self {
        PolicyError::Unknown {
            what,
            name: cut(name).to_owned(),
            known,
        }
    }

    /// `name`, which is not `must_be`.
    fn not_a(name: &str, must_be: &'static str) -> Self {
        PolicyError::NotA {
            name: cut(name).to_owned(),
            must_be,
        }
    }
}

/// Reads the ceiling from the YAML file at `path`.
pub(super) fn read(path: &Path) -> Result<Ceiling, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: path.to_owned(),
        source,
    })?;
    parse(&text).map_err(|error| ConfigError::File {
        file: path.to_owned(),
        message: error.to_string(),
    })
}

/// A ceiling from the text of a `--policy` file.
pub fn parse(text: &str) -> Result<Ceiling, PolicyError> {
    ceiling(&super::yaml(text).map_err(PolicyError::Yaml)?)
}

/// A ceiling from a policy document already parsed (a `WasmReconciler`'s `spec.policy`, or the
/// `--policy` file).
pub fn ceiling(document: &Value) -> Result<Ceiling, PolicyError> {
    let Value::Object(settings) = document else {
        return Err(PolicyError::Expected("a mapping of policy settings"));
    };
    // With a policy, conversions are only those it names.
    let mut ceiling = Ceiling {
        conversions: Some(Vec::new()),
        ..Ceiling::default()
    };
    for (key, value) in settings {
        let at = |error: PolicyError| error.at(key);
        let read = |error: ValueError| PolicyError::Setting(error).at(key);
        let text = || scalar(value).map_err(|found| PolicyError::shape("a value", found).at(key));
        match key.as_str() {
            "max-concurrent-reconciles" => {
                ceiling.max_concurrent_reconciles = positive(&text()?).map_err(read)?
            }
            "max-reconcile-timeout" => {
                ceiling.max_reconcile_timeout = duration(&text()?).map_err(read)?
            }
            "max-memory-limit" => ceiling.max_memory = bytes(&text()?).map_err(read)?,
            "max-instances" => ceiling.max_instances = positive(&text()?).map_err(read)?,
            "max-webhook-timeout" => {
                ceiling.max_webhook_timeout = webhook_timeout(&text()?).map_err(read)?
            }
            "webhook-failure-policies" => {
                ceiling.webhook_failure_policies = failure_policies(value).map_err(at)?
            }
            "allow" => ceiling.allow = Some(allowances(value)?),
            "conversions" => ceiling.conversions = Some(conversions(value).map_err(at)?),
            "identities" => ceiling.identities = identities(value).map_err(at)?,
            "modules" => ceiling.modules = modules(value).map_err(at)?,
            "signatures" => ceiling.signatures = signatures(value).map_err(at)?,
            _ => {
                return Err(PolicyError::unknown(
                    "setting",
                    key,
                    "max-concurrent-reconciles, max-reconcile-timeout, max-memory-limit, \
                     max-instances, max-webhook-timeout, webhook-failure-policies, allow, \
                     conversions, identities, modules, signatures",
                ));
            }
        }
    }
    Ok(ceiling)
}

/// `webhook-failure-policies`: a list of `Fail` and `Ignore`, at least one.
fn failure_policies(value: &Value) -> Result<Vec<FailurePolicy>, PolicyError> {
    let Value::Array(items) = value else {
        return Err(PolicyError::shape("a list", value));
    };
    let policies = items
        .iter()
        .map(|item| item.as_str().ok_or(PolicyError::Expected("Fail or Ignore")))
        .map(|name| Ok::<_, PolicyError>(FailurePolicy::parse(name?)?))
        .collect::<Result<Vec<_>, _>>()?;
    match policies.is_empty() {
        true => Err(PolicyError::Incomplete(
            "name at least one of Fail and Ignore",
        )),
        false => Ok(policies),
    }
}

/// A `WasmReconciler`'s own policy: a ceiling that may only narrow the operator's.
pub fn narrowing(document: &Value) -> Result<Ceiling, PolicyError> {
    if let Value::Object(settings) = document
        && let Some(key) = OPERATOR_ONLY.iter().find(|k| settings.contains_key(**k))
    {
        return Err(PolicyError::OperatorOnly(key));
    }
    ceiling(document)
}

/// A mapping of plain names to plain names, each checked by `check`.
fn names(
    value: &Value,
    check: impl Fn(&str, &str) -> Result<(), PolicyError>,
) -> Result<BTreeMap<String, String>, PolicyError> {
    let Value::Object(entries) = value else {
        return Err(PolicyError::shape("a mapping", value));
    };
    let mut names = BTreeMap::new();
    for (key, value) in entries {
        let value = scalar(value).map_err(|found| PolicyError::shape("a name", found).at(key))?;
        check(key, &value)?;
        names.insert(key.clone(), value);
    }
    Ok(names)
}

/// A plugin name, as `describe()` declares one.
/// What the policy's grants by name call a `ClusterWasmReconciler`'s plugin before its name.
const TENANTS: &str = "clusterwasmreconciler/";

fn plugin_name(name: &str) -> Result<(), PolicyError> {
    match dns_label(name) {
        true => Ok(()),
        false => Err(PolicyError::not_a(name, "a plugin name")),
    }
}

/// `conversions`: `group/Kind` of a custom resource to the plugin that may convert it: an
/// operator's plugin by its name, a `ClusterWasmReconciler`'s as `clusterwasmreconciler/<name>`.
fn conversions(value: &Value) -> Result<Vec<Conversion>, PolicyError> {
    let named = names(value, |kind, plugin| {
        plugin_name(plugin.strip_prefix(TENANTS).unwrap_or(plugin))?;
        let pattern = kind_pattern(kind)?;
        match (&pattern.group, &pattern.version, &pattern.kind) {
            (Some(group), None, Some(_)) if !group.is_empty() && !kind.contains("*") => Ok(()),
            _ => Err(PolicyError::not_a(kind, "group/Kind of a custom resource")),
        }
    })?;
    named
        .into_iter()
        .map(|(kind, plugin)| {
            Ok(Conversion {
                kind: kind_pattern(&kind)?,
                plugin,
            })
        })
        .collect()
}

/// A kind pattern (`group/Kind`, `group/version/Kind`, with `*`).
fn kind_pattern(text: &str) -> Result<KindPattern, PolicyError> {
    Ok(KindPattern::parse(text)?)
}

/// `identities`: a source's own name to the plugin name it runs as.
fn identities(value: &Value) -> Result<BTreeMap<String, String>, PolicyError> {
    names(value, |source, plugin| {
        plugin_name(source)?;
        plugin_name(plugin)
    })
}

/// `modules`: the namespaces modules may be read from, and whether URLs may be private.
fn modules(value: &Value) -> Result<ModuleSources, PolicyError> {
    let Value::Object(fields) = value else {
        return Err(PolicyError::shape("a mapping", value));
    };
    let mut modules = ModuleSources::default();
    for (key, value) in fields {
        match key.as_str() {
            "namespaces" => {
                let expected = PolicyError::Expected("a list of namespaces").at(key);
                let items = list(value).ok_or(expected)?;
                modules.namespaces = match items.is_empty() {
                    true => Some(Vec::new()),
                    false => Some(namespaces(items)?),
                };
            }
            "private-addresses" => {
                modules.private_addresses = match value {
                    Value::Bool(allowed) => *allowed,
                    _ => return Err(PolicyError::Expected("true or false").at(key)),
                }
            }
            _ => {
                let known = "namespaces, private-addresses";
                return Err(PolicyError::unknown("key", key, known));
            }
        }
    }
    Ok(modules)
}

/// `signatures`: trusted keys by name (a PEM, or the path of a PEM file), and whether every
/// module from a registry must be signed by one.
fn signatures(value: &Value) -> Result<Signatures, PolicyError> {
    let Value::Object(fields) = value else {
        return Err(PolicyError::shape("a mapping", value));
    };
    let mut signatures = Signatures::default();
    for (key, value) in fields {
        match key.as_str() {
            "keys" => {
                signatures.keys = names(value, key_name)?
                    .into_iter()
                    .map(|(name, key)| trusted_key(&name, &key))
                    .collect::<Result<_, _>>()?
            }
            "require" => {
                signatures.require = match value {
                    Value::Bool(required) => *required,
                    _ => return Err(PolicyError::Expected("true or false").at(key)),
                }
            }
            _ => return Err(PolicyError::unknown("key", key, "keys, require")),
        }
    }
    if signatures.require && signatures.keys.is_empty() {
        return Err(PolicyError::Incomplete(
            "`require: true` needs at least one key in `keys`",
        ));
    }
    Ok(signatures)
}

/// A key's name: a DNS label, as statuses and `spec.module.oci.verify` spell it.
fn key_name(name: &str, _: &str) -> Result<(), PolicyError> {
    match dns_label(name) {
        true => Ok(()),
        false => Err(PolicyError::not_a(
            name,
            "a DNS label (lowercase letters, digits and '-') to name a key",
        )),
    }
}

/// The key `name`, from its PEM or from the file `key` names.
fn trusted_key(name: &str, key: &str) -> Result<TrustedKey, PolicyError> {
    let pem = match key.trim_start().starts_with("-----BEGIN") {
        true => key.to_owned(),
        false => std::fs::read_to_string(key).map_err(|error| PolicyError::KeyFile {
            name: cut(name).to_owned(),
            file: cut(key).to_owned(),
            reason: error.to_string(),
        })?,
    };
    Ok(TrustedKey::from_pem(name, &pem)?)
}

/// What any value is, for an error that does not quote it.
pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Array(_) | Value::Object(_) | Value::Null => shape(value),
        _ => "a scalar",
    }
}

fn allowances(value: &Value) -> Result<Vec<Allowance>, PolicyError> {
    let Value::Array(entries) = value else {
        let expected = PolicyError::Expected("a list of {kinds, verbs, namespaces}");
        return Err(expected.at("allow"));
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| allowance(entry).map_err(|e| e.at(&format!("allow[{index}]"))))
        .collect()
}

fn allowance(entry: &Value) -> Result<Allowance, PolicyError> {
    let Value::Object(fields) = entry else {
        return Err(PolicyError::Expected(
            "a mapping of kinds, verbs and namespaces",
        ));
    };
    let mut allowance = Allowance {
        kinds: Vec::new(),
        verbs: Vec::new(),
        namespaces: Vec::new(),
    };
    for (key, value) in fields {
        let items = list(value).ok_or_else(|| PolicyError::Expected("a list of values").at(key))?;
        match key.as_str() {
            "kinds" => {
                allowance.kinds = items
                    .iter()
                    .map(|k| kind_pattern(k))
                    .collect::<Result<_, _>>()?
            }
            "verbs" => allowance.verbs = items.iter().map(|v| verb(v)).collect::<Result<_, _>>()?,
            "namespaces" => allowance.namespaces = namespaces(items)?,
            _ => {
                let known = "kinds, verbs, namespaces";
                return Err(PolicyError::unknown("key", key, known));
            }
        }
    }
    if allowance.kinds.is_empty() || allowance.verbs.is_empty() {
        return Err(PolicyError::Incomplete("needs kinds and verbs"));
    }
    Ok(allowance)
}

fn verb(text: &str) -> Result<Verb, PolicyError> {
    Ok(match text {
        "get" => Verb::Get,
        "list" => Verb::List,
        "watch" => Verb::Watch,
        "create" => Verb::Create,
        "update" => Verb::Update,
        "patch" => Verb::Patch,
        "delete" => Verb::Delete,
        "status" => Verb::Status,
        other => {
            let known = "get, list, watch, create, update, patch, delete, status";
            return Err(PolicyError::unknown("verb", other, known));
        }
    })
}

/// An allowance's namespaces: namespace names, at least one (an empty list would read as all).
fn namespaces(items: Vec<String>) -> Result<Vec<String>, PolicyError> {
    if items.is_empty() {
        let empty = PolicyError::Incomplete("an empty list; leave the key out to allow all");
        return Err(empty.at("namespaces"));
    }
    match items.iter().find(|n| !dns_label(n)) {
        Some(bad) => Err(PolicyError::not_a(
            bad,
            "a namespace name (lowercase letters, digits and '-', at most 63)",
        )
        .at("namespaces")),
        None => Ok(items),
    }
}

/// What a value that is not a scalar is, for an error that does not quote it.
fn shape(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
        _ => "null",
    }
}

fn list(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Array(items) => items.iter().map(|item| scalar(item).ok()).collect(),
        single => scalar(single).ok().map(|s| vec![s]),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn webhook_ceilings_parse_and_refuse_what_no_webhook_may_have() {
        let ceiling =
            parse("max-webhook-timeout: 5s\nwebhook-failure-policies: [Ignore]\n").unwrap();
        assert_eq!(ceiling.max_webhook_timeout, Duration::from_secs(5));
        assert_eq!(ceiling.webhook_failure_policies, [FailurePolicy::Ignore]);
        let none = parse("webhook-failure-policies: []")
            .unwrap_err()
            .to_string();
        assert!(none.contains("at least one"), "{none}");
        let typo = parse("webhook-failure-policies: [Open]")
            .unwrap_err()
            .to_string();
        assert!(typo.starts_with("`webhook-failure-policies`: "), "{typo}");
        let long = parse("max-webhook-timeout: 40s").unwrap_err().to_string();
        assert!(long.contains("100ms..=25s"), "{long}");
    }

    #[test]
    fn a_policy_sets_maxima_and_allowances() {
        let ceiling = parse(
            "max-concurrent-reconciles: 4\nmax-reconcile-timeout: 30s\nmax-memory-limit: 128Mi\n\
             max-instances: 8\nallow:\n  - kinds: [core/ConfigMap, apps/Deployment]\n    \
             verbs: [get, list, watch, patch]\n    namespaces: [team-a]\n",
        )
        .unwrap();
        assert_eq!(ceiling.max_concurrent_reconciles, 4);
        assert_eq!(ceiling.max_reconcile_timeout, Duration::from_secs(30));
        assert_eq!((ceiling.max_memory, ceiling.max_instances), (128 << 20, 8));
        let allow = ceiling.allow.unwrap();
        assert_eq!(allow[0].kinds.len(), 2);
        assert_eq!(
            allow[0].verbs,
            [Verb::Get, Verb::List, Verb::Watch, Verb::Patch]
        );
        assert_eq!(allow[0].namespaces, ["team-a"]);
        let empty = Ceiling {
            conversions: Some(vec![]),
            ..Ceiling::default()
        };
        assert_eq!(parse("").unwrap(), empty);
    }

    #[test]
    fn conversions_identities_and_module_sources_are_the_operators_alone() {
        let text = "conversions:\n  example.wasmop.dev/WebApp: webapp\nidentities:\n  \
                    canary: webapp\nmodules:\n  namespaces: [plugins]\n  private-addresses: true\n";
        let ceiling = parse(text).unwrap();
        let webapp =
            wasmop_contract::object::GroupVersionKind::gvk("example.wasmop.dev", "v1", "WebApp");
        assert!(ceiling.may_convert("webapp", &webapp));
        assert_eq!(ceiling.identity("canary"), "webapp");
        assert!(ceiling.modules.allows_namespace("plugins") && ceiling.modules.private_addresses);
        let error = |yaml: &str| parse(yaml).unwrap_err().to_string();
        assert!(error("conversions: {WebApp: webapp}\n").contains("group/Kind"));
        assert!(error("conversions: {example.com/*: webapp}\n").contains("group/Kind"));
        assert!(error("identities: {a: Web_App}\n").contains("not a plugin name"));
        let tenants = "conversions: {example.wasmop.dev/WebApp: clusterwasmreconciler/webapp}\n";
        let tenants = parse(tenants).unwrap();
        assert!(tenants.may_convert("clusterwasmreconciler/webapp", &webapp));
        assert!(!tenants.may_convert("webapp", &webapp));
        let namespaced = "conversions: {example.wasmop.dev/WebApp: wasmreconciler/team/webapp}\n";
        assert!(error(namespaced).contains("not a plugin name"));
        assert!(error("modules: {private-addresses: yes please}\n").contains("true or false"));
        let document = super::super::yaml(text).unwrap();
        let refused = narrowing(&document).unwrap_err().to_string();
        assert!(refused.contains("only by the operator"), "{refused}");
        let own = super::super::yaml("max-instances: 2\n").unwrap();
        assert_eq!(narrowing(&own).unwrap().max_instances, 2);
    }

    const PEM: &str = "-----BEGIN PUBLIC KEY-----\n\
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEW7LikAeRMLlfBEqv///tRgkfcIcR\n\
        0t2Mcqh4RHnAPsfmG3VfMK1rhCXhmLLGEqiZoOiJzvB1CfmOFRIIIHkC5g==\n\
        -----END PUBLIC KEY-----\n";

    #[test]
    fn trusted_keys_come_inline_or_from_files_and_only_from_the_operator() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ops.pub");
        std::fs::write(&file, PEM).unwrap();
        let inline = PEM.trim_end().replace('\n', "\n      ");
        let text = format!(
            "signatures:\n  keys:\n    release: |\n      {inline}\n    ops: {}\n  require: true\n",
            file.display()
        );
        let ceiling = parse(&text).unwrap();
        let names: Vec<&str> = ceiling.signatures.keys.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["ops", "release"]);
        assert!(ceiling.signatures.require);
        let error = |yaml: &str| parse(yaml).unwrap_err().to_string();
        assert!(error("signatures: {require: true}\n").contains("at least one key"));
        assert!(error("signatures: {keys: {Release: x}}\n").contains("not a DNS label"));
        let missing = error("signatures: {keys: {release: /nonexistent/release.pub}}\n");
        assert!(
            missing.contains("reading /nonexistent/release.pub"),
            "{missing}"
        );
        let garbage = format!(
            "signatures: {{keys: {{release: \"{}\"}}}}\n",
            "-----BEGIN x"
        );
        assert!(error(&garbage).contains("not an ECDSA P-256 public key"));
        let document = super::super::yaml(&text).unwrap();
        assert!(
            narrowing(&document)
                .unwrap_err()
                .to_string()
                .contains("only by the operator")
        );
    }

    #[test]
    fn mistakes_name_the_setting() {
        let error = |yaml: &str| parse(yaml).unwrap_err().to_string();
        assert!(error("max-instance: 3\n").contains("unknown setting `max-instance`"));
        let typed = parse("modules: {namespaces: [Team-A]}\n").unwrap_err();
        let PolicyError::At { key, problem } = typed else {
            panic!("not placed under its setting: {typed:?}")
        };
        assert_eq!(key, "modules");
        assert!(
            matches!(*problem, PolicyError::At { ref key, .. } if key == "namespaces"),
            "{problem:?}"
        );
        assert!(error("max-instances: 0\n").contains("`max-instances`"));
        assert!(
            error("allow: [{kinds: [ConfigMap], verbs: [own]}]\n").contains("unknown verb `own`")
        );
        assert!(error("allow: [{verbs: [get]}]\n").contains("`allow[0]`: needs kinds and verbs"));
    }

    #[test]
    fn namespaces_are_namespace_names_and_an_empty_list_is_refused() {
        let allow = |namespaces: &str| {
            parse(&format!(
                "allow: [{{kinds: [ConfigMap], verbs: [get], namespaces: {namespaces}}}]\n"
            ))
        };
        assert!(allow("[team-a]").is_ok());
        assert!(
            allow("[]")
                .unwrap_err()
                .to_string()
                .contains("leave the key out")
        );
        assert!(
            allow("[Team-A]")
                .unwrap_err()
                .to_string()
                .contains("`Team-A` is not a namespace name")
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_and_errors_do_not_quote_whole_values() {
        // Found by the fuzz target (host/src/fuzz/config.rs): 144 bytes of aliases held half a
        // MiB, and each further line of them multiplies that.
        let bomb = (1..=12).fold("a0: &a0 [lol, lol, lol]\n".to_owned(), |text, level| {
            let prev = level - 1;
            text + &format!("a{level}: &a{level} [*a{prev}, *a{prev}, *a{prev}]\n")
        });
        assert!(
            parse(&bomb)
                .unwrap_err()
                .to_string()
                .contains("alias replay limit")
        );
        let value = format!("max-instances: [{}]\n", "x".repeat(1 << 16));
        let error = parse(&value).unwrap_err().to_string();
        assert!(
            error.contains("found a list") && error.len() < 200,
            "{error}"
        );
    }
}
