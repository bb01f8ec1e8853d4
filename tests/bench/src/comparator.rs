//! The operators compared: each implements the `webapp` behaviour (a WebApp becomes a Deployment,
//! a Service, a marker ConfigMap and a status, with a finalizer) and is started as its own
//! process, watching one namespace, with no leader election and no HTTP ports.

use std::path::{Path, PathBuf};

use tokio::process::Command;

/// How an operator is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runner {
    /// The controller-runtime operator in Go (`tests/bench/controller-runtime`).
    ControllerRuntime,
    /// The kube-runtime operator in Rust (`tests/bench/kube-rs`).
    KubeRs,
    /// The kopf operator in Python (`tests/bench/kopf`), in its virtualenv.
    Kopf,
    /// The wasmop host with these components loaded, the `webapp` plugin first, and these
    /// further `wasmop run` options.
    Wasmop(&'static [&'static str], &'static [&'static str]),
}

/// One operator of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparator {
    /// Its name in the tables.
    pub name: &'static str,
    runner: Runner,
}

/// Every comparator, the baseline (controller-runtime) first.
pub const ALL: [Comparator; 9] = [
    Comparator {
        name: "controller-runtime",
        runner: Runner::ControllerRuntime,
    },
    Comparator {
        name: "kube-rs",
        runner: Runner::KubeRs,
    },
    Comparator {
        name: "wasmop + Rust",
        runner: Runner::Wasmop(&["webapp.wasm"], &[]),
    },
    // As above, compiling in the host process rather than in a worker: the figure before
    // `deploy/`'s way was measured.
    Comparator {
        name: "wasmop + Rust, compiling in process",
        runner: Runner::Wasmop(&["webapp.wasm"], &["--compile-in-process"]),
    },
    // As above, with guest code compiled by Cranelift rather than Winch (`--compiler cranelift`).
    Comparator {
        name: "wasmop + Rust, Cranelift",
        runner: Runner::Wasmop(&["webapp.wasm"], &["--compiler", "cranelift"]),
    },
    Comparator {
        name: "wasmop + Python",
        runner: Runner::Wasmop(&["webapp-python.wasm"], &[]),
    },
    // As the sandbox runs it by default: a fresh instance per call. `wasmop build` pre-initialised
    // it (Go's runtime, the client-go scheme, its setup), but a fresh instance still pays the
    // first use of what a reconcile touches.
    Comparator {
        name: "wasmop + Go (controller-runtime API)",
        runner: Runner::Wasmop(&["webapp-controller-runtime-go.wasm"], &[]),
    },
    // Its users keep instances warm: four, one per worker of the plugin's controller.
    Comparator {
        name: "wasmop + Go (controller-runtime API), 4 warm instances",
        runner: Runner::Wasmop(
            &["webapp-controller-runtime-go.wasm"],
            &["--warm-instances", "4"],
        ),
    },
    Comparator {
        name: "kopf",
        runner: Runner::Kopf,
    },
];

/// wasmop with ten plugins loaded (the Rust `webapp`, the example plugins and test guests, all
/// built by `make guests`), for the idle memory of a host that runs many; not one of the
/// compared operators.
pub const TEN_PLUGINS: Comparator = Comparator {
    name: "wasmop + 10 plugins",
    runner: Runner::Wasmop(
        &[
            "webapp.wasm",
            "configmap-sync.wasm",
            "guest-wit010.wasm",
            "guest-good.wasm",
            "guest-bench.wasm",
            "guest-slow.wasm",
            "guest-undeclared-write.wasm",
            "guest-hostile.wasm",
            "guest-hog.wasm",
            "guest-panic.wasm",
        ],
        &[],
    ),
};

impl Comparator {
    /// The comparator whose name, lowercased with every run of other characters than letters
    /// and digits made one `-`, is `key` (`controller-runtime`, `kube-rs`, `wasmop-rust`,
    /// `wasmop-rust-compiling-in-process`, `wasmop-rust-cranelift`, `wasmop-python`,
    /// `wasmop-go-controller-runtime-api`, `wasmop-go-controller-runtime-api-4-warm-instances`,
    /// `kopf`).
    pub fn by_key(key: &str) -> Option<Comparator> {
        ALL.into_iter().find(|c| c.key() == key)
    }

    /// Its short name for the command line and file names.
    pub fn key(&self) -> String {
        let lower = self.name.to_lowercase();
        let words = lower.split(|c: char| !c.is_ascii_alphanumeric());
        words
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join("-")
    }

    /// The command that runs it against the cluster of `kubeconfig`, watching `namespace`; fails
    /// naming the build step when its program is not built.
    pub fn command(
        &self,
        repo: &Path,
        kubeconfig: &Path,
        namespace: &str,
    ) -> anyhow::Result<Command> {
        let mut command = match self.runner {
            Runner::ControllerRuntime => {
                let program = built(
                    repo,
                    "target/bench/webapp-controller-runtime",
                    "tests/bench/controller-runtime/build",
                )?;
                Command::new(program)
            }
            Runner::KubeRs => {
                let program = built(
                    repo,
                    "target/release/webapp-kube-rs",
                    "cargo build --release -p webapp-kube-rs",
                )?;
                Command::new(program)
            }
            Runner::Kopf => {
                let python = built(
                    repo,
                    "target/bench/kopf-venv/bin/python",
                    "tests/bench/kopf/install",
                )?;
                let mut command = Command::new(python);
                command.arg(repo.join("tests/bench/kopf/webapp.py"));
                command
            }
            Runner::Wasmop(components, options) => {
                let plugins = components
                    .iter()
                    .map(|c| built(repo, &format!("target/components/{c}"), "make guests"))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                let mut command = wasmop(repo, &[namespace], &plugins)?;
                command.args(options);
                command
            }
        };
        command
            .env("KUBECONFIG", kubeconfig)
            .env("WEBAPP_NAMESPACE", namespace);
        Ok(command)
    }
}

