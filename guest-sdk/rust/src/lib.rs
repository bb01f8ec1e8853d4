//! Write wasmop reconcilers in Rust. A plugin implements [`Reconciler`] and exports it with
//! [`export_reconciler!`]; the crate builds to a `wasm32-wasip2` component the wasmop host loads.
//! Objects are `k8s-openapi` types or custom resource structs ([`custom_resource!`]); the
//! [`cache()`] reads them from the host's informer cache, the [`client()`] writes them to the
//! apiserver within the plugin's declared permissions, [`events()`] records Kubernetes Events and
//! the [`info!`] family logs through the host. [`raw`] holds the generated WIT bindings.
//!
//! ```
//! use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
//! use wasmop_guest::{
//!     OptionalExt, Outcome, ReconcileError, Reconciler, Registration, Request, Verb, cache,
//!     client,
//! };
//!
//! struct Stamp;
//!
//! impl Reconciler for Stamp {
//!     fn describe() -> Registration {
//!         Registration::new::<ConfigMap>("stamp", "0.1.0")
//!             .permit::<ConfigMap>(&[Verb::Patch])
//!             .max_concurrent_reconciles(2)
//!     }
//!
//!     fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
//!         let Some(cm) = cache().get::<ConfigMap>(&req.namespace, &req.name).optional()? else {
//!             return Ok(Outcome::Done);
//!         };
//!         let stamped = cm.metadata.annotations.iter().flatten().any(|(k, _)| k == "stamped");
//!         if !stamped {
//!             let patch = serde_json::json!({"metadata": {"annotations": {"stamped": "yes"}}});
//!             client().patch_merge::<ConfigMap>(&req.namespace, &req.name, &patch)?;
//!             wasmop_guest::info!("stamped {req}");
//!         }
//!         Ok(Outcome::Done)
//!     }
//! }
//!
//! wasmop_guest::export_reconciler!(Stamp);
//! ```

mod admission;
mod cache;
mod client;
pub mod conditions;
mod error;
mod events;
mod kind;
pub mod log;
pub mod meta;
pub mod raw;
mod reconciler;
pub mod webhooks;

pub use admission::conversion_review;
pub use cache::{Cache, ListOptions, cache};
pub use client::{Client, DeleteOptions, Propagation, client};
pub use error::{DeniedBy, Error, OptionalExt, ReconcileError, Status, Terminal};
pub use events::{EventType, Events, events};
pub use kind::{Gvk, Kind, Object, ObjectKey, from_json, to_json};
#[doc(hidden)]
pub use reconciler::Export;
pub use reconciler::{Mapping, Outcome, Predicate, Reconciler, Registration, Request, Verb};

pub use k8s_openapi;
pub use serde_json;
