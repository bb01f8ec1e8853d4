//! Command-line configuration of the `wasmop` binary.
//!
//! Every option has one name shared by its flag, its environment variable and (later) the config
//! file, so operators can move settings between them without renaming anything.

use clap::Parser;

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
pub struct Cli {}

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
}
