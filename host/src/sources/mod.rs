//! The plugin sources beside the operator's `--plugin` files: the `--plugin-dir` directory
//! ([`dir`]) and the tenants' `WasmReconciler`/`ClusterWasmReconciler` objects ([`crd`]), whose
//! installs wait their turn in one bounded line ([`installs`]). Each turns what it watches into
//! changes sent through a [`crate::plugins::PluginHandle`], and reports back what the plugins'
//! registry says.
//!
//! Imports: the contract, `cache`, `config`, `distribution`, `plugins` and `runtime`; never
//! `manager`.

pub mod crd;
pub mod dir;
mod installs;

pub use installs::InstallGauges;
