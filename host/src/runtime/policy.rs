//! The operator's ceiling over every plugin: which kinds, verbs and namespaces a plugin may be
//! granted, and the most concurrency, time, memory and instances it may have. A plugin whose
//! registration (or whose overrides) asks for more does not load; the reason names what it asked
//! for and the ceiling it passed.

use std::time::Duration;

use crate::object::GroupVersionKind;
use crate::runtime::boundary::cut;
use crate::runtime::registration::{Registration, Verb};

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
}

impl Default for Ceiling {
    fn default() -> Self {
        Ceiling {
            allow: None,
            max_concurrent_reconciles: 64,
            max_reconcile_timeout: Duration::from_secs(600),
            max_memory: 1 << 30,
            max_instances: 128,
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
    pub fn parse(text: &str) -> Result<Self, String> {
        let part = |p: &str| (p != "*").then(|| p.to_owned());
        let group = |g: &str| part(if g == "core" { "" } else { g });
        let parts: Vec<&str> = text.split('/').collect();
        let pattern = match parts.as_slice() {
            [kind] => (None, None, part(kind)),
            [g, kind] => (group(g), None, part(kind)),
            [g, version, kind] => (group(g), part(version), part(kind)),
            _ => {
                return Err(format!(
                    "{:?} is not Kind, group/Kind or group/version/Kind",
                    cut(text)
                ));
            }
        };
        if parts.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "{:?} has an empty part (write `core` for the core group)",
                cut(text)
            ));
        }
        Ok(KindPattern {
            group: pattern.0,
            version: pattern.1,
            kind: pattern.2,
        })
    }

    fn matches(&self, kind: &GroupVersionKind) -> bool {
        let part = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        part(&self.group, &kind.group)
            && part(&self.version, &kind.version)
            && part(&self.kind, &kind.kind)
    }
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
}

impl Ceiling {
    /// Refuses a plugin that asks for more than the ceiling, saying what and which limit.
    pub fn admit(&self, registration: &Registration, asked: Asked) -> Result<(), String> {
        let over = |what: &str, asked: String, max: String| {
            Err(format!(
                "asks for {what} {asked}, over the operator's ceiling of {max}"
            ))
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
        self.grants(registration)
    }

    /// Refuses a registration with a grant no allowance covers.
    fn grants(&self, registration: &Registration) -> Result<(), String> {
        let Some(allow) = &self.allow else {
            return Ok(());
        };
        for (kind, verb, namespaces) in registration.grants() {
            let covered = allow.iter().any(|a| {
                a.kinds.iter().any(|k| k.matches(kind))
                    && a.verbs.contains(&verb)
                    && (a.namespaces.is_empty()
                        || !namespaces.is_empty()
                            && namespaces.iter().all(|n| a.namespaces.contains(n)))
            });
            if !covered {
                let place = match namespaces.is_empty() {
                    true => "in all namespaces".to_owned(),
                    false => format!("in namespaces {}", namespaces.join(", ")),
                };
                let api_version = kind.api_version();
                return Err(format!(
                    "asks for {verb:?} on {api_version} {} {place}, which the operator's policy does not allow",
                    kind.kind
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Permission;
    use crate::runtime::registration::tests::{configmap, minimal};

    fn asked() -> Asked {
        Asked {
            concurrency: 1,
            timeout: Duration::from_secs(60),
            memory: 64 << 20,
            instances: 2,
        }
    }

    #[test]
    fn limits_over_the_ceiling_are_refused_with_what_was_asked() {
        let ceiling = Ceiling::default();
        let registration = minimal("greedy");
        assert!(ceiling.admit(&registration, asked()).is_ok());
        let greedy = Asked {
            concurrency: u32::MAX,
            ..asked()
        };
        let reason = ceiling.admit(&registration, greedy).unwrap_err();
        assert!(
            reason.contains("max-concurrent-reconciles 4294967295"),
            "{reason}"
        );
        let forever = Asked {
            timeout: Duration::from_millis(u64::MAX),
            ..asked()
        };
        assert!(
            ceiling
                .admit(&registration, forever)
                .unwrap_err()
                .contains("timeout")
        );
    }

    #[test]
    fn grants_must_fit_an_allowance() {
        let ceiling = Ceiling {
            allow: Some(vec![Allowance {
                kinds: vec![KindPattern::parse("core/ConfigMap").unwrap()],
                verbs: vec![Verb::Get, Verb::List, Verb::Watch, Verb::Patch],
                namespaces: vec![],
            }]),
            ..Ceiling::default()
        };
        let mut registration = minimal("reader");
        assert!(ceiling.admit(&registration, asked()).is_ok());
        registration.permissions.push(Permission {
            kind: GroupVersionKind::gvk("", "v1", "Secret"),
            verbs: vec![Verb::Get],
            namespaces: vec![],
        });
        let reason = ceiling.admit(&registration, asked()).unwrap_err();
        assert!(
            reason.contains("Get on v1 Secret in all namespaces"),
            "{reason}"
        );
        registration.permissions[0].kind = configmap();
        registration.permissions[0].verbs = vec![Verb::Delete];
        assert!(ceiling.admit(&registration, asked()).is_err());
    }

    #[test]
    fn namespaced_allowances_cover_only_their_namespaces() {
        let allowance = Allowance {
            kinds: vec![KindPattern::parse("*").unwrap()],
            verbs: vec![Verb::Get, Verb::List, Verb::Watch, Verb::Create],
            namespaces: vec!["team-a".to_owned()],
        };
        let ceiling = Ceiling {
            allow: Some(vec![allowance]),
            ..Ceiling::default()
        };
        let mut registration = minimal("writer");
        registration.permissions.push(Permission {
            kind: configmap(),
            verbs: vec![Verb::Create],
            namespaces: vec!["team-a".to_owned()],
        });
        let reason = ceiling.admit(&registration, asked()).unwrap_err();
        assert!(
            reason.contains("Get on v1 ConfigMap in all namespaces"),
            "{reason}"
        );
        assert!(KindPattern::parse("a//b").is_err());
        assert_eq!(
            KindPattern::parse("apps/v1/Deployment")
                .unwrap()
                .kind
                .as_deref(),
            Some("Deployment")
        );
    }
}
