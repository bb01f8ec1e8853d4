//! Compiling components for the runtime's engine: on a throwaway engine, in this process or in a
//! child process of this binary (`wasmop compile-worker`), and handing the artifact to the
//! compile cache, from which the long-lived engine maps it.
//!
//! A compile's memory grows with the guest (a Python reconciler's needs ~400 MiB) and is the
//! largest thing the host ever allocates. In a child process it cannot take the host with it: the
//! child volunteers as the out-of-memory killer's first choice (`oom_score_adj` 1000) and may be
//! held under a memory limit of its own (`RLIMIT_DATA`), so a guest too large for the pod's
//! memory costs one failed load with a clear error, not a crash-looping host. The child only
//! compiles: the component arrives on its stdin, the artifact leaves on its stdout, which the host
//! streams into the compile cache's file (never holding it whole), and the host checks the
//! artifact's settings again when it maps it.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;

use wasmtime::Engine;

use crate::runtime::Runtime;
use crate::runtime::artifacts::{Adopted, Artifacts, Mapped};
use crate::runtime::compiles::{Asker, CompileQueue};
use crate::runtime::engine::{Backend, compilation_config};

/// The subcommand of this binary that compiles one component from stdin to stdout.
pub const WORKER_COMMAND: &str = "compile-worker";

/// The most of a failed compiler's stderr an error quotes.
const STDERR_TAIL: usize = 2048;

/// What the Rust runtime prints before aborting when an allocation fails.
const ALLOCATION_FAILED: &str = "memory allocation of";

/// What the worker prints when the compiler's own fallible allocation fails (it exits, not
/// aborts): the binary's one line for an error, `error: ` and the error's message.
const COMPILER_OUT_OF_MEMORY: &str = "error: out of memory";

/// SIGKILL on Linux: the out-of-memory killer's signal.
const SIGKILL: i32 = 9;

/// Where components are compiled.
#[derive(Debug, Clone, Default)]
pub enum CompileIn {
    /// On a throwaway engine in this process: a compile that exhausts memory takes the process.
    #[default]
    Process,
    /// In a child process of `program`, which must answer [`WORKER_COMMAND`].
    Child(CompileWorker),
}

/// The child process that compiles a component.
#[derive(Debug, Clone)]
pub struct CompileWorker {
    /// The binary to run as `program compile-worker`; this `wasmop`.
    pub program: PathBuf,
    /// The most memory the child may allocate, in bytes; unlimited (up to the pod's limit)
    /// when absent.
    pub memory_limit: Option<u64>,
}

/// A compiler process that did not return an artifact.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The process could not be started or talked to.
    #[error("starting the compiler process {program}: {source}")]
    Spawn {
        /// The binary.
        program: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The process ran out of its own memory limit.
    #[error(
        "compiling needs more than the compile memory limit of {limit} bytes (--compile-memory-limit); raise it, and the host's memory limit with it"
    )]
    OutOfMemory {
        /// The limit.
        limit: u64,
    },
    /// The process was killed, most likely by the out-of-memory killer.
    #[error(
        "the compiler process was killed by signal {signal}, most likely by the out-of-memory killer at the host's memory limit (the pod's, in Kubernetes); raise that limit to load this plugin"
    )]
    Killed {
        /// The signal.
        signal: i32,
    },
    /// The process reported an error of the compilation itself.
    #[error("{0}")]
    Failed(String),
    /// The artifact could not be written where it was going.
    #[error("writing the compiled component: {0}")]
    Write(std::io::Error),
}

impl WorkerError {
    /// Whether the compile ran out of memory, not into a fault of the component.
    pub fn is_resource(&self) -> bool {
        matches!(
            self,
            WorkerError::OutOfMemory { .. } | WorkerError::Killed { .. }
        )
    }
}

/// Compiles components for the runtime's engine without leaving the compiler's memory behind.
#[derive(Clone)]
pub(crate) struct Compiler {
    pub(crate) engine: Engine,
    pub(crate) artifacts: Arc<Artifacts>,
    pub(crate) place: CompileIn,
    pub(crate) backend: Backend,
    pub(crate) queue: Arc<CompileQueue>,
}

