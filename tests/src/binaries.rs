//! Locating (and on first use building) the pinned kube-apiserver, kubectl and etcd, and for a
//! node kubelet, kube-scheduler, kube-controller-manager, the sandbox's pause and helm, and for
//! OCI tests CNCF Distribution's registry with the ORAS CLI and cosign.
//!
//! The binaries come from `tests/k8s/build.sh`, which builds them from the Go module proxy at
//! the release pinned in `tests/k8s/versions.env` and caches them outside the clone.
//! `WASMOP_CONTROL_PLANE_BIN` overrides the directory (it must hold all that is asked for).

use std::path::{Path, PathBuf};

use tokio::sync::OnceCell;

use crate::Error;

const BUILD_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/k8s/build.sh");
const TOOLS: [&str; 3] = ["kube-apiserver", "kubectl", "etcd"];
const NODE_TOOLS: [&str; 6] = [
    "kubelet",
    "kube-scheduler",
    "kube-controller-manager",
    "pause",
    "helm",
    "registry",
];

/// The directory holding the control-plane binaries.
#[derive(Debug, Clone)]
pub struct Binaries {
    dir: PathBuf,
}

static LOCATED: OnceCell<Binaries> = OnceCell::const_new();
static NODE_LOCATED: OnceCell<Binaries> = OnceCell::const_new();
static CONTROLLER_MANAGER_LOCATED: OnceCell<Binaries> = OnceCell::const_new();
static REGISTRY_LOCATED: OnceCell<Binaries> = OnceCell::const_new();
static TOOLS_LOCATED: OnceCell<Binaries> = OnceCell::const_new();
/// What `tests/k8s/build.sh --registry` adds.
const REGISTRY_TOOLS: [&str; 3] = ["registry", "oras", "cosign"];

impl Binaries {
    /// Finds the binaries, building them first if this machine has none yet (minutes, with
    /// progress on stderr). Later calls in the same process return at once.
    pub async fn locate() -> Result<Self, Error> {
        LOCATED
            .get_or_try_init(|| Self::find_or_build(&[], &TOOLS))
            .await
            .cloned()
    }

    /// [`Binaries::locate`] with a node's binaries too (kubelet, kube-scheduler,
    /// kube-controller-manager, pause, helm, its image registry): `tests/k8s/build.sh --node`.
    pub async fn locate_node() -> Result<Self, Error> {
        let all: Vec<&str> = TOOLS.iter().chain(&NODE_TOOLS).copied().collect();
        NODE_LOCATED
            .get_or_try_init(|| Self::find_or_build(&["--node"], &all))
            .await
            .cloned()
    }

    /// [`Binaries::locate`] with kube-controller-manager too, for tests of its garbage collector
    /// (no node): `tests/k8s/build.sh --controller-manager`.
    pub async fn locate_controller_manager() -> Result<Self, Error> {
        let all: Vec<&str> = TOOLS
            .iter()
            .copied()
            .chain(["kube-controller-manager"])
            .collect();
        CONTROLLER_MANAGER_LOCATED
            .get_or_try_init(|| Self::find_or_build(&["--controller-manager"], &all))
            .await
            .cloned()
    }

    /// [`Binaries::locate`] with CNCF Distribution's `registry`, `oras` and `cosign` too, for
    /// tests that push, sign and pull OCI artifacts (see [`Registry`](crate::Registry)):
    /// `tests/k8s/build.sh --registry`.
    pub async fn locate_registry() -> Result<Self, Error> {
        let all: Vec<&str> = TOOLS.iter().copied().chain(REGISTRY_TOOLS).collect();
        REGISTRY_LOCATED
            .get_or_try_init(|| Self::find_or_build(&["--registry"], &all))
            .await
            .cloned()
    }

    /// [`Binaries::locate`] with `helm` and Prometheus' `promtool` too, for tests of the chart,
    /// its alerts and its dashboard: `tests/k8s/build.sh --tools`.
    pub async fn locate_tools() -> Result<Self, Error> {
        let all: Vec<&str> = TOOLS.iter().copied().chain(["helm", "promtool"]).collect();
        TOOLS_LOCATED
            .get_or_try_init(|| Self::find_or_build(&["--tools"], &all))
            .await
            .cloned()
    }

