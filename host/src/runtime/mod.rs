//! The WebAssembly runtime: the only part of the host that knows wasmtime.
//!
//! One [`Runtime`] per process owns the engine (component model, pooling allocator, epoch
//! interruption, compiled-component cache) and a linker with WASI p2 — with nothing granted: no
//! files, sockets, environment or arguments — and the `wasmop:reconciler` imports. A [`Plugin`]
//! is one loaded component version; each call runs in a fresh instance (or a warm one from its
//! pool) under a memory cap and a deadline. Whatever a guest does — trap, loop, exhaust memory,
//! write what it did not declare, send malformed JSON — ends as a typed error naming the plugin;
//! the host and other plugins carry on.

mod bindings;
mod engine;
mod error;
mod host;
pub mod imports;
mod instances;
pub mod memory;
mod output;
mod plugin;
pub(crate) mod registration;

pub use engine::{EPOCH_TICK, Runtime, RuntimeConfig, default_cache_dir};
pub use error::{DispatchError, RuntimeError, TrapKind};
pub use host::MemoryLimitExceeded;
pub use imports::Services;
pub use instances::InstanceMode;
pub use plugin::{Outcome, Plugin, PluginOptions};
pub use registration::{FieldIndex, Mapping, Permission, Predicate, Registration, Verb, Watch};
