//! Configuration of the `wasmop` binary: flags, environment variables and a YAML file.
//!
//! Every setting has one name, shared by its flag (`--memory-limit`), its environment variable
//! (`WASMOP_MEMORY_LIMIT`) and its key in the `--config` file (`memory-limit`), so operators can
//! move settings between them without renaming anything. A flag or environment variable wins
//! over the file, the file over the default. Invalid configuration is rejected before anything
//! starts, with a message naming the setting.
//!
//! A setting is declared once, as a flag with its parser (`run.rs`, `limits.rs`, `webhook.rs`);
//! the config file's keys are read from those declarations. The plugin limits a plugin may
//! override are a documented subset, [`OVERRIDES`], set by a config file's `plugins` entry or
//! a WasmReconciler's spec through the same flags (`overrides.rs`); a test holds the CRD's
//! override fields equal to that subset. Each subcommand's options are a struct of their own.
//!
//! Imports: the contract and the settings types of `cache`, `http`, `webhook` and `scaffold`;
//! never the runtime (`plugins` turns the limits into runtime options), `plugins`, `manager` or
//! `testing`, which read their settings from here.

mod commands;
mod environment;
mod file;
mod limits;
mod overrides;
mod parse;
mod policy;
mod run;
mod webhook;

pub use commands::{
    BuildArgs, CompileWorkerArgs, Compiler, CredentialArgs, GenerateArgs, MigrateArgs, NewArgs,
    PluginsArgs, PullArgs, PushArgs, RbacArgs, RegistryArgs, ReportFormat, SignArgs, TestArgs,
};
pub use limits::{GuestArgs, PluginLimits};
pub use parse::{BindAddress, MAX_DURATION, SettingError, ValueError};
pub(crate) use parse::{bytes, duration, positive, rate, yaml};
pub use run::{LeaderArgs, LogFormat, RunArgs};
pub use webhook::WebhookArgs;

use parse::{namespace, webhook_timeout};

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{FromArgMatches, Parser, Subcommand};

pub use overrides::{OVERRIDES, PluginOverrides};
pub use policy::parse as parse_policy;
pub use policy::{PolicyError, ceiling, narrowing};

