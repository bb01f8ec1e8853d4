//! Command-line configuration of the `wasmop` binary.
//!
//! Every option has one name shared by its flag and its environment variable, so operators can
//! move settings between them without renaming anything.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Leader election settings.
    #[command(flatten)]
    pub leader: LeaderArgs,
}

/// Leader election options, named as controller-runtime's manager flags are.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderArgs {
    /// Run controllers only while holding the Lease, so replicas can wait as followers.
    #[arg(long, env = "WASMOP_LEADER_ELECT")]
    pub leader_elect: bool,
    /// The Lease's name.
    #[arg(
        long,
        env = "WASMOP_LEADER_ELECTION_ID",
        default_value = "wasmop-leader"
    )]
    pub leader_election_id: String,
    /// The Lease's namespace; the pod's own namespace in a cluster, else `default`.
    #[arg(long, env = "WASMOP_LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// How long a Lease stays held after its last observed renewal (e.g. 15s, 1500ms).
    #[arg(long, env = "WASMOP_LEADER_ELECTION_LEASE_DURATION", default_value = "15s", value_parser = duration)]
    pub leader_election_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up.
    #[arg(long, env = "WASMOP_LEADER_ELECTION_RENEW_DEADLINE", default_value = "10s", value_parser = duration)]
    pub leader_election_renew_deadline: Duration,
    /// How often candidates try to acquire and the leader renews.
    #[arg(long, env = "WASMOP_LEADER_ELECTION_RETRY_PERIOD", default_value = "2s", value_parser = duration)]
    pub leader_election_retry_period: Duration,
}

/// `250ms`, `15s` or `2m`.
fn duration(value: &str) -> Result<Duration, String> {
    let split = value
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{value}` is not a duration like 15s or 500ms"))?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" => number,
        "m" => number * 60.0,
        _ => return Err(format!("`{value}` needs a unit: ms, s or m")),
    };
    Ok(Duration::from_secs_f64(seconds))
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
        let Command::Run(run) = cli.command;
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
