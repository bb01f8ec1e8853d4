//! The host attacked by a tenant: whoever may create `WasmReconciler` objects, upload a module or
//! push to a registry, but holds no other rights. Each module attacks one rule of `SECURITY.md`'s
//! tenant model on the real control plane, with the operator's own plugins (and another tenant)
//! beside the attacker, checks what reached the apiserver, the registry and the disk, and what
//! the neighbours kept, and prints what the attack got.

mod common;

#[path = "hostile_tenants/bytes.rs"]
mod bytes;
#[path = "hostile_tenants/fetch.rs"]
mod fetch;
#[path = "hostile_tenants/names.rs"]
mod names;
#[path = "hostile_tenants/namespaces.rs"]
mod namespaces;
#[path = "hostile_tenants/pool.rs"]
mod pool;
#[path = "hostile_tenants/reach.rs"]
mod reach;
