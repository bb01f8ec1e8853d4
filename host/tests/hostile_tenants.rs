//! Tenants (whoever may create `WasmReconciler`s) attacking the host on the real control plane:
//! each module measures what one kind of attack gets, against the bounds the operator set, and
//! prints it.

mod common;

#[path = "hostile_tenants/pool.rs"]
mod pool;
