//! The plugins a manager knows, one per source, and how they change while it runs.
//!
//! A source — a `--plugin` file, a file in `--plugin-dir` or a `WasmReconciler` (`sources`)
//! — supplies one plugin. A new module is
//! compiled and described by a [`Loader`] outside the manager's loop, then swapped in by the
//! [`Registry`]: a new plugin starts when the manager leads (followers keep it loaded, warm);
//! a new version of a running plugin takes over its controller
//! ([`crate::controller::Controller::upgrade`]) once its informers have synced, outside the
//! loop; a module that fails to load, or a version whose informers do not sync in time, leaves
//! the old version running and is recorded as the source's last error. Statuses are read from
//! a published view ([`Statuses`]), never from the loop.
//! Removing a source stops its controller — keys still queued are dropped (the informers list
//! them again for whoever loads the plugin next), in-flight reconciles finish within the grace
//! period — and releases the informers only it used. Plugin names are unique across sources, and
//! the operator's sources (files, the plugin directory) always win a name over a tenant's (a
//! `WasmReconciler`): whichever loads first, the tenant's plugin of that name is unloaded.
//!
//! Imports: the contract, `cache`, `client`, `config`, `controller`, `distribution`, `events`,
//! `http`, `identity`, `metrics` and `runtime`; never `manager`, `sources` or `testing`.

mod access;
mod error;
mod handle;
mod loader;
mod options;
mod registry;
pub mod signed;
mod status;
mod supervisor;

pub use error::PluginError;
pub use handle::{Installed, PluginHandle};
pub use loader::Loader;
pub use options::options;
pub use registry::{Registry, Report, Statuses};
pub use status::{PluginState, PluginStatus, TENANT_SOURCE_PREFIX, table};
pub use supervisor::{Supervisor, Timeouts};
