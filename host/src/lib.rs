//! wasmop: a Kubernetes operator host that runs reconcilers as sandboxed WebAssembly components.
//!
//! The host mirrors controller-runtime's Manager: a shared informer cache, a cache-backed client,
//! workqueues, leader election, metrics and health. Each module is named after the concept it
//! implements.

pub use wasmop_contract as contract;

pub mod build;
pub mod cache;
pub mod client;
pub mod config;
pub mod controller;
pub mod disk;
pub mod distribution;
pub mod events;
pub mod fixture;
#[cfg(test)]
mod fuzz;
pub mod http;
pub mod identity;
pub mod leader;
pub mod logging;
pub mod manager;
pub mod metrics;
pub mod plugins;
pub mod queue;
pub mod rate;
pub mod rbac;
pub mod record;
pub mod runtime;
pub mod scaffold;
pub mod shard;
pub mod sources;
pub mod testing;
pub mod webhook;
