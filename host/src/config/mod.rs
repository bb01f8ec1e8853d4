//! Configuration of the `wasmop` binary: flags, environment variables and a YAML file.
//!
//! Every setting has one name, shared by its flag (`--memory-limit`), its environment variable
//! (`WASMOP_MEMORY_LIMIT`) and its key in the `--config` file (`memory-limit`), so operators can
//! move settings between them without renaming anything. A flag or environment variable wins
//! over the file, the file over the default. Invalid configuration is rejected before anything
//! starts, with a message naming the setting.
//!
//! Imports: the contract and the settings types of `cache`, `http`, `webhook` and `scaffold`;
//! never the runtime (`plugins` turns the limits into runtime options), `plugins`, `manager` or
//! `testing`, which read their settings from here.

mod file;
mod overrides;
mod policy;
mod webhook;

pub use webhook::WebhookArgs;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{FromArgMatches, Parser, Subcommand};

use crate::cache::Namespaces;
use crate::http::SecureServing;
use wasmop_contract::Rate;
use wasmop_contract::boundary::cut;
use wasmop_contract::{Ceiling, FailurePolicy, GuestLimits};

pub use overrides::{OVERRIDES, PluginOverrides};
pub use policy::parse as parse_policy;
pub use policy::{ceiling, narrowing};

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
    /// Compile the component on stdin into the artifact on stdout (the host runs this itself).
    #[command(name = "compile-worker", hide = true)]
    CompileWorker(CompileWorkerArgs),
}

/// Options of `wasmop compile-worker`, the child process a plugin is compiled in.
#[derive(Debug, clap::Args)]
pub struct CompileWorkerArgs {
    /// The most memory the compile may allocate, in bytes.
    #[arg(long)]
    pub memory_limit: Option<u64>,
}

/// Options of `wasmop rbac`.
#[derive(Debug, clap::Args)]
pub struct RbacArgs {
    /// The plugin component.
    pub plugin: PathBuf,
    /// The namespace of the plugin's ServiceAccount (the host's `--plugin-identity-namespace`).
    #[arg(long, default_value = "wasmop-system", value_parser = namespace)]
    pub namespace: String,
    /// The operator's ServiceAccount, allowed to impersonate the plugin's.
    #[arg(long, default_value = "wasmop")]
    pub operator: String,
    /// The operator ServiceAccount's namespace; `--namespace` when absent.
    #[arg(long, value_parser = namespace)]
    pub operator_namespace: Option<String>,
    /// A cluster to look up the kinds' resource names in; guessed from the kind names without one.
    #[arg(long, env = "WASMOP_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

/// Options of `wasmop new`.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The plugin's language.
    #[arg(value_enum)]
    pub language: crate::scaffold::Language,
    /// The plugin's name (a DNS label); its folder is created under `--dir`.
    pub name: String,
    /// The kind it reconciles: GROUP/VERSION/KIND, or VERSION/KIND for the core group.
    #[arg(long, default_value = "v1/ConfigMap")]
    pub kind: String,
    /// Where to create the plugin's folder.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// The guest SDKs (a wasmop checkout's `guest-sdk`); the checkout this binary was built from
    /// by default.
    #[arg(long, env = "WASMOP_GUEST_SDK")]
    pub sdk: Option<PathBuf>,
}

/// Options of `wasmop test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The plugin component.
    pub plugin: PathBuf,
    /// Fixture files, or directories whose `.yaml`, `.yml` and `.json` files are fixtures.
    #[arg(required_unless_present = "replay")]
    pub fixtures: Vec<PathBuf>,
    /// Replay the reconciles `wasmop run --record DIR` recorded of this plugin (by its name).
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// Rewrite each failing fixture's expectations to what the plugin did (review the change).
    #[arg(long)]
    pub accept: bool,
}

