//! Tenants — whoever creates `WasmReconciler`s, uploads a module or pushes to a registry —
//! attacking the host on the real control plane to get more than they were given. Each test
//! prints what it measured.

mod common;

#[path = "hostile_tenants/bytes.rs"]
mod bytes;