/// The configuration could not be read or is invalid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The command line did not parse (or asked for help or the version).
    #[error(transparent)]
    Cli(#[from] clap::Error),
    /// The config file could not be read.
    #[error("cannot read config file {file}: {source}")]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A setting in the config file is unknown or malformed.
    #[error("config file {file}: {message}")]
    File {
        /// The file.
        file: PathBuf,
        /// What is wrong, naming the setting.
        message: String,
    },
    /// Settings that parse but do not make sense together.
    #[error("invalid configuration: `{setting}`: {message}")]
    Invalid {
        /// The setting.
        setting: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// The `wasmop` command line.
#[derive(Debug, Parser)]
#[command(
    name = "wasmop",
    version,
    arg_required_else_help = true,
    about = "Run Kubernetes reconcilers as sandboxed WebAssembly components",
    long_about = "wasmop is a Kubernetes operator host: it owns the shared informer cache, \
                  the cache-backed client, workqueues, leader election, metrics and health, \
                  and dispatches every reconcile request into a WebAssembly component."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // One value per process, parsed once.
pub enum Command {
    /// Run plugins against a cluster until SIGINT or SIGTERM.
    Run(RunArgs),
    /// List the plugins of a running host: version, digest, state, queue depth, last error.
    Plugins(PluginsArgs),
    /// Print the ServiceAccount, roles and bindings a plugin's own identity needs (YAML).
    Rbac(RbacArgs),
    /// Run a plugin against fixture files offline, in the real runtime, and show what differs.
    Test(TestArgs),
    /// Make a plugin folder: build configuration, a reconciler skeleton and passing fixtures.
    New(NewArgs),
    /// Write a plugin's spec and status types from its crd.yaml again (after editing its schema).
    Generate(GenerateArgs),
    /// Build plugin folders into WebAssembly components, in any guest language.
    Build(BuildArgs),
    /// Push a plugin component to a registry as a Wasm OCI artifact; prints the digest to pin.
    Push(PushArgs),
    /// Pull a plugin component from a registry, checked against the digest its reference pins.
    Pull(PullArgs),
    /// Sign a pushed plugin as cosign does (its signature verifies with `cosign verify`).
    Sign(SignArgs),
    /// Move cluster-scoped WasmReconcilers to ClusterWasmReconcilers and make WasmReconciler
    /// namespaced, losing none (run once, when upgrading from a host before the split).
    Migrate(MigrateArgs),
    /// Compile the component on stdin into the artifact on stdout (the host runs this itself).
    #[command(name = "compile-worker", hide = true)]
    CompileWorker(CompileWorkerArgs),
}

impl Cli {
    /// Parses the process's arguments and environment, then the `--config` file if one is given.
    pub fn load() -> Result<Cli, ConfigError> {
        Cli::load_from(std::env::args_os())
    }

    /// Like [`Cli::load`], for the given arguments.
    pub fn load_from(
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Result<Cli, ConfigError> {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let command = <Cli as clap::CommandFactory>::command();
        let matches = command.clone().try_get_matches_from(&args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        let Command::Run(run) = &mut cli.command else {
            return Ok(cli);
        };
        if let Some(path) = run.config.clone() {
            let run_matches = matches.subcommand_matches("run").expect("run was parsed");
            let run_command = command.find_subcommand("run").expect("run exists");
            let settings = file::read(&path, run_command, run_matches)?;
            let all = [args, settings.args].concat();
            let matches = command
                .try_get_matches_from(&all)
                .map_err(|error| file::clap_error(&path, &error))?;
            cli = Cli::from_arg_matches(&matches)?;
            if let Command::Run(merged) = &mut cli.command {
                merged.overrides = settings.overrides;
            }
        }
        if let Command::Run(run) = &mut cli.command {
            if let Some(path) = &run.policy {
                run.ceiling = policy::read(path)?;
            }
            let own = own_namespace();
            let modules = &mut run.ceiling.modules.namespaces;
            modules.get_or_insert_with(|| own.iter().cloned().collect());
            let protected = &mut run.ceiling.protected_namespaces;
            protected.extend(own.filter(|n| !protected.contains(n)));
            run.validate()?;
        }
        Ok(cli)
    }
}

/// Where a pod finds its own namespace.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The namespace the host runs in: `POD_NAMESPACE`, else its service account's; none
/// off-cluster.
pub fn own_namespace() -> Option<String> {
    let from_env = std::env::var("POD_NAMESPACE").ok();
    let from_file = || std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE).ok();
    let namespace = from_env
        .filter(|n| !n.trim().is_empty())
        .or_else(from_file)?;
    Some(namespace.trim().to_owned()).filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::cache::Namespaces;
    use crate::http::SecureServing;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn version_flag_reports_the_crate_version() {
        let err = Cli::try_parse_from(["wasmop", "--version"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayVersion);
        assert!(err.to_string().contains(env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn run_takes_several_plugins_and_needs_one() {
        let cli =
            Cli::try_parse_from(["wasmop", "run", "--plugin", "a.wasm", "--plugin", "b.wasm"])
                .unwrap();
        let Command::Run(args) = cli.command else {
            panic!("run")
        };
        assert_eq!(
            args.plugins,
            [PathBuf::from("a.wasm"), PathBuf::from("b.wasm")]
        );
        let missing = Cli::load_from(["wasmop", "run"]).unwrap_err();
        assert!(missing.to_string().contains("--plugin"), "{missing}");
    }

    fn load(args: &[&str]) -> Result<RunArgs, ConfigError> {
        let Command::Run(run) = Cli::load_from([&["wasmop", "run"], args].concat())?.command else {
            panic!("run")
        };
        Ok(run)
    }

    #[test]
    fn durations_that_break_client_go_rules_name_the_setting() {
        let error = load(&[
            "--plugin=a.wasm",
            "--leader-election-lease-duration=5s",
            "--leader-election-renew-deadline=5s",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("`leader-election-renew-deadline`"),
            "{error}"
        );
        assert!(
            error.contains("leader-election-lease-duration (5s)"),
            "{error}"
        );
        let error = load(&["--plugin=a.wasm", "--leader-election-retry-period=9s"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("`leader-election-retry-period`"), "{error}");
    }

    #[test]
    fn limits_parse_sizes_and_apply_to_every_plugin() {
        let run = load(&[
            "--plugin=a.wasm",
            "--memory-limit=128Mi",
            "--reconcile-timeout=5s",
            "--max-concurrent-reconciles=3",
            "--warm-instances=2",
            "--record=recorded",
        ])
        .unwrap();
        let limits = run.plugin_limits(Path::new("a.wasm"));
        assert_eq!(limits.memory_limit, 128 << 20);
        assert_eq!(run.limits.record.as_deref(), Some(Path::new("recorded")));
        assert_eq!(limits.reconcile_timeout, Some(Duration::from_secs(5)));
        assert_eq!(limits.max_concurrent_reconciles, Some(3));
        assert_eq!(limits.warm_instances, 2);
        assert_eq!(bytes("1Gi"), Ok(1 << 30));
        assert_eq!(bytes("4096"), Ok(4096));
        assert_eq!(bytes("64MB"), Err(ValueError::SizeUnit("64MB".into())));
        let error = load(&["--plugin=a.wasm", "--memory-limit=2Gi"]).unwrap_err();
        assert!(error.to_string().contains("`memory-limit`"), "{error}");
        let error = load(&["--plugin=a.wasm", "--max-concurrent-reconciles=0"]).unwrap_err();
        assert!(error.to_string().contains("at least 1"), "{error}");
    }

    #[test]
    fn namespaces_are_checked_and_default_to_all() {
        assert_eq!(
            load(&["--plugin=a"]).unwrap().watched_namespaces(),
            Namespaces::All
        );
        let run = load(&["--plugin=a", "--namespaces=team-a,team-b"]).unwrap();
        assert_eq!(
            run.watched_namespaces(),
            Namespaces::Only(vec!["team-a".into(), "team-b".into()])
        );
        let error = load(&["--plugin=a", "--namespaces=Team_A"]).unwrap_err();
        assert!(
            error.to_string().contains("not a namespace name"),
            "{error}"
        );
    }

    #[test]
    fn durations_are_at_most_a_year_so_a_deadline_can_hold_them() {
        // Accepted before, and then `Instant::now() + duration` panicked with an overflow: at
        // shutdown for --graceful-shutdown-timeout, at the first reconcile for a reconcile
        // timeout the policy's max-reconcile-timeout let through.
        let forever = "10000000000000000000s";
        let overflows = |d: Duration| tokio::time::Instant::now().checked_add(d).is_none();
        assert!(Duration::try_from_secs_f64(1e19).is_ok_and(overflows));
        assert_eq!(duration(forever), Err(ValueError::TooLong(forever.into())));
        assert_eq!(duration("525600m"), Ok(MAX_DURATION));
        assert!(duration("525600.5m").is_err());
        let quoted = duration(&format!("1{}", "x".repeat(1 << 16))).unwrap_err();
        assert!(
            quoted.to_string().len() < 200,
            "a refused value is quoted cut"
        );
    }

    #[test]
    fn leader_election_durations_parse_with_units() {
        let cli = Cli::try_parse_from([
            "wasmop",
            "run",
            "--plugin",
            "a.wasm",
            "--leader-elect",
            "--leader-election-lease-duration",
            "1500ms",
            "--leader-election-retry-period",
            "1m",
        ])
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("run")
        };
        assert!(run.leader.leader_elect);
        assert_eq!(
            run.leader.leader_election_lease_duration,
            Duration::from_millis(1500)
        );
        assert_eq!(
            run.leader.leader_election_renew_deadline,
            Duration::from_secs(10)
        );
        assert_eq!(
            run.leader.leader_election_retry_period,
            Duration::from_secs(60)
        );
        let bad = Cli::try_parse_from([
            "wasmop",
            "run",
            "--plugin",
            "a",
            "--leader-election-retry-period",
            "2",
        ]);
        assert!(bad.unwrap_err().to_string().contains("needs a unit"));
    }

    #[test]
    fn metrics_secure_is_off_by_default_and_the_file_turns_it_on() {
        assert_eq!(load(&["--plugin=a.wasm"]).unwrap().secure_serving(), None);
        let run = load(&["--plugin=a.wasm", "--metrics-secure"]).unwrap();
        assert_eq!(run.secure_serving(), Some(SecureServing::default()));
        let error = load(&["--plugin=a.wasm", "--metrics-cert-dir=/certs"]).unwrap_err();
        assert!(error.to_string().contains("`metrics-cert-dir`"), "{error}");

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("wasmop.yaml");
        std::fs::write(&file, "metrics-secure: true\nmetrics-cert-dir: /certs\n").unwrap();
        let run = load(&["--plugin=a.wasm", &format!("--config={}", file.display())]).unwrap();
        let cert_dir = Some(PathBuf::from("/certs"));
        assert_eq!(
            run.secure_serving(),
            Some(SecureServing {
                cert_dir,
                ..SecureServing::default()
            })
        );
    }

    #[test]
    fn logs_are_text_unless_json_is_asked_for_by_flag_or_file() {
        assert_eq!(
            load(&["--plugin=a.wasm"]).unwrap().log_format,
            LogFormat::Text
        );
        let run = load(&["--plugin=a.wasm", "--log-format=json"]).unwrap();
        assert_eq!(run.log_format, LogFormat::Json);
        let error = load(&["--plugin=a.wasm", "--log-format=yaml"]).unwrap_err();
        assert!(error.to_string().contains("--log-format"), "{error}");

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("wasmop.yaml");
        std::fs::write(&file, "log-format: json\n").unwrap();
        let run = load(&["--plugin=a.wasm", &format!("--config={}", file.display())]).unwrap();
        assert_eq!(run.log_format, LogFormat::Json);
    }

    #[test]
    fn bind_addresses_default_like_controller_runtime_and_zero_turns_off() {
        let parse = |extra: &[&str]| {
            let args = [&["wasmop", "run", "--plugin", "a.wasm"], extra].concat();
            let Command::Run(run) = Cli::try_parse_from(args).unwrap().command else {
                panic!("run")
            };
            run
        };
        let defaults = parse(&[]);
        assert_eq!(
            defaults.metrics_bind_address.0,
            Some("0.0.0.0:8080".parse().unwrap())
        );
        assert_eq!(
            defaults.health_probe_bind_address.0,
            Some("0.0.0.0:8081".parse().unwrap())
        );
        assert_eq!(
            parse(&["--metrics-bind-address", "0"])
                .metrics_bind_address
                .0,
            None
        );
        let bad = Cli::try_parse_from([
            "wasmop",
            "run",
            "--plugin",
            "a",
            "--metrics-bind-address",
            ":x",
        ]);
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("neither `0` nor an address")
        );
    }
}