/// Options of `wasmop plugins`.
#[derive(Debug, clap::Args)]
pub struct PluginsArgs {
    /// The running host's health-probe (or metrics) address.
    #[arg(long, env = "WASMOP_ADDRESS", default_value = "127.0.0.1:8081")]
    pub address: String,
    /// Print the statuses as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
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
            let modules = &mut run.ceiling.modules.namespaces;
            modules.get_or_insert_with(|| own_namespace().into_iter().collect());
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

/// Options of `wasmop run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A YAML file with any of these settings under the same names; flags and env vars win.
    #[arg(long, env = "WASMOP_CONFIG")]
    pub config: Option<PathBuf>,
    /// The kubeconfig to use; in-cluster configuration or the default kubeconfig when absent.
    #[arg(long, env = "WASMOP_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// A plugin component to load (repeat for several).
    #[arg(
        long = "plugin",
        visible_alias = "plugins",
        env = "WASMOP_PLUGINS",
        value_delimiter = ','
    )]
    pub plugins: Vec<PathBuf>,
    /// A directory whose `*.wasm` files are loaded, upgraded and unloaded as they change.
    #[arg(long, env = "WASMOP_PLUGIN_DIR")]
    pub plugin_dir: Option<PathBuf>,
    /// Load the plugins `WasmReconciler` objects (wasmop.dev/v1alpha1) name, and report on them.
    #[arg(long, env = "WASMOP_WASM_RECONCILERS")]
    pub wasm_reconcilers: bool,
    /// Namespaces to watch, comma-separated; all when absent.
    #[arg(long, env = "WASMOP_NAMESPACES", value_delimiter = ',', value_parser = namespace)]
    pub namespaces: Vec<String>,
    /// Send each plugin's writes, events and access reviews as its own ServiceAccount,
    /// `wasmop-plugin-<name>` in this namespace (impersonation; `wasmop rbac` prints its RBAC).
    #[arg(long, env = "WASMOP_PLUGIN_IDENTITY_NAMESPACE", value_parser = namespace)]
    pub plugin_identity_namespace: Option<String>,
    /// Where compiled components are cached across restarts [default: $XDG_CACHE_HOME/wasmop/compiled,
    /// else ~/.cache/wasmop/compiled].
    #[arg(long, env = "WASMOP_COMPILE_CACHE")]
    pub compile_cache: Option<PathBuf>,
    /// Compile plugins inside the host process rather than in a child process of this binary;
    /// a plugin whose compile exhausts the memory limit then takes the host down with it.
    #[arg(long, env = "WASMOP_COMPILE_IN_PROCESS")]
    pub compile_in_process: bool,
    /// The most memory one plugin's compile may allocate, in its child process; a compile that
    /// needs more fails that plugin's load. Unlimited (up to the host's own limit) when absent.
    #[arg(long, env = "WASMOP_COMPILE_MEMORY_LIMIT", value_parser = bytes, conflicts_with = "compile_in_process")]
    pub compile_memory_limit: Option<usize>,
    /// The most linear memory all plugins' instances may hold together; a guest that would grow
    /// past it traps (a memory trap naming the plugin), as past its own `--memory-limit`.
    /// Unbounded when absent: set it below the host's own memory limit.
    #[arg(long, env = "WASMOP_GUEST_MEMORY_BUDGET", value_parser = bytes)]
    pub guest_memory_budget: Option<usize>,
    /// Where `/metrics` is served; `0` turns metrics off: `/metrics` is then served nowhere, and
    /// the probe listener keeps `/plugins`.
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
    /// Serve `/metrics` and `/plugins` over HTTPS, only to callers the apiserver authenticates
    /// (TokenReview) and authorizes (SubjectAccessReview); the probe listener keeps the probes.
    #[arg(long, env = "WASMOP_METRICS_SECURE")]
    pub metrics_secure: bool,
    /// A directory with `tls.crt` and `tls.key` for `--metrics-secure`, reloaded when they
    /// change; a self-signed certificate is generated at start when absent.
    #[arg(long, env = "WASMOP_METRICS_CERT_DIR")]
    pub metrics_cert_dir: Option<PathBuf>,
    /// How long in-flight reconciles may take to finish after SIGTERM.
    #[arg(long, env = "WASMOP_GRACEFUL_SHUTDOWN_TIMEOUT", default_value = "30s", value_parser = duration)]
    pub graceful_shutdown_timeout: Duration,
    /// How long a plugin's informers may take to list everything before its start fails.
    #[arg(long, env = "WASMOP_CACHE_SYNC_TIMEOUT", default_value = "2m", value_parser = duration)]
    pub cache_sync_timeout: Duration,
    /// How log lines are written: `text`, or `json` (one object per line, with a reconcile's
    /// fields under `span`).
    #[arg(long, env = "WASMOP_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// The webhook server.
    #[command(flatten)]
    pub webhooks: WebhookArgs,
    /// Limits for every plugin.
    #[command(flatten)]
    pub limits: PluginLimits,
    /// Leader election settings.
    #[command(flatten)]
    pub leader: LeaderArgs,
    /// A YAML file with the operator's ceiling over every plugin: the grants plugins may hold and
    /// the most concurrency, timeout, memory and instances any may have.
    #[arg(long, env = "WASMOP_POLICY")]
    pub policy: Option<PathBuf>,
    /// Per-plugin limits from the config file's `plugins` entries.
    #[arg(skip)]
    pub overrides: Vec<(PathBuf, PluginOverrides)>,
    /// The ceiling read from `policy` (the default ceiling without one).
    #[arg(skip)]
    pub ceiling: Ceiling,
}

