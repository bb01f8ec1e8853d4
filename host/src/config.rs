//! Command-line configuration of the `wasmop` binary.
//!
//! Every option has one name shared by its flag and its environment variable, so operators can
//! move settings between them without renaming anything.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

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
pub enum Command {
    /// Run plugins against a cluster until SIGINT or SIGTERM.
    Run(RunArgs),
}

/// Options of `wasmop run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The kubeconfig to use; in-cluster configuration or the default kubeconfig when absent.
    #[arg(long, env = "WASMOP_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// A plugin component to load (repeat for several).
    #[arg(
        long = "plugin",
        env = "WASMOP_PLUGINS",
        value_delimiter = ',',
        required = true
    )]
    pub plugins: Vec<PathBuf>,
    /// Where compiled components are cached across restarts.
    #[arg(long, env = "WASMOP_COMPILE_CACHE", default_value_os_t = crate::runtime::default_cache_dir())]
    pub compile_cache: PathBuf,
    /// Where `/metrics` is served; `0` turns it off.
    #[arg(
        long,
        env = "WASMOP_METRICS_BIND_ADDRESS",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_bind_address: BindAddress,
    /// Where `/healthz` and `/readyz` are served; `0` turns them off.
    #[arg(
        long,
        env = "WASMOP_HEALTH_PROBE_BIND_ADDRESS",
        default_value = "0.0.0.0:8081"
    )]
    pub health_probe_bind_address: BindAddress,
}

/// A listening address, or `0` for off, as controller-runtime's bind-address flags take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindAddress(pub Option<SocketAddr>);

impl std::str::FromStr for BindAddress {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        if value == "0" {
            return Ok(BindAddress(None));
        }
        value
            .parse()
            .map(|a| BindAddress(Some(a)))
            .map_err(|e| format!("`{value}` is neither `0` nor an address like 0.0.0.0:8080: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let Command::Run(args) = cli.command;
        assert_eq!(
            args.plugins,
            [PathBuf::from("a.wasm"), PathBuf::from("b.wasm")]
        );
        let missing = Cli::try_parse_from(["wasmop", "run"]).unwrap_err();
        assert!(missing.to_string().contains("--plugin"), "{missing}");
    }

    #[test]
    fn bind_addresses_default_like_controller_runtime_and_zero_turns_off() {
        let parse = |extra: &[&str]| {
            let args = [&["wasmop", "run", "--plugin", "a.wasm"], extra].concat();
            let Command::Run(run) = Cli::try_parse_from(args).unwrap().command;
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
