//! The webhook server's work, as controller-runtime's Manager runs it beside the controllers: the
//! apiserver's admission.k8s.io/v1 AdmissionReviews and apiextensions.k8s.io/v1
//! ConversionReviews answered by the plugin that declared the webhook ([`review`]), on the
//! routes of its listener ([`server`]), which the apiserver finds through the configurations the
//! leader writes ([`configuration`]).
//!
//! A plugin that fails — traps, loops past its webhook timeout, answers garbage — gets the answer
//! its [`FailurePolicy`] asks for, always inside the apiserver's timeout: refused with the
//! plugin's name and the failure (`Fail`), or admitted with a warning saying so (`Ignore`). A
//! call the capability check refuses (an object in a namespace the webhook may not reach) is
//! admitted with a warning whatever the policy: a refusal never becomes a veto.
//!
//! Imports: the contract, `http`, `metrics` and `runtime` (the plugins it calls, as
//! [`crate::runtime::Live`]); never `plugins` or `manager`.

pub mod configuration;
pub mod review;
pub mod server;

use std::net::SocketAddr;

use crate::http::SecureServing;

pub use configuration::{Endpoint, Target, Writer};
pub use review::{
    Answer, AroundReview, Hook, Outcome, ReviewError, Reviewed, admission, conversion,
};
pub use server::WebhookServer;
pub use wasmop_contract::FailurePolicy;

/// How the webhook server runs: controller-runtime's webhook server options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookServing {
    /// Where the HTTPS listener binds (controller-runtime's default port is 9443).
    pub address: SocketAddr,
    /// Its certificate: a directory's (as cert-manager mounts a Secret) or self-signed.
    pub tls: SecureServing,
    /// The configurations the leader writes; none when `None` (someone else writes them).
    pub target: Option<Target>,
}