/// The release `wasmop` loading `plugins`, watching `namespaces` (all when empty), with no HTTP
/// ports.
pub fn wasmop(repo: &Path, namespaces: &[&str], plugins: &[PathBuf]) -> anyhow::Result<Command> {
    let program = built(
        repo,
        "target/release/wasmop",
        "cargo build --release --bin wasmop",
    )?;
    let mut command = Command::new(program);
    command.arg("run");
    if !namespaces.is_empty() {
        command.args(["--namespaces", &namespaces.join(",")]);
    }
    for plugin in plugins {
        command.arg("--plugin").arg(plugin);
    }
    command.args([
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
    ]);
    Ok(command)
}

/// The files `command` runs from — its program and the plugins it loads — which a run pays to
/// read.
pub fn files_of(command: &Command) -> Vec<PathBuf> {
    let command = command.as_std();
    let args: Vec<&std::ffi::OsStr> = command.get_args().collect();
    let plugins = args.windows(2).filter(|pair| pair[0] == "--plugin");
    std::iter::once(PathBuf::from(command.get_program()))
        .chain(plugins.map(|pair| PathBuf::from(pair[1])))
        .collect()
}

fn built(repo: &Path, file: &str, build: &str) -> anyhow::Result<PathBuf> {
    let path = repo.join(file);
    anyhow::ensure!(
        path.exists(),
        "{} is missing: build it with `{build}` (or `make bench`)",
        path.display()
    );
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_every_comparator_once() {
        let keys: Vec<String> = ALL.iter().map(Comparator::key).collect();
        assert_eq!(
            keys,
            [
                "controller-runtime",
                "kube-rs",
                "wasmop-rust",
                "wasmop-rust-compiling-in-process",
                "wasmop-rust-cranelift",
                "wasmop-python",
                "wasmop-go-controller-runtime-api",
                "wasmop-go-controller-runtime-api-4-warm-instances",
                "kopf"
            ]
        );
        for comparator in ALL {
            assert_eq!(Comparator::by_key(&comparator.key()), Some(comparator));
        }
        assert_eq!(Comparator::by_key("operator-sdk"), None);
    }

    #[test]
    fn a_missing_program_names_its_build_step() {
        let dir = std::env::temp_dir().join("wasmop-bench-no-such-repo");
        let error = ALL[1]
            .command(&dir, Path::new("kubeconfig"), "ns")
            .expect_err("nothing is built there");
        assert!(
            error
                .to_string()
                .contains("cargo build --release -p webapp-kube-rs"),
            "{error}"
        );
    }

    #[test]
    fn a_commands_files_are_its_program_and_plugins() {
        let mut command = Command::new("/opt/wasmop");
        command.args(["run", "--plugin", "/p/a.wasm", "--namespaces", "ns"]);
        command.args(["--plugin", "/p/b.wasm"]);
        let files = files_of(&command);
        let expected = ["/opt/wasmop", "/p/a.wasm", "/p/b.wasm"].map(PathBuf::from);
        assert_eq!(files, expected);
    }

    #[test]
    fn kopf_runs_its_script_in_its_virtualenv() {
        let kopf = Comparator::by_key("kopf").expect("kopf is a comparator");
        assert_eq!(ALL.last(), Some(&kopf), "kopf comes last");
        let dir = std::env::temp_dir().join("wasmop-bench-no-such-repo");
        let error = kopf
            .command(&dir, Path::new("kubeconfig"), "ns")
            .expect_err("no virtualenv there");
        assert!(
            error.to_string().contains("tests/bench/kopf/install"),
            "{error}"
        );

        let repo = std::env::temp_dir().join(format!("wasmop-bench-kopf-{}", std::process::id()));
        let python = repo.join("target/bench/kopf-venv/bin/python");
        std::fs::create_dir_all(python.parent().unwrap()).unwrap();
        std::fs::write(&python, "").unwrap();
        let command = kopf
            .command(&repo, Path::new("kubeconfig"), "ns")
            .expect("the virtualenv is there");
        let command = command.as_std();
        assert_eq!(command.get_program(), python);
        let args: Vec<_> = command.get_args().collect();
        assert_eq!(args, [repo.join("tests/bench/kopf/webapp.py")]);
        let envs: Vec<_> = command.get_envs().collect();
        assert!(envs.contains(&("KUBECONFIG".as_ref(), Some("kubeconfig".as_ref()))));
        assert!(envs.contains(&("WEBAPP_NAMESPACE".as_ref(), Some("ns".as_ref()))));
        std::fs::remove_dir_all(&repo).unwrap();
    }
}