impl Compiler {
    /// Maps the component of `bytes` from the compile cache — the artifact adopted on the trust
    /// `adopted`, else the one compiled here — compiling it first where configured, in `asker`'s
    /// turn of the compile queue, when the cache has neither. Blocking: call it off the async
    /// runtime.
    pub(crate) fn compile(
        &self,
        bytes: &[u8],
        adopted: Option<&Adopted>,
        asker: Asker,
    ) -> wasmtime::Result<Arc<Mapped>> {
        self.artifacts
            .load(&self.engine, bytes, adopted, |bytes, out| {
                let _turn = self.queue.turn(asker);
                self.artifact(bytes, out)
            })
    }

    /// Compiles `bytes` where this compiler compiles, writing the artifact to `out`.
    fn artifact(&self, bytes: &[u8], out: &mut dyn Write) -> wasmtime::Result<()> {
        match &self.place {
            CompileIn::Process => Ok(out.write_all(&precompile(bytes, self.backend)?)?),
            CompileIn::Child(worker) => Ok(worker.compile(bytes, self.backend, out)?),
        }
    }
}

impl Runtime {
    /// What a precompiled component must have been compiled for to be used here: this build of
    /// wasmop (and so of wasmtime), the engine's compilation settings and the target.
    pub fn engine_fingerprint(&self) -> String {
        let settings = self.compiler.artifacts.settings();
        let (arch, os) = (std::env::consts::ARCH, std::env::consts::OS);
        format!(
            "wasmop-{}/{settings}/{arch}-{os}",
            env!("CARGO_PKG_VERSION")
        )
    }

    /// Compiles `bytes` ahead of time for engines of [`Runtime::engine_fingerprint`], where
    /// this runtime compiles. Blocking: call it off the async runtime.
    pub fn precompile(&self, bytes: &[u8]) -> wasmtime::Result<Vec<u8>> {
        let mut artifact = Vec::new();
        self.compiler.artifact(bytes, &mut artifact)?;
        Ok(artifact)
    }

    /// Takes `artifact` (written to disk), compiled ahead of time and signed by a key the
    /// operator trusts, under `adopted`, all that was trusted in taking it: a load whose
    /// [`PluginOptions::precompiled`](crate::runtime::PluginOptions) names the same trust
    /// compiles nothing, and no other load maps it.
    pub async fn adopt(
        &self,
        adopted: &Adopted,
        artifact: tempfile::NamedTempFile,
    ) -> std::io::Result<()> {
        let artifacts = self.compiler.artifacts.clone();
        let adopted = adopted.clone();
        let adopting = tokio::task::spawn_blocking(move || artifacts.adopt(&adopted, artifact));
        match adopting.await {
            Ok(adopted) => adopted,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            // Only a runtime shutting down cancels the task, and nothing loads after that.
            Err(error) => Err(std::io::Error::other(error)),
        }
    }
}

/// The artifact of `bytes`, compiled by `backend` on a throwaway engine of the runtime's settings.
fn precompile(bytes: &[u8], backend: Backend) -> wasmtime::Result<Vec<u8>> {
    Engine::new(&compilation_config(backend))?.precompile_component(bytes)
}

