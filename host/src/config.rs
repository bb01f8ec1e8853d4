//! Command-line configuration of the `wasmop` binary.
//!
//! Every option has one name shared by its flag and its environment variable, so operators can
//! move settings between them without renaming anything.

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
}
