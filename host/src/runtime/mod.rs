//! The WebAssembly runtime: the only part of the host that knows wasmtime.
//!
//! One [`Runtime`] per process owns the engine (component model, pooling allocator, epoch
//! interruption), the compile cache, and a linker with WASI p2 — with nothing granted: no
//! files, sockets, environment or arguments — and the `wasmop:reconciler` imports. A [`Plugin`]
//! is one loaded component version; each call runs in a fresh instance (or a warm one from its
//! pool) under a memory cap and a deadline. Everything a guest hands the host passes one boundary
//! (validated, bounded per call, checked against its declared permissions as the request will be
//! sent) and one budget (rates per plugin), under the operator's ceiling. Whatever a guest does —
//! trap, loop, exhaust memory, write what it did not declare, send malformed JSON — ends as a
//! typed error naming the plugin; the host and other plugins carry on.
//!
//! Imports: the contract and `rate` only; never `plugins`, `controller`, `config` or `testing` —
//! whatever is wrapped around a plugin (the `--record` recorder) comes in through [`Wrap`].

mod artifacts;
mod bindings;
mod budget;
mod changes;
mod clock;
mod compiler;
mod compiles;
mod engine;
mod error;
mod gauges;
mod handlers;
mod host;
mod instances;
mod memory;
mod output;
mod plugin;
mod reserve;
mod suspend;
mod transport;
mod webhooks;
mod wrap;

pub use artifacts::{Adopted, CACHE_LIMIT, default_cache_dir};
pub use changes::counted;
pub use clock::{HostClock, SetClock, frozen_at};
pub use compiler::{CompileIn, CompileWorker, WORKER_COMMAND, WorkerError, run_worker};
pub use compiles::CompileGauges;
pub use engine::{Backend, EPOCH_TICK, Runtime, RuntimeConfig};
pub use error::{DispatchError, RuntimeError, TrapKind};
pub use gauges::{MemoryGauges, PoolGauges};
pub(crate) use gauges::{collected, count};
pub use handlers::ObjectChange;
pub use host::MemoryLimitExceeded;
pub use instances::InstanceMode;
pub use memory::GuestMemoryExhausted;
pub use plugin::{Live, Outcome, Plugin, PluginOptions, Shares};
pub use webhooks::Unchecked;
pub use wrap::{Reconciled, Wrap};