/// How `wasmop run` writes its log lines to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Text for people.
    Text,
    /// One JSON object per line; the fields of the span it was logged in (a reconcile's `plugin`,
    /// `object`, `reconcile_id`, …) under `span`.
    Json,
}

/// Limits applied to every plugin; a config file's `plugins` entry may override them for one.
#[derive(Debug, Clone, clap::Args)]
pub struct PluginLimits {
    /// The cap on each of a plugin instance's linear memories (e.g. 64Mi, 1Gi).
    #[arg(long, env = "WASMOP_MEMORY_LIMIT", default_value = "64Mi", value_parser = bytes)]
    pub memory_limit: usize,
    /// The reconcile timeout, overriding the plugins' own (60s when neither sets one).
    #[arg(long, env = "WASMOP_RECONCILE_TIMEOUT", value_parser = duration)]
    pub reconcile_timeout: Option<Duration>,
    /// How many reconciles of one plugin may run at once, overriding the plugins' own.
    #[arg(long, env = "WASMOP_MAX_CONCURRENT_RECONCILES", value_parser = positive)]
    pub max_concurrent_reconciles: Option<u32>,
    /// Idle instances kept per plugin for reuse; 0 gives every call a fresh instance.
    #[arg(long, env = "WASMOP_WARM_INSTANCES", default_value_t = 0)]
    pub warm_instances: usize,
    /// Write every reconcile as a fixture under DIR/<plugin>/ — the objects it read, the writes
    /// it sent, its outcome; Secrets' values redacted — for `wasmop test --replay DIR`.
    #[arg(long, env = "WASMOP_RECORD", value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// The most instances of one plugin at once, busy and idle; its concurrency, one for `map`
    /// and its warm instances when absent.
    #[arg(long, env = "WASMOP_MAX_INSTANCES", value_parser = positive)]
    pub max_instances: Option<u32>,
    /// How long one validate, default or convert call may take (at most 25s); the apiserver is
    /// told to wait 2 s longer.
    #[arg(long, env = "WASMOP_WEBHOOK_TIMEOUT", default_value = "2s", value_parser = webhook_timeout)]
    pub webhook_timeout: Duration,
    /// What the apiserver is told when a plugin fails to answer a webhook, and does when it cannot
    /// reach the host: `Fail` (refuse the request) or `Ignore` (admit it).
    #[arg(long, env = "WASMOP_WEBHOOK_FAILURE_POLICY", default_value = "Fail", value_parser = FailurePolicy::parse)]
    pub webhook_failure_policy: FailurePolicy,
    /// What a guest may make the host copy, keep, send and log.
    #[command(flatten)]
    pub guest: GuestArgs,
}

/// Per-plugin bounds on what a guest hands the host; see `runtime::GuestLimits`.
#[derive(Debug, Clone, clap::Args)]
pub struct GuestArgs {
    /// Bytes a guest may hand the host in one call, strings and list entries together.
    #[arg(long, env = "WASMOP_MAX_CALL_BYTES", default_value = "8Mi", value_parser = bytes)]
    pub max_call_bytes: usize,
    /// The largest object or patch a guest may send.
    #[arg(long, env = "WASMOP_MAX_OBJECT_BYTES", default_value = "3Mi", value_parser = bytes)]
    pub max_object_bytes: usize,
    /// Requirements in one label or field selector of a cache list.
    #[arg(long, env = "WASMOP_MAX_SELECTOR_REQUIREMENTS", default_value_t = 32)]
    pub max_selector_requirements: usize,
    /// Bytes of a log line's message (and of its fields); longer ones are cut.
    #[arg(long, env = "WASMOP_MAX_LOG_BYTES", default_value = "16Ki", value_parser = bytes)]
    pub max_log_bytes: usize,
    /// Fields of one log line; further ones are dropped.
    #[arg(long, env = "WASMOP_MAX_LOG_FIELDS", default_value_t = 32)]
    pub max_log_fields: usize,
    /// Bytes of an event's message; longer ones are cut.
    #[arg(long, env = "WASMOP_MAX_EVENT_BYTES", default_value = "1Ki", value_parser = bytes)]
    pub max_event_bytes: usize,
    /// Keys one `map` call may return.
    #[arg(long, env = "WASMOP_MAX_MAP_KEYS", default_value_t = 10_000)]
    pub max_map_keys: usize,
    /// Apiserver writes per second per plugin, and their burst (`PER_SECOND:BURST`); a write
    /// over the rate waits for its turn.
    #[arg(long, env = "WASMOP_WRITE_RATE", default_value = "500:1000", value_parser = rate)]
    pub write_rate: Rate,
    /// Events per second per plugin, and their burst; an event over it waits for its turn (the
    /// write rate by default: a reconciler records one per object it creates).
    #[arg(long, env = "WASMOP_EVENT_RATE", default_value = "500:1000", value_parser = rate)]
    pub event_rate: Rate,
    /// Log lines per second per plugin, and their burst; a line over it waits for its turn.
    #[arg(long, env = "WASMOP_LOG_RATE", default_value = "100:500", value_parser = rate)]
    pub log_rate: Rate,
    /// Requeues per second per plugin, and their burst; a requeue over it waits for its turn.
    #[arg(long, env = "WASMOP_REQUEUE_RATE", default_value = "100:1000", value_parser = rate)]
    pub requeue_rate: Rate,
}

