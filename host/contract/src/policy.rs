//! The operator's ceiling over every plugin: which kinds, verbs and namespaces a plugin may be
//! granted, and the most concurrency, time, memory and instances it may have, and how long and
//! how strictly its webhooks may hold up the apiserver. A plugin whose
//! registration (or whose overrides) asks for more does not load; the reason names what it asked
//! for and the ceiling it passed.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use crate::boundary::cut;
use crate::object::GroupVersionKind;
use crate::registration::Verb;
use crate::signature::Signatures;
use crate::webhook::{FailurePolicy, MAX_WEBHOOK_TIMEOUT};

/// The namespace every cluster's webhooks guard against: its control plane runs there.
pub const PROTECTED_NAMESPACE: &str = "kube-system";

/// What the operator allows any plugin at most.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// The grants plugins may hold; any grant when `None`.
    pub allow: Option<Vec<Allowance>>,
    /// The most reconciles one plugin may run at once.
    pub max_concurrent_reconciles: u32,
    /// The longest reconcile timeout.
    pub max_reconcile_timeout: Duration,
    /// The largest memory cap per instance, in bytes.
    pub max_memory: usize,
    /// The most instances one plugin may have at once, busy and idle.
    pub max_instances: u32,
    /// The longest a plugin's webhook call may take (and the apiserver wait for it, 2 s more).
    pub max_webhook_timeout: Duration,
    /// The failure policies a plugin's webhooks may be registered with; only `Ignore` keeps a
    /// plugin that cannot answer from blocking writes of the kinds it watches over.
    pub webhook_failure_policies: Vec<FailurePolicy>,
    /// The custom resources whose conversion a plugin may own: any without a policy file
    /// (`None`, as for grants), only those named with one.
    pub conversions: Option<Vec<Conversion>>,
    /// In identity mode, the plugin a source runs as when not its own name: source (a plugin
    /// file's name without `.wasm`, or a `WasmReconciler`'s name) to plugin name.
    pub identities: BTreeMap<String, String>,
    /// Where `WasmReconciler` modules may be read from.
    pub modules: ModuleSources,
    /// Who may sign modules, and whether every module from a registry must be signed.
    pub signatures: Signatures,
    /// The namespaces a plugin's webhooks reach only where an allowance of this (the operator's)
    /// policy names them: `kube-system` and the host's own namespace.
    pub protected_namespaces: Vec<String>,
}

/// A custom resource whose conversion one plugin may own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversion {
    /// The custom resource's group and kind (its version is ignored).
    pub kind: KindPattern,
    /// The plugin that may convert it.
    pub plugin: String,
}

/// Where the host may read `WasmReconciler` modules from on a tenant's behalf.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleSources {
    /// The namespaces whose ConfigMaps and Secrets may hold modules; `None` when the policy
    /// names none, which the host reads as the namespace it runs in (none off-cluster).
    pub namespaces: Option<Vec<String>>,
    /// Whether module URLs may name loopback, link-local, private or cluster-internal
    /// addresses.
    pub private_addresses: bool,
}

impl ModuleSources {
    /// Whether a module may be read from a ConfigMap or Secret in `namespace`.
    pub fn allows_namespace(&self, namespace: &str) -> bool {
        self.namespaces.iter().flatten().any(|n| n == namespace)
    }

    /// Whether a module may be fetched from `address`.
    pub fn allows_address(&self, address: IpAddr) -> bool {
        self.private_addresses || public(address)
    }
}

/// Whether `address` is reachable on the public internet: not loopback, link-local, private,
/// shared (carrier-grade NAT), unspecified, multicast or documentation space.
pub fn public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            let shared = a == 100 && (64..128).contains(&b);
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || shared
                || a == 0)
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => public(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                let unique_local = first & 0xfe00 == 0xfc00;
                let link_local = first & 0xffc0 == 0xfe80;
                !(v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || unique_local
                    || link_local)
            }
        },
    }
}

