//! A plugin's admission and conversion webhooks as it declares them (`describe-webhooks`) and
//! the requests and answers of one call: what the capability check sees, and what the
//! runtime's calls and the host's webhook server exchange.

use std::time::Duration;

use crate::boundary::{self, Malformed};
use crate::object::GroupVersionKind;
use crate::object::ObjectKey;

/// The most warnings one answer may carry; further ones are dropped.
pub const MAX_WARNINGS: usize = 16;
/// The longest message or warning, in bytes; longer ones are cut.
pub const MAX_MESSAGE: usize = 1024;
/// The most rules a plugin may declare for each of validate, default and convert.
pub const MAX_RULES: usize = 64;

/// What an admission request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// A create.
    Create,
    /// An update.
    Update,
    /// A delete.
    Delete,
    /// A connect (exec, attach, port-forward, proxy).
    Connect,
}

impl Operation {
    /// Every operation, in the apiserver's order.
    pub const ALL: [Operation; 4] = [
        Operation::Create,
        Operation::Update,
        Operation::Delete,
        Operation::Connect,
    ];

    /// Its name in admission.k8s.io/v1 (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// The operation named `name` in admission.k8s.io/v1.
    pub fn parse(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|op| op.as_str() == name)
    }
}

/// The operations a validating or defaulting webhook is called for, on one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The kind.
    pub kind: GroupVersionKind,
    /// Its operations (at least one).
    pub operations: Vec<Operation>,
}

/// The webhooks a plugin serves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookRegistration {
    /// What `validate` is called for.
    pub validate: Vec<Rule>,
    /// What `default` is called for.
    pub default: Vec<Rule>,
    /// Custom resources (group and kind) whose versions `convert` converts between.
    pub convert: Vec<GroupVersionKind>,
}

impl WebhookRegistration {
    /// Whether it declares no webhook at all.
    pub fn is_empty(&self) -> bool {
        self.validate.is_empty() && self.default.is_empty() && self.convert.is_empty()
    }

    /// Checks every kind and rule, naming the first that is not valid.
    pub fn validate(&self) -> Result<(), InvalidWebhooks> {
        let rule_lists = [
            ("validate", "validate rules", &self.validate),
            ("default", "default rules", &self.default),
        ];
        for (what, many, rules) in rule_lists {
            if rules.len() > MAX_RULES {
                return Err(InvalidWebhooks::TooMany(rules.len(), many));
            }
            for rule in rules {
                boundary::kind(&rule.kind).map_err(|e| InvalidWebhooks::Kind(what, e))?;
                if rule.operations.is_empty() {
                    let kind = format!("{} {}", rule.kind.api_version(), rule.kind.kind);
                    return Err(InvalidWebhooks::NoOperation(what, kind));
                }
            }
        }
        if self.convert.len() > MAX_RULES {
            return Err(InvalidWebhooks::TooMany(
                self.convert.len(),
                "convert kinds",
            ));
        }
        for kind in &self.convert {
            boundary::kind(kind).map_err(|e| InvalidWebhooks::Kind("convert", e))?;
            if kind.group.is_empty() {
                return Err(InvalidWebhooks::CoreConversion(kind.kind.clone()));
            }
        }
        Ok(())
    }
}

/// What is wrong with the webhooks a plugin declares; each names the webhook (`validate`,
/// `default` or `convert`) whose rule or kind it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidWebhooks {
    /// More rules or kinds than [`MAX_RULES`] (`validate rules`, `default rules`, `convert kinds`).
    #[error("{0} {1}, over the limit of {MAX_RULES}")]
    TooMany(usize, &'static str),
    /// A rule's or conversion's kind is malformed.
    #[error("{0} rule: {1}")]
    Kind(&'static str, Malformed),
    /// A rule names no operation.
    #[error("{0} rule for {1} names no operation")]
    NoOperation(&'static str, String),
    /// A conversion of a core kind.
    #[error("convert kind {0} is in the core group; only custom resources convert")]
    CoreConversion(String),
}

/// A failure policy that is neither `Fail` nor `Ignore`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a failure policy: Fail or Ignore")]
pub struct UnknownFailurePolicy(pub String);

/// Who sent an admission request, as the apiserver authenticated them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name.
    pub username: String,
    /// The user's uid.
    pub uid: String,
    /// The user's groups.
    pub groups: Vec<String>,
}

/// One admission request, as the guest sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionRequest {
    /// The request's uid.
    pub uid: String,
    /// The object's kind, in the version the webhook is registered for.
    pub kind: GroupVersionKind,
    /// The object's namespace and name (either may be empty).
    pub key: ObjectKey,
    /// What the request is for.
    pub operation: Operation,
    /// The object as it would be stored; absent on delete.
    pub object: Option<String>,
    /// The object as stored; absent on create.
    pub old_object: Option<String>,
    /// Who sent it.
    pub user: UserInfo,
    /// Whether the request persists nothing.
    pub dry_run: bool,
}

/// A refusal, for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// Why.
    pub message: String,
    /// Warnings besides.
    pub warnings: Vec<String>,
}

/// The answer of `validate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Admitted, with these warnings.
    Allowed(Vec<String>),
    /// Refused.
    Denied(Denial),
}

/// How long one webhook call may take when the operator sets nothing: well inside the
/// apiserver's default webhook timeout of 10 s.
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest one webhook call may take: the apiserver, told to wait 2 s longer, waits at most
/// 30 s.
pub const MAX_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(25);

/// What the apiserver is told when the plugin fails to answer, and what it does when it cannot
/// reach the host at all: the webhook configuration's `failurePolicy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Refuse the request (the apiserver's default).
    #[default]
    Fail,
    /// Admit it unchanged, with a warning.
    Ignore,
}

impl FailurePolicy {
    /// The policy's name in a webhook configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }

    /// The policy named `name` (`Fail` or `Ignore`, as Kubernetes spells them).
    pub fn parse(name: &str) -> Result<FailurePolicy, UnknownFailurePolicy> {
        match name {
            "Fail" => Ok(FailurePolicy::Fail),
            "Ignore" => Ok(FailurePolicy::Ignore),
            other => Err(UnknownFailurePolicy(other.to_owned())),
        }
    }
}