impl GuestArgs {
    /// These bounds as the runtime takes them.
    pub fn limits(&self) -> GuestLimits {
        GuestLimits {
            call_bytes: self.max_call_bytes,
            object_bytes: self.max_object_bytes,
            selector_requirements: self.max_selector_requirements,
            log_bytes: self.max_log_bytes,
            log_fields: self.max_log_fields,
            event_bytes: self.max_event_bytes,
            map_keys: self.max_map_keys,
            writes: self.write_rate,
            events: self.event_rate,
            logs: self.log_rate,
            requeues: self.requeue_rate,
        }
    }
}

impl RunArgs {
    /// The limits of the plugin in `file`: the common limits with its own overrides.
    pub fn plugin_limits(&self, file: &Path) -> PluginLimits {
        let mut limits = self.limits.clone();
        if let Some((_, overrides)) = self.overrides.iter().find(|(f, _)| f == file) {
            overrides.apply(&mut limits);
        }
        limits
    }

    /// The namespaces to watch.
    pub fn watched_namespaces(&self) -> Namespaces {
        match self.namespaces.is_empty() {
            true => Namespaces::All,
            false => Namespaces::Only(self.namespaces.clone()),
        }
    }

    /// How the metrics listener serves HTTPS, with `--metrics-secure`.
    pub fn secure_serving(&self) -> Option<SecureServing> {
        self.metrics_secure.then(|| SecureServing {
            cert_dir: self.metrics_cert_dir.clone(),
            ..SecureServing::default()
        })
    }

    /// Checks what each setting's parser cannot: the settings together.
    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |setting, message: String| Err(ConfigError::Invalid { setting, message });
        if self.plugins.is_empty() && self.plugin_dir.is_none() && !self.wasm_reconcilers {
            return invalid(
                "plugins",
                "no plugin to run: give --plugin, --plugin-dir, --wasm-reconcilers, or `plugins` \
                 in the --config file"
                    .into(),
            );
        }
        self.webhooks.validate()?;
        if self.metrics_cert_dir.is_some() && !self.metrics_secure {
            return invalid(
                "metrics-cert-dir",
                "a certificate serves only with --metrics-secure".into(),
            );
        }
        let leader = &self.leader;
        // Checked here, not by clap: `leader-elect` may come from the config file.
        for (on, setting) in [
            (leader.sharding, "sharding"),
            (leader.warm_standby, "warm-standby"),
        ] {
            if on && !leader.leader_elect {
                return invalid(setting, "needs --leader-elect".into());
            }
        }
        let (lease, renew, retry) = (
            leader.leader_election_lease_duration,
            leader.leader_election_renew_deadline,
            leader.leader_election_retry_period,
        );
        if lease <= renew {
            return invalid(
                "leader-election-renew-deadline",
                format!(
                    "{renew:?} must be shorter than leader-election-lease-duration ({lease:?})"
                ),
            );
        }
        if renew.as_secs_f64() <= 1.2 * retry.as_secs_f64() {
            return invalid(
                "leader-election-retry-period",
                format!(
                    "{retry:?} must be under leader-election-renew-deadline / 1.2 ({renew:?} / 1.2)"
                ),
            );
        }
        let max = wasmop_contract::MAX_MEMORY;
        let memory_limits = std::iter::once(self.limits.memory_limit)
            .chain(self.overrides.iter().filter_map(|(_, o)| o.memory_limit));
        for limit in memory_limits {
            if limit > max {
                return invalid(
                    "memory-limit",
                    format!("{limit} bytes is over the runtime's maximum of {max} bytes (1Gi)"),
                );
            }
        }
        Ok(())
    }
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
    /// Shard each plugin's objects across the replicas: each holds a member Lease of its own and
    /// reconciles only the objects the leader labels with its shard (needs --leader-elect).
    #[arg(long, env = "WASMOP_SHARDING")]
    pub sharding: bool,
    /// While not leading (or, sharding, before holding its member Lease), start and sync the
    /// plugins' informers so that a takeover reconciles from a warm cache (needs --leader-elect).
    #[arg(long, env = "WASMOP_WARM_STANDBY")]
    pub warm_standby: bool,
}

