//! Why a build failed, and running one step of a toolchain: its output goes to stderr (stdout is
//! for the components' paths), and a step that fails names the language, the step and what to do.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Language;

/// Why what a toolchain wrote is not a component the host could load.
#[derive(Debug, thiserror::Error)]
pub enum NotLoadable {
    /// It is a core module, or not WebAssembly at all.
    #[error("not a WebAssembly component")]
    NotAComponent,
    /// It does not validate.
    #[error("does not validate: {0}")]
    Invalid(#[source] wasmparser::BinaryReaderError),
    /// Its imports cannot be read.
    #[error("its imports cannot be read: {0}")]
    Unreadable(#[source] crate::distribution::oci::OciError),
    /// It imports an interface the host never grants.
    #[error("imports {0}, which the host does not grant")]
    Ungranted(String),
}

/// A build could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A plugin directory that does not exist.
    #[error("no plugin directory at {0}")]
    NoDir(PathBuf),
    /// A directory holding no plugin (of the language asked for).
    #[error("{dir} holds no plugin{}: a Rust crate (Cargo.toml), a Go main package (go.mod), src/index.ts or src/index.js, a Python package named after the plugin, or a folder made by wasmop new", only.map(|l| format!(" in {}", l.folder())).unwrap_or_default())]
    NoPlugin {
        /// The directory.
        dir: PathBuf,
        /// The language asked for.
        only: Option<Language>,
    },
    /// A folder made by `wasmop new` holding plugins of several languages.
    #[error("{0} holds plugins of several languages; say which with --language")]
    Several(PathBuf),
    /// A directory whose name cannot name a component file.
    #[error(
        "cannot name a component after {0} (a plugin's directory is named after it: letters, digits, '.', '_', '-')"
    )]
    Unnamed(PathBuf),
    /// The checkout has no plugins of the language asked for.
    #[error("nothing to build")]
    Nothing,
    /// `-o` with more than one component to write.
    #[error("-o names one component: give exactly one plugin directory that builds one")]
    OutputNeedsOne,
    /// `-o` naming a directory.
    #[error("-o {0} is a directory; name the component file")]
    OutputIsDir(PathBuf),
    /// A tool the language's build needs is not installed.
    #[error("[{}] {missing}; {hint}", language.folder())]
    Toolchain {
        /// The language.
        language: Language,
        /// What is missing, or too old.
        missing: String,
        /// How to install it.
        hint: String,
    },
    /// A step of the build failed; its own output says why.
    #[error("[{}] {step} failed for {} (see above)", language.folder(), dir.display())]
    Step {
        /// The language.
        language: Language,
        /// What was run.
        step: String,
        /// The plugin (or SDK) directory.
        dir: PathBuf,
    },
    /// What a toolchain wrote is not a valid component, or imports what the host never grants.
    #[error("[{}] {}: {reason}", language.folder(), path.display())]
    Invalid {
        /// The language.
        language: Language,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: NotLoadable,
    },
    /// A core module could not be pre-initialised.
    #[error("[{}] pre-initialising {} failed: {reason}", language.folder(), dir.display())]
    Snapshot {
        /// The language.
        language: Language,
        /// The plugin directory.
        dir: PathBuf,
        /// Why.
        reason: super::snapshot::SnapshotError,
    },
    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The error of an I/O failure on `path`.
pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError {
    let path = path.to_owned();
    move |source| BuildError::Io { path, source }
}

/// Says `message` on stderr with the language's prefix.
pub(super) fn say(language: Language, message: impl std::fmt::Display) {
    eprintln!("[{}] {message}", language.folder());
}

/// Runs `command` (one `step` of `language`'s build of `dir`) with its output on stderr; an
/// error when it cannot start or fails.
pub(super) fn run(
    language: Language,
    step: &str,
    dir: &Path,
    command: &mut Command,
) -> Result<(), BuildError> {
    let failed = || BuildError::Step {
        language,
        step: step.to_owned(),
        dir: dir.to_owned(),
    };
    let status = command
        .stdin(Stdio::null())
        .stdout(to_stderr())
        .status()
        .map_err(|_| failed())?;
    match status.success() {
        true => Ok(()),
        false => Err(failed()),
    }
}

/// Runs `command` and returns what it printed, trimmed; `None` when it cannot start or fails.
pub(super) fn output(command: &mut Command) -> Option<String> {
    let out = command.stdin(Stdio::null()).stderr(Stdio::null()).output();
    let out = out.ok().filter(|out| out.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The first `name` on `PATH`.
pub(super) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// `PATH` with `dir` first.
pub(super) fn path_with(dir: &Path) -> std::ffi::OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(dir.to_owned()).chain(std::env::split_paths(&rest));
    std::env::join_paths(dirs).unwrap_or(rest)
}

/// A folder of this process's own under its parent, for one build: builds running beside each
/// other never share one, and it is removed when dropped, once the component is installed or the
/// build has failed.
pub(super) struct Stage(PathBuf);

impl Stage {
    /// A fresh, empty folder under `parent` for this process's build of `name`.
    pub(super) fn new(parent: &Path, name: &str) -> Result<Self, BuildError> {
        let dir = parent.join(format!("{name}.{}", std::process::id()));
        fresh_dir(&dir)?;
        Ok(Stage(dir))
    }
}

impl std::ops::Deref for Stage {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Stage {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Stage {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty `dir`.
fn fresh_dir(dir: &Path) -> Result<(), BuildError> {
    let io = |source| BuildError::Io {
        path: dir.to_owned(),
        source,
    };
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io)?;
    }
    std::fs::create_dir_all(dir).map_err(io)
}

/// The step's stdout, sent to this process's stderr.
fn to_stderr() -> Stdio {
    use std::os::fd::AsFd;
    match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => Stdio::from(fd),
        Err(_) => Stdio::null(),
    }
}
