//! The webhook server's work, as controller-runtime's Manager runs it beside the controllers: the
//! apiserver's admission.k8s.io/v1 AdmissionReviews and apiextensions.k8s.io/v1
//! ConversionReviews answered by the plugin that declared the webhook ([`review`]), on the
//! routes of its listener ([`server`]).
//!
//! A plugin that fails — traps, loops past its webhook timeout, answers garbage — gets the answer
//! its [`FailurePolicy`] asks for, always inside the apiserver's timeout: refused with the
//! plugin's name and the failure (`Fail`), or admitted with a warning saying so (`Ignore`).

pub mod review;
pub mod server;

pub use review::{FailurePolicy, Hook, ReviewError, admission, conversion};
pub use server::{Loaded, WebhookServer};