impl Default for Ceiling {
    fn default() -> Self {
        Ceiling {
            allow: None,
            max_concurrent_reconciles: 64,
            max_reconcile_timeout: Duration::from_secs(600),
            max_memory: 1 << 30,
            max_instances: 128,
            max_webhook_timeout: MAX_WEBHOOK_TIMEOUT,
            webhook_failure_policies: vec![FailurePolicy::Fail, FailurePolicy::Ignore],
            conversions: None,
            identities: BTreeMap::new(),
            modules: ModuleSources::default(),
            signatures: Signatures::default(),
            protected_namespaces: vec![PROTECTED_NAMESPACE.to_owned()],
        }
    }
}

/// Verbs on kinds in namespaces that plugins may be granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowance {
    /// The kinds; `None` in a field matches any group, version or kind.
    pub kinds: Vec<KindPattern>,
    /// The verbs.
    pub verbs: Vec<Verb>,
    /// The namespaces; all (and cluster-scoped objects) when empty.
    pub namespaces: Vec<String>,
}

/// A kind, each part of which may be a wildcard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindPattern {
    /// The group; any when `None`.
    pub group: Option<String>,
    /// The version; any when `None`.
    pub version: Option<String>,
    /// The kind; any when `None`.
    pub kind: Option<String>,
}

impl KindPattern {
    /// Parses `Kind`, `group/Kind`, `group/version/Kind` (`core` is the empty group); `*` in any
    /// part matches everything.
    pub fn parse(text: &str) -> Result<Self, BadPattern> {
        let part = |p: &str| (p != "*").then(|| p.to_owned());
        let group = |g: &str| part(if g == "core" { "" } else { g });
        let parts: Vec<&str> = text.split('/').collect();
        let pattern = match parts.as_slice() {
            [kind] => (None, None, part(kind)),
            [g, kind] => (group(g), None, part(kind)),
            [g, version, kind] => (group(g), part(version), part(kind)),
            _ => return Err(BadPattern::Shape(cut(text).to_owned())),
        };
        if parts.iter().any(|p| p.is_empty()) {
            return Err(BadPattern::EmptyPart(cut(text).to_owned()));
        }
        Ok(KindPattern {
            group: pattern.0,
            version: pattern.1,
            kind: pattern.2,
        })
    }

    /// Whether `kind` is one this pattern names.
    pub fn matches(&self, kind: &GroupVersionKind) -> bool {
        let part = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        part(&self.group, &kind.group)
            && part(&self.version, &kind.version)
            && part(&self.kind, &kind.kind)
    }
}

/// A kind pattern that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadPattern {
    /// Neither `Kind`, `group/Kind` nor `group/version/Kind`.
    #[error("{0:?} is not Kind, group/Kind or group/version/Kind")]
    Shape(String),
    /// A part is empty.
    #[error("{0:?} has an empty part (write `core` for the core group)")]
    EmptyPart(String),
}

/// What a plugin asks for over the operator's ceiling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverCeiling {
    /// A setting over its limit: which, what was asked, and the limit.
    #[error("asks for {what} {asked}, over the operator's ceiling of {max}")]
    Over {
        /// The setting, as the message names it.
        what: &'static str,
        /// What the plugin asked for.
        asked: String,
        /// The ceiling.
        max: String,
    },
    /// A webhook failure policy the ceiling does not allow (those it does).
    #[error(
        "asks for webhook failure policy {policy}, which the operator's ceiling does not allow \
         (only {1})",
        policy = .0.as_str()
    )]
    FailurePolicy(FailurePolicy, String),
}

/// The effective settings a plugin would run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    /// Reconciles at once.
    pub concurrency: u32,
    /// Reconcile timeout.
    pub timeout: Duration,
    /// Memory cap per instance.
    pub memory: usize,
    /// Instances at once.
    pub instances: u32,
    /// Its webhooks' timeout and failure policy, when it serves any.
    pub webhooks: Option<(Duration, FailurePolicy)>,
}

