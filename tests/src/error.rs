//! Errors of the control-plane harness, each naming the file, process or step that failed.

use std::path::PathBuf;

/// What went wrong while building, starting or talking to a control plane.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The build script for kube-apiserver, kubectl and etcd failed.
    #[error("building the control-plane binaries with {script} failed: {reason}")]
    Build {
        /// The script that was run.
        script: PathBuf,
        /// Its exit status or the reason it could not run.
        reason: String,
    },
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What the harness was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Certificate or key generation failed.
    #[error("generating certificates: {0}")]
    Certs(#[from] rcgen::Error),
    /// A server process exited while the control plane was starting.
    #[error("{name} exited during start-up; last lines of {log}:\n{log_tail}")]
    Exited {
        /// `etcd` or `kube-apiserver`.
        name: &'static str,
        /// Where its full log was.
        log: PathBuf,
        /// The last lines of its log.
        log_tail: String,
    },
    /// kube-apiserver did not report ready in time.
    #[error(
        "kube-apiserver was not ready after {seconds} s (last answer: {last}); last lines of its log:\n{log_tail}"
    )]
    NotReady {
        /// How long the harness waited.
        seconds: u64,
        /// The last response or error from `/readyz`.
        last: String,
        /// The last lines of the apiserver's log.
        log_tail: String,
    },
    /// The kubeconfig could not be read or turned into a client configuration.
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// A request to the apiserver failed.
    #[error("apiserver request failed: {0}")]
    Kube(#[from] kube::Error),
    /// A CRD file could not be parsed or installed.
    #[error("CRD file {path}: {reason}")]
    Crd {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// A `kubectl` command failed.
    #[error("kubectl {args}: {stderr}")]
    Kubectl {
        /// Its arguments.
        args: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A command of this machine (`ip`, `ctr`, `umount`) failed.
    #[error("{command}: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// The node did not come up: its runtime or kubelet failed, or it never turned Ready.
    #[error("the node did not start: {reason}")]
    Node {
        /// What failed, with the last lines of the log that tells.
        reason: String,
    },
    /// A line of the audit log could not be parsed.
    #[error("audit log {path} at offset {offset}: {reason}")]
    Audit {
        /// The log file.
        path: PathBuf,
        /// Where the line starts.
        offset: u64,
        /// Why it could not be parsed.
        reason: String,
    },
}

impl Error {
    /// Wraps an I/O error with what the harness was doing.
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Error::Io { context, source }
    }

    /// Whether a server failed because its port was taken between choosing and binding it.
    pub(crate) fn is_port_clash(&self) -> bool {
        matches!(self, Error::Exited { log_tail, .. } if log_tail.contains("address already in use"))
    }
}