    async fn find_or_build(flags: &[&str], tools: &[&str]) -> Result<Self, Error> {
        if let Some(dir) = std::env::var_os("WASMOP_CONTROL_PLANE_BIN") {
            return Self::checked(PathBuf::from(dir), "WASMOP_CONTROL_PLANE_BIN", tools);
        }
        let script = PathBuf::from(BUILD_SCRIPT);
        let build_error = |reason: String| Error::Build {
            script: script.clone(),
            reason,
        };
        let output = tokio::process::Command::new("bash")
            .arg(&script)
            .args(flags)
            .stderr(std::process::Stdio::inherit())
            .output()
            .await
            .map_err(|e| build_error(e.to_string()))?;
        if !output.status.success() {
            return Err(build_error(format!(
                "{} (its output is above)",
                output.status
            )));
        }
        let dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        Self::checked(PathBuf::from(dir), BUILD_SCRIPT, tools)
    }

    fn checked(dir: PathBuf, source: &str, tools: &[&str]) -> Result<Self, Error> {
        match tools.iter().find(|tool| !dir.join(tool).is_file()) {
            None => Ok(Binaries { dir }),
            Some(tool) => Err(Error::Build {
                script: PathBuf::from(source),
                reason: format!("{} has no {tool}", dir.display()),
            }),
        }
    }

    /// The directory itself (what `PATH` needs for `kubectl`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The `kube-apiserver` binary.
    pub fn kube_apiserver(&self) -> PathBuf {
        self.dir.join("kube-apiserver")
    }

    /// The `kubectl` binary, at the apiserver's version.
    pub fn kubectl(&self) -> PathBuf {
        self.dir.join("kubectl")
    }

    /// The `etcd` binary.
    pub fn etcd(&self) -> PathBuf {
        self.dir.join("etcd")
    }

    /// The `kubelet` binary (from [`Binaries::locate_node`]).
    pub fn kubelet(&self) -> PathBuf {
        self.dir.join("kubelet")
    }

    /// The `kube-scheduler` binary (from [`Binaries::locate_node`]).
    pub fn kube_scheduler(&self) -> PathBuf {
        self.dir.join("kube-scheduler")
    }

    /// The `kube-controller-manager` binary (from [`Binaries::locate_node`]).
    pub fn kube_controller_manager(&self) -> PathBuf {
        self.dir.join("kube-controller-manager")
    }

    /// The pod sandbox's `pause`, static (from [`Binaries::locate_node`]).
    pub fn pause(&self) -> PathBuf {
        self.dir.join("pause")
    }

    /// `helm`, to render the chart or install it on the node (from [`Binaries::locate_tools`]
    /// or [`Binaries::locate_node`]).
    pub fn helm(&self) -> PathBuf {
        self.dir.join("helm")
    }

    /// Prometheus' `promtool` (from [`Binaries::locate_tools`]).
    pub fn promtool(&self) -> PathBuf {
        self.dir.join("promtool")
    }

    /// CNCF Distribution's `registry` (from [`Binaries::locate_registry`] or
    /// [`Binaries::locate_node`]).
    pub fn registry(&self) -> PathBuf {
        self.dir.join("registry")
    }

    /// The ORAS CLI (from [`Binaries::locate_registry`]).
    pub fn oras(&self) -> PathBuf {
        self.dir.join("oras")
    }

    /// Sigstore's `cosign` (from [`Binaries::locate_registry`]).
    pub fn cosign(&self) -> PathBuf {
        self.dir.join("cosign")
    }
}

/// The Kubernetes release the harness runs, as pinned in `tests/k8s/versions.env`.
pub fn kubernetes_version() -> &'static str {
    pinned_version(include_str!("../k8s/versions.env"))
        .expect("tests/k8s/versions.env has a KUBERNETES_VERSION= line")
}

fn pinned_version(env_file: &str) -> Option<&str> {
    env_file
        .lines()
        .find_map(|line| line.strip_prefix("KUBERNETES_VERSION="))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_version_is_read_from_its_line() {
        assert_eq!(
            pinned_version("# note\nKUBERNETES_VERSION=v1.2.3\nX=1\n"),
            Some("v1.2.3")
        );
        assert_eq!(pinned_version("# nothing pinned\n"), None);
        assert!(kubernetes_version().starts_with("v1."));
    }
}
