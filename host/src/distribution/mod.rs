//! Where a plugin's bytes come from, and how they are checked before anything runs them: a
//! `WasmReconciler`'s module from a ConfigMap, a Secret, a URL ([`module`]) or a registry as a
//! Wasm OCI artifact ([`oci`]), fetched within the limits every download keeps ([`download`]),
//! only from addresses the capability check passed ([`address`]), and pinned by digest.
//!
//! Invariant: what is returned is exactly what the digest names; nothing here compiles or runs a
//! module. Imports: the contract, `cache`, `config` and `disk`; never `plugins`, `sources` or
//! `runtime`.

pub mod address;
mod digest;
pub mod download;
pub mod module;
pub mod oci;

pub use digest::{digest, digest_of};
