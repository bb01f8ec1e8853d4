//! Errors of loading plugins and of dispatching requests into them. Each names the plugin (or
//! its file) and says what a person can do about it.

use std::fmt;
use std::path::PathBuf;

use crate::runtime::compiler::WorkerError;
use wasmop_contract::object::ObjectKey;

/// The engine could not be built or a plugin could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The wasmtime engine or linker could not be set up.
    #[error("setting up the WebAssembly engine: {0:#}")]
    Engine(wasmtime::Error),
    /// The thread that suspends idle plugins could not be started.
    #[error("starting the thread that suspends idle plugins: {0}")]
    Suspender(std::io::Error),
    /// The compile cache is not this user's alone.
    #[error(
        "compile cache {dir}: {reason}; give --compile-cache a directory only this user can write"
    )]
    CompileCache {
        /// The directory.
        dir: PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// The plugin file could not be read.
    #[error("reading plugin {file}: {source}")]
    Read {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The plugin's memory limit is above what the runtime was configured to allow.
    #[error(
        "plugin {file}: memory limit of {limit} bytes is above the runtime's maximum of {max} bytes"
    )]
    MemoryLimit {
        /// The file.
        file: PathBuf,
        /// The requested limit.
        limit: usize,
        /// The runtime's maximum.
        max: usize,
    },
    /// The file is a core module or not WebAssembly at all.
    #[error(
        "plugin {file} is not a WebAssembly component ({found}); build it for wasm32-wasip2 or wrap it with `wasm-tools component new`"
    )]
    NotAComponent {
        /// The file.
        file: PathBuf,
        /// What it is instead.
        found: &'static str,
    },
    /// The component was built against another major version of the WIT package.
    #[error(
        "plugin {file} was built for {found}, but this host speaks {expected}; rebuild it against the wit/ of this release"
    )]
    WitVersion {
        /// The file.
        file: PathBuf,
        /// The package version it imports or exports.
        found: String,
        /// The package version this host offers.
        expected: String,
    },
    /// The component does not export what a reconciler must.
    #[error(
        "plugin {file} does not export `{export}`; a reconciler exports describe, reconcile and map (the `reconciler` world)"
    )]
    MissingExport {
        /// The file.
        file: PathBuf,
        /// The missing export.
        export: &'static str,
    },
    /// Compilation or linking failed.
    #[error("plugin {file} could not be compiled or linked: {source:#}")]
    Compile {
        /// The file.
        file: PathBuf,
        /// The wasmtime error.
        source: wasmtime::Error,
    },
    /// The compiler process ran out of memory: the plugin is too large for the host's limits.
    #[error("plugin {file} could not be compiled: {source}")]
    CompileKilled {
        /// The file.
        file: PathBuf,
        /// How the compiler process ended.
        source: WorkerError,
    },
    /// The instance pool or the guest memory budget has not the share the plugin needs left,
    /// for it (a tenant's plugin: outside the operator's reserve).
    #[error("plugin {plugin} ({file}) refused: {reason}")]
    Exhausted {
        /// The file.
        file: PathBuf,
        /// The plugin's name (its file's stem, before it described itself).
        plugin: String,
        /// What it asked for, and what is left.
        reason: String,
    },
    /// The plugin asks for more than the operator's ceiling, or for powers it may not have.
    #[error("plugin {plugin} ({file}) refused: {reason}")]
    Refused {
        /// The file.
        file: PathBuf,
        /// The plugin's name.
        plugin: String,
        /// What it asked for, and the limit.
        reason: String,
    },
    /// `describe` trapped, timed out, or returned an invalid registration.
    #[error("plugin {file}: describe() failed: {reason}")]
    Describe {
        /// The file.
        file: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// How a guest stopped abnormally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrapKind {
    /// It ran past its reconcile timeout and was interrupted.
    Timeout,
    /// It asked for more memory than its cap.
    Memory,
    /// It panicked (or hit `unreachable`).
    Panic,
    /// Any other trap (out-of-bounds access, stack overflow, …) or a failed instantiation.
    Trap,
}

impl fmt::Display for TrapKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrapKind::Timeout => "timeout",
            TrapKind::Memory => "memory",
            TrapKind::Panic => "panic",
            TrapKind::Trap => "trap",
        })
    }
}

/// A reconcile (or map) that did not return normally.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DispatchError {
    /// The guest returned a reconcile error.
    #[error("plugin {plugin}: reconcile of {key} failed{}: {message}", if *terminal { " (terminal)" } else { "" })]
    Failed {
        /// The plugin.
        plugin: String,
        /// The request.
        key: ObjectKey,
        /// The guest's message, cut to the plugin's log line bound (`log_bytes`).
        message: String,
        /// Whether it must not be retried (TerminalError).
        terminal: bool,
    },
    /// The guest trapped, ran out of time or memory; its instance was discarded.
    #[error("plugin {plugin}: {kind}{}: {message}", handling(key))]
    Trapped {
        /// The plugin.
        plugin: String,
        /// The request (the mapped object's key for `map`).
        key: ObjectKey,
        /// How it stopped.
        kind: TrapKind,
        /// The trap and what the guest printed to stderr just before.
        message: String,
    },
    /// The call was refused before it reached the guest: the plugin may not use that power.
    #[error("plugin {plugin}{}: {reason}", handling(key))]
    Refused {
        /// The plugin.
        plugin: String,
        /// The request.
        key: ObjectKey,
        /// What it may not do, and who refused it.
        reason: String,
    },
}

/// ` while handling <key>`, or nothing for calls about no object (`describe`).
fn handling(key: &ObjectKey) -> String {
    match key.name.is_empty() {
        true => String::new(),
        false => format!(" while handling {key}"),
    }
}

impl DispatchError {
    /// The trap kind, if the guest trapped.
    pub fn trap_kind(&self) -> Option<TrapKind> {
        match self {
            DispatchError::Trapped { kind, .. } => Some(*kind),
            DispatchError::Failed { .. } | DispatchError::Refused { .. } => None,
        }
    }
}