impl CompileWorker {
    /// Compiles `bytes` with `backend` in a child process, streaming the artifact it writes into
    /// `out`.
    fn compile(
        &self,
        bytes: &[u8],
        backend: Backend,
        out: &mut dyn Write,
    ) -> Result<(), WorkerError> {
        let mut command = Command::new(&self.program);
        command
            .arg(WORKER_COMMAND)
            .arg("--compiler")
            .arg(backend.name())
            // A worker out of memory must die at once: a backtrace would allocate in the
            // allocation-failure handler and hang the worker, and its compile slot, forever.
            .env("RUST_BACKTRACE", "0")
            .env_remove("RUST_LIB_BACKTRACE")
            // Nor may the allocator want a thread under the limit: jemalloc starts a purging
            // thread per arena as threads first allocate, and a refused one exits the worker
            // as a failure, not as running out of memory. A worker lives for one compile.
            .env("_RJEM_MALLOC_CONF", "background_thread:false");
        if let Some(limit) = self.memory_limit {
            command.arg("--memory-limit").arg(limit.to_string());
        }
        let spawn_error = |source| WorkerError::Spawn {
            program: self.program.clone(),
            source,
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let (copied, said) = std::thread::scope(|scope| {
            // A child that dies early closes the pipe; its exit status says why.
            scope.spawn(move || stdin.write_all(bytes));
            let said = scope.spawn(move || {
                let mut said = Vec::new();
                let _ = stderr.read_to_end(&mut said);
                said
            });
            let copied = std::io::copy(&mut stdout, out);
            if copied.is_err() {
                // Nothing reads the rest of the artifact: the child would wait on a full pipe.
                let _ = child.kill();
            }
            drop(stdout);
            (copied, said.join().unwrap_or_default())
        });
        let status = child.wait().map_err(spawn_error)?;
        self.outcome(status, &said)?;
        copied.map(drop).map_err(WorkerError::Write)
    }

    /// Whether the child compiled, or why it did not.
    fn outcome(&self, status: ExitStatus, stderr: &[u8]) -> Result<(), WorkerError> {
        if status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(stderr);
        let stderr = stderr.trim();
        match (status.signal(), self.memory_limit) {
            (Some(_), Some(limit)) if stderr.contains(ALLOCATION_FAILED) => {
                Err(WorkerError::OutOfMemory { limit })
            }
            (None, Some(limit))
                if stderr
                    .lines()
                    .any(|l| l.starts_with(COMPILER_OUT_OF_MEMORY)) =>
            {
                Err(WorkerError::OutOfMemory { limit })
            }
            (Some(signal), _) if signal == SIGKILL => Err(WorkerError::Killed { signal }),
            (signal, _) => Err(WorkerError::Failed(format!(
                "the compiler process failed ({}): {}",
                signal.map_or_else(|| status.to_string(), |s| format!("signal {s}")),
                tail(stderr)
            ))),
        }
    }
}

/// The last [`STDERR_TAIL`] bytes of `text`, at a character boundary.
fn tail(text: &str) -> &str {
    let mut start = text.len().saturating_sub(STDERR_TAIL);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The body of `wasmop compile-worker`: volunteers for the out-of-memory killer, takes on
/// `memory_limit`, and compiles the component on stdin with `backend` into the artifact on stdout.
pub fn run_worker(memory_limit: Option<u64>, backend: Backend) -> std::io::Result<()> {
    if let Err(error) = std::fs::write("/proc/self/oom_score_adj", "1000") {
        tracing::warn!("the compiler cannot volunteer for the out-of-memory killer: {error}");
    }
    if let Some(limit) = memory_limit {
        // The compiler's threads are made before the limit: a thread the limit refuses fails the
        // compile as a panic, where running out of memory must fail it as an allocation.
        rayon_core::ThreadPoolBuilder::new()
            .build_global()
            .map_err(std::io::Error::other)?;
        let limit = rustix::process::Rlimit {
            current: Some(limit),
            maximum: Some(limit),
        };
        rustix::process::setrlimit(rustix::process::Resource::Data, limit)?;
    }
    let mut bytes = Vec::new();
    std::io::stdin().lock().read_to_end(&mut bytes)?;
    let artifact =
        precompile(&bytes, backend).map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&artifact)?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(memory_limit: Option<u64>) -> CompileWorker {
        CompileWorker {
            program: "wasmop".into(),
            memory_limit,
        }
    }

    #[test]
    fn a_compiler_killed_by_sigkill_is_blamed_on_memory_not_the_component() {
        let killed = worker(None).outcome(ExitStatus::from_raw(SIGKILL), b"");
        let error = killed.expect_err("a killed compiler's output was taken");
        assert!(
            matches!(error, WorkerError::Killed { signal: 9 }),
            "{error}"
        );
        assert!(error.is_resource());
        assert!(error.to_string().contains("raise that limit"), "{error}");
    }

    #[test]
    fn an_abort_on_a_failed_allocation_is_the_compile_memory_limit_only_under_one() {
        let aborted = b"memory allocation of 4096 bytes failed";
        let limited = worker(Some(1 << 20))
            .outcome(ExitStatus::from_raw(6), aborted)
            .unwrap_err();
        assert!(
            matches!(limited, WorkerError::OutOfMemory { limit: 1048576 }),
            "{limited}"
        );
        let unlimited = worker(None)
            .outcome(ExitStatus::from_raw(6), aborted)
            .unwrap_err();
        assert!(!unlimited.is_resource(), "{unlimited}");
        assert!(unlimited.to_string().contains("signal 6"), "{unlimited}");
    }

    #[test]
    fn a_failed_compile_quotes_the_end_of_what_the_compiler_said() {
        let said = format!("{}the real reason", "é".repeat(STDERR_TAIL));
        let failed = worker(None).outcome(ExitStatus::from_raw(1 << 8), said.as_bytes());
        let message = failed.unwrap_err().to_string();
        assert!(message.ends_with("the real reason"), "{message}");
        assert!(message.len() < STDERR_TAIL + 100, "{message}");
    }
}