impl Ceiling {
    /// Refuses a plugin that asks for more than the ceiling, saying what and which limit.
    pub fn admit(&self, asked: Asked) -> Result<(), OverCeiling> {
        let over = |what: &'static str, asked: String, max: String| {
            Err(OverCeiling::Over { what, asked, max })
        };
        if asked.concurrency > self.max_concurrent_reconciles {
            let max = self.max_concurrent_reconciles.to_string();
            return over(
                "max-concurrent-reconciles",
                asked.concurrency.to_string(),
                max,
            );
        }
        if asked.timeout > self.max_reconcile_timeout {
            let max = format!("{:?}", self.max_reconcile_timeout);
            return over(
                "a reconcile timeout of",
                format!("{:?}", asked.timeout),
                max,
            );
        }
        if asked.memory > self.max_memory {
            return over(
                "a memory limit of",
                asked.memory.to_string(),
                self.max_memory.to_string(),
            );
        }
        if asked.instances > self.max_instances {
            let max = self.max_instances.to_string();
            return over("instances", asked.instances.to_string(), max);
        }
        if let Some((timeout, policy)) = asked.webhooks {
            if timeout > self.max_webhook_timeout {
                let max = format!("{:?}", self.max_webhook_timeout);
                return over("a webhook timeout of", format!("{timeout:?}"), max);
            }
            if !self.webhook_failure_policies.contains(&policy) {
                let allowed: Vec<&str> = self
                    .webhook_failure_policies
                    .iter()
                    .map(|p| p.as_str())
                    .collect();
                return Err(OverCeiling::FailurePolicy(policy, allowed.join(", ")));
            }
        }
        Ok(())
    }

    /// Whether some allowance covers `verb` on `kind` in `namespace` (empty: in every namespace,
    /// or on a cluster-scoped object).
    pub fn covers(&self, verb: Verb, kind: &GroupVersionKind, namespace: &str) -> bool {
        let Some(allow) = &self.allow else {
            return true;
        };
        allow.iter().any(|a| {
            a.kinds.iter().any(|k| k.matches(kind))
                && a.verbs.contains(&verb)
                && (a.namespaces.is_empty() || a.namespaces.iter().any(|n| n == namespace))
        })
    }

    /// Whether some allowance for `verb` on `kind` lists `namespace` by name (an allowance
    /// without namespaces names none).
    pub fn names(&self, verb: Verb, kind: &GroupVersionKind, namespace: &str) -> bool {
        self.allow.iter().flatten().any(|a| {
            a.kinds.iter().any(|k| k.matches(kind))
                && a.verbs.contains(&verb)
                && a.namespaces.iter().any(|n| n == namespace)
        })
    }

    /// Whether `namespace` is one a webhook reaches only where this policy names it.
    pub fn protects(&self, namespace: &str) -> bool {
        self.protected_namespaces.iter().any(|n| n == namespace)
    }

    /// Whether plugin `plugin` may own the conversion of `kind`'s custom resource.
    pub fn may_convert(&self, plugin: &str, kind: &GroupVersionKind) -> bool {
        let Some(conversions) = &self.conversions else {
            return true;
        };
        conversions.iter().any(|c| {
            c.plugin == plugin
                && c.kind.group.as_deref() == Some(kind.group.as_str())
                && c.kind.kind.as_deref() == Some(kind.kind.as_str())
        })
    }

    /// The plugin name source `source` runs as in identity mode.
    pub fn identity<'a>(&'a self, source: &'a str) -> &'a str {
        self.identities.get(source).map_or(source, String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked() -> Asked {
        Asked {
            concurrency: 1,
            timeout: Duration::from_secs(60),
            memory: 64 << 20,
            instances: 2,
            webhooks: None,
        }
    }

    #[test]
    fn limits_over_the_ceiling_are_refused_with_what_was_asked() {
        let ceiling = Ceiling::default();
        assert!(ceiling.admit(asked()).is_ok());
        let greedy = Asked {
            concurrency: u32::MAX,
            ..asked()
        };
        let over = |what: &'static str, asked: &str, max: &str| OverCeiling::Over {
            what,
            asked: asked.to_owned(),
            max: max.to_owned(),
        };
        let reason = ceiling.admit(greedy).unwrap_err();
        assert_eq!(
            reason,
            over("max-concurrent-reconciles", "4294967295", "64")
        );
        let forever = Asked {
            timeout: Duration::from_millis(u64::MAX),
            ..asked()
        };
        let reason = ceiling.admit(forever).unwrap_err();
        assert!(matches!(
            reason,
            OverCeiling::Over {
                what: "a reconcile timeout of",
                ..
            }
        ));
    }

    #[test]
    fn webhook_settings_over_the_ceiling_are_refused_only_for_a_plugin_with_webhooks() {
        let ceiling = Ceiling {
            max_webhook_timeout: Duration::from_secs(3),
            webhook_failure_policies: vec![FailurePolicy::Ignore],
            ..Ceiling::default()
        };
        assert!(
            ceiling.admit(asked()).is_ok(),
            "no webhooks, nothing to limit"
        );
        let fails_closed = Asked {
            webhooks: Some((Duration::from_secs(2), FailurePolicy::Fail)),
            ..asked()
        };
        let reason = ceiling.admit(fails_closed).unwrap_err();
        assert_eq!(
            reason,
            OverCeiling::FailurePolicy(FailurePolicy::Fail, "Ignore".into())
        );
        assert!(reason.to_string().contains("only Ignore"), "{reason}");
        let slow = Asked {
            webhooks: Some((Duration::from_secs(10), FailurePolicy::Ignore)),
            ..asked()
        };
        let reason = ceiling.admit(slow).unwrap_err();
        let expected = OverCeiling::Over {
            what: "a webhook timeout of",
            asked: "10s".into(),
            max: "3s".into(),
        };
        assert_eq!(reason, expected);
        let fair = Asked {
            webhooks: Some((Duration::from_secs(3), FailurePolicy::Ignore)),
            ..asked()
        };
        assert!(ceiling.admit(fair).is_ok());
    }

    #[test]
    fn namespaced_allowances_cover_only_their_namespaces() {
        let ceiling = Ceiling {
            allow: Some(vec![Allowance {
                kinds: vec![KindPattern::parse("*").unwrap()],
                verbs: vec![Verb::Get, Verb::Create],
                namespaces: vec!["team-a".to_owned()],
            }]),
            ..Ceiling::default()
        };
        let configmap = GroupVersionKind::gvk("", "v1", "ConfigMap");
        assert!(ceiling.covers(Verb::Create, &configmap, "team-a"));
        assert!(!ceiling.covers(Verb::Create, &configmap, "team-b"));
        assert!(!ceiling.covers(Verb::Get, &configmap, ""), "all namespaces");
        assert!(!ceiling.covers(Verb::Delete, &configmap, "team-a"));
        assert!(Ceiling::default().covers(Verb::Delete, &configmap, ""));
        assert!(KindPattern::parse("a//b").is_err());
        assert_eq!(
            KindPattern::parse("apps/v1/Deployment")
                .unwrap()
                .kind
                .as_deref(),
            Some("Deployment")
        );
    }

    #[test]
    fn conversions_and_identities_are_granted_by_name_only() {
        let webapp = GroupVersionKind::gvk("example.wasmop.dev", "v2", "WebApp");
        let ceiling = Ceiling {
            conversions: Some(vec![Conversion {
                kind: KindPattern::parse("example.wasmop.dev/WebApp").unwrap(),
                plugin: "webapp".to_owned(),
            }]),
            identities: [("webapp-canary".to_owned(), "webapp".to_owned())].into(),
            ..Ceiling::default()
        };
        assert!(ceiling.may_convert("webapp", &webapp));
        assert!(!ceiling.may_convert("other", &webapp));
        let other = GroupVersionKind::gvk("example.wasmop.dev", "v1", "Other");
        assert!(!ceiling.may_convert("webapp", &other));
        let none_named = Ceiling {
            conversions: Some(vec![]),
            ..Ceiling::default()
        };
        assert!(!none_named.may_convert("webapp", &webapp));
        assert!(
            Ceiling::default().may_convert("webapp", &webapp),
            "no policy file"
        );
        assert_eq!(ceiling.identity("webapp-canary"), "webapp");
        assert_eq!(ceiling.identity("good"), "good");
    }

    #[test]
    fn only_public_addresses_are_module_sources_by_default() {
        let sources = ModuleSources::default();
        for private in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            let address: IpAddr = private.parse().unwrap();
            assert!(!sources.allows_address(address), "{private}");
        }
        assert!(sources.allows_address("93.184.216.34".parse().unwrap()));
        assert!(sources.allows_address("2606:2800:220:1::1".parse().unwrap()));
        let open = ModuleSources {
            private_addresses: true,
            ..ModuleSources::default()
        };
        assert!(open.allows_address("127.0.0.1".parse().unwrap()));
        assert!(!sources.allows_namespace("kube-system"));
    }
}
