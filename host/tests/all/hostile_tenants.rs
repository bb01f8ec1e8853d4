//! The host attacked by a tenant: whoever may create `WasmReconciler` objects, upload a module or
//! push to a registry, but holds no other rights. Each module attacks one rule of `SECURITY.md`'s
//! tenant model on the real control plane, with the operator's own plugins (and another tenant)
//! beside the attacker, checks what reached the apiserver, the registry and the disk, and what
//! the neighbours kept, and prints what the attack got.

mod bytes;
mod fetch;
mod names;
mod namespaces;
mod pool;
mod reach;
