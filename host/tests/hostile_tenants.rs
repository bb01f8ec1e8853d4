//! What a tenant — whoever creates `WasmReconciler` objects or publishes a module — can make the
//! host do beyond what it was given, attacked on a real kube-apiserver through a real
//! `wasmop run`. Each area's module checks what a user would (what reached the apiserver, what
//! the apiserver admits, the status and metrics a user reads) and prints what it measured.

mod common;

#[path = "hostile_tenants/reach.rs"]
mod reach;
