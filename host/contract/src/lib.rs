//! The plugin contract of wasmop: what a plugin declares ([`registration`], [`webhook`]), what
//! the operator allows it ([`policy`], [`limits`]), the one capability check every power a
//! plugin gets passes ([`capability`]), how everything a guest hands the host is validated where
//! it enters ([`boundary`], [`depth`], [`selector`], [`owners`]), and the host services its
//! imports call ([`imports`]).
//!
//! Invariant: this crate knows no runtime — no wasmtime, no kube client, no async runtime — so
//! the rules of the sandbox can be read, tested and fuzzed apart from the engine that enforces
//! them. It imports nothing of the host; the host's modules import it.

#![deny(missing_docs)]

pub mod boundary;
pub mod capability;
pub mod depth;
pub mod environment;
pub mod imports;
pub mod limits;
pub mod object;
pub mod owners;
pub mod policy;
pub mod refusal;
pub mod registration;
pub mod request_info;
pub mod rights;
pub mod selector;
pub mod signature;
pub mod webhook;

pub use environment::Environment;
pub use imports::{Observer, Services};
pub use limits::{GuestLimits, MAX_MEMORY, Rate};
pub use object::{GroupVersionKind, ObjectKey, ObjectRef};
pub use policy::{
    Allowance, Asked, BadPattern, Ceiling, Conversion, KindPattern, ModuleSources, OverCeiling,
};
pub use refusal::Refusal;
pub use registration::{
    FieldIndex, InvalidRegistration, Mapping, Permission, Predicate, Registration, Verb, Watch,
};
pub use rights::{REVIEW_TTL, Reviewer, Rights};
pub use signature::{KeyError, Signatures, TrustedKey};
pub use webhook::{
    AdmissionRequest, DEFAULT_WEBHOOK_TIMEOUT, Denial, FailurePolicy, InvalidWebhooks, MAX_MESSAGE,
    MAX_RULES, MAX_WARNINGS, MAX_WEBHOOK_TIMEOUT, Operation, Rule, UnknownFailurePolicy, UserInfo,
    Verdict, WebhookRegistration,
};
