//! The seam where something is installed around a plugin: its host services and each of its
//! reconciles pass through a [`Wrap`] when the runtime was given one (`wasmop run --record`
//! installs the fixture recorder here). The guest call path knows only [`Services`]; what is
//! wrapped around them is invisible to it.

use std::fmt;

use futures::future::BoxFuture;

use crate::runtime::error::DispatchError;
use crate::runtime::plugin::Outcome;
use wasmop_contract::imports::Services;
use wasmop_contract::object::ObjectKey;

/// One reconcile's result, as a [`Wrap`] sees it.
pub type Reconciled = Result<Outcome, DispatchError>;

/// Installed around every plugin a runtime loads: wraps the services its guests call and runs
/// each of its reconciles.
pub trait Wrap: Send + Sync + fmt::Debug + 'static {
    /// The services `plugin`'s guests call, wrapped.
    fn services(&self, plugin: &str, services: Services) -> Services;

    /// Runs `call`, one reconcile of `key` by `plugin`, and returns its result.
    fn reconcile<'a>(
        &'a self,
        plugin: &'a str,
        key: &'a ObjectKey,
        call: BoxFuture<'a, Reconciled>,
    ) -> BoxFuture<'a, Reconciled>;
}
