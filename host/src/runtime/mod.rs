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

mod artifacts;
mod bindings;
pub(crate) mod boundary;
mod budget;
pub mod capability;
mod clock;
mod compiler;
mod engine;
mod error;
mod host;
pub mod imports;
mod instances;
mod limits;
mod memory;
mod output;
mod owners;
mod plugin;
mod policy;
pub(crate) mod registration;
mod rights;
mod webhooks;
mod wrap;

pub use artifacts::{CACHE_LIMIT, default_cache_dir};
pub use budget::Refusal;
pub use clock::SetClock;
pub use compiler::{CompileIn, CompileWorker, WORKER_COMMAND, WorkerError, run_worker};
pub use engine::{EPOCH_TICK, Runtime, RuntimeConfig};
pub use error::{DispatchError, RuntimeError, TrapKind};
pub use host::MemoryLimitExceeded;
pub use imports::{Observer, Services};
pub use instances::InstanceMode;
pub use limits::GuestLimits;
pub use memory::GuestMemoryExhausted;
pub use plugin::{Live, Outcome, Plugin, PluginOptions};
pub use policy::{Allowance, Asked, Ceiling, Conversion, KindPattern, ModuleSources};
pub use registration::{FieldIndex, Mapping, Permission, Predicate, Registration, Verb, Watch};
pub use rights::{REVIEW_TTL, Rights};
pub use wrap::{Reconciled, Wrap};
pub use webhooks::{
    AdmissionRequest, DEFAULT_WEBHOOK_TIMEOUT, Denial, FailurePolicy, Operation, Rule, UserInfo,
    Verdict, WebhookRegistration,
};