/// A YAML document (the `--config` or `--policy` file) as JSON values; empty text is an empty
/// mapping. Aliases may replay at most as many events as the text has bytes, so an alias bomb of
/// a few hundred bytes cannot expand to megabytes.
pub(crate) fn yaml(text: &str) -> Result<serde_json::Value, String> {
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    let options = serde_saphyr::options! {
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: text.len(),
        },
    };
    serde_saphyr::from_str_with_options(text, options).map_err(|e| format!("not valid YAML: {e}"))
}

/// The longest duration any setting takes: a year. A longer one is a typo, and one long enough
/// would overflow the deadline it is added to.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// `250ms`, `15s` or `2m`, at most [`MAX_DURATION`].
pub(crate) fn duration(value: &str) -> Result<Duration, String> {
    let split = value
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{}` is not a duration like 15s or 500ms", cut(value)))?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" => number,
        "m" => number * 60.0,
        _ => return Err(format!("`{}` needs a unit: ms, s or m", cut(value))),
    };
    if seconds > MAX_DURATION.as_secs_f64() {
        return Err(format!(
            "`{}` is longer than the longest duration this host takes, a year",
            cut(value)
        ));
    }
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("`{}` is not a duration this host can wait", cut(value)))
}

/// `PER_SECOND:BURST`, e.g. `500:1000`; `PER_SECOND` alone allows a burst of one second's worth.
pub(crate) fn rate(value: &str) -> Result<Rate, String> {
    let malformed = || {
        format!(
            "`{}` is not a rate like 100:500 (per second, then burst)",
            cut(value)
        )
    };
    let (per_second, burst) = value.split_once(':').unwrap_or((value, ""));
    let per_second: f64 = per_second.parse().map_err(|_| malformed())?;
    if !per_second.is_finite() || per_second <= 0.0 {
        return Err(malformed());
    }
    let burst = match burst {
        "" => per_second.ceil().min(f64::from(u32::MAX)) as u32,
        burst => positive(burst).map_err(|_| malformed())?,
    };
    Ok(Rate::new(per_second, burst.max(1)))
}

/// A webhook call's timeout: a duration from 100ms to 25s, so the apiserver's own timeout (2 s
/// longer, at most 30 s) is never the one that answers.
fn webhook_timeout(value: &str) -> Result<Duration, String> {
    let timeout = duration(value)?;
    match timeout >= Duration::from_millis(100) && timeout <= Duration::from_secs(25) {
        true => Ok(timeout),
        false => Err(format!("`{value}` is outside 100ms..=25s")),
    }
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

/// `64Mi`, `1Gi`, `512Ki` or a number of bytes.
pub(crate) fn bytes(value: &str) -> Result<usize, String> {
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: usize = number
        .parse()
        .map_err(|_| format!("`{}` is not a size like 64Mi or 1Gi", cut(value)))?;
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        _ => {
            return Err(format!(
                "`{}` has an unknown unit: use Ki, Mi or Gi",
                cut(value)
            ));
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{}` is too large", cut(value)))
}

/// A whole number of at least 1.
pub(crate) fn positive(value: &str) -> Result<u32, String> {
    match value.parse() {
        Ok(0) | Err(_) => Err(format!(
            "`{}` is not a whole number of at least 1",
            cut(value)
        )),
        Ok(number) => Ok(number),
    }
}

/// A namespace name: a DNS-1123 label.
fn namespace(value: &str) -> Result<String, String> {
    match wasmop_contract::boundary::dns_label(value) {
        true => Ok(value.to_owned()),
        false => Err(format!(
            "`{value}` is not a namespace name (lowercase letters, digits and '-', at most 63)"
        )),
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
        assert!(bytes("64MB").unwrap_err().contains("unknown unit"));
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
        let error = duration(forever).unwrap_err();
        assert!(error.contains("longer than"), "{error}");
        assert_eq!(duration("525600m"), Ok(MAX_DURATION));
        assert!(duration("525600.5m").is_err());
        let quoted = duration(&format!("1{}", "x".repeat(1 << 16))).unwrap_err();
        assert!(quoted.len() < 200, "a refused value is quoted cut");
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
