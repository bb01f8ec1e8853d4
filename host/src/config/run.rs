//! The options of `wasmop run`, and the checks of what each flag's parser cannot check alone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cache::Namespaces;
use crate::http::{ReadyRequires, SecureServing};
use wasmop_contract::Ceiling;
use wasmop_contract::environment::Environment;

use super::{
    BindAddress, Compiler, ConfigError, PluginLimits, PluginOverrides, RegistryArgs, WebhookArgs,
    bytes, duration, namespace, rate,
};

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
    /// The most bytes of compiled components the compile cache keeps; the least recently used
    /// go first. With `--pulled-store-limit` (kept under the same directory) it must leave room
    /// in the cache's volume for the installs in flight.
    #[arg(long, env = "WASMOP_COMPILE_CACHE_LIMIT", default_value = "1Gi", value_parser = bytes)]
    pub compile_cache_limit: usize,
    /// How registries are reached, for `oci://` plugins and WasmReconcilers' `spec.module.oci`.
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Compile plugins inside the host process rather than in a child process of this binary;
    /// a plugin whose compile exhausts the memory limit then takes the host down with it.
    #[arg(long, env = "WASMOP_COMPILE_IN_PROCESS")]
    pub compile_in_process: bool,
    /// The most memory one plugin's compile may allocate, in its child process; a compile that
    /// needs more fails that plugin's load. Unlimited (up to the host's own limit) when absent.
    #[arg(long, env = "WASMOP_COMPILE_MEMORY_LIMIT", value_parser = bytes, conflicts_with = "compile_in_process")]
    pub compile_memory_limit: Option<usize>,
    /// What compiles plugins: `winch`, the baseline compiler, which compiles a large plugin in a
    /// tenth of Cranelift's time and memory, or `cranelift`, wasmtime's default and most-fuzzed
    /// backend (for plugins pushed precompiled with `wasmop push --precompile --compiler
    /// cranelift`, or a compile memory limit of ~1 GiB). Compiled components of one are never
    /// used by the other.
    #[arg(long, env = "WASMOP_COMPILER", value_enum, default_value = "winch")]
    pub compiler: Compiler,
    /// The most plugin compiles that run at once; the others wait in line, the operator's
    /// plugins (files, the plugin directory) before any WasmReconciler's. A load the compile
    /// cache serves compiles nothing and never waits.
    #[arg(long, env = "WASMOP_MAX_CONCURRENT_COMPILES", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_compiles: u16,
    /// The most WasmReconciler installs (fetch, compile, load) that run at once; the others
    /// wait in line. With each module at most 64 MiB, it bounds the module bytes in memory.
    #[arg(long, env = "WASMOP_MAX_CONCURRENT_INSTALLS", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_installs: u16,
    /// The most bytes of pulled components kept on disk (under the compile cache's `pulled/`)
    /// for restarts while a registry is down; the least recently used go first. What a
    /// WasmReconciler pulled goes with the object.
    #[arg(long, env = "WASMOP_PULLED_STORE_LIMIT", default_value = "1Gi", value_parser = bytes)]
    pub pulled_store_limit: usize,
    /// Log lines per second, and burst, all WasmReconcilers' plugins share (`PER_SECOND:BURST`),
    /// beside each plugin's own `--log-rate`; a line over it waits for its turn, counted as the
    /// plugin's log throttling.
    #[arg(long, env = "WASMOP_TENANT_LOG_RATE", default_value = "200:1000", value_parser = rate)]
    pub tenant_log_rate: wasmop_contract::limits::Rate,
    /// The most linear memory all plugins' instances may hold together; a guest that would grow
    /// past it traps (a memory trap naming the plugin), as past its own `--memory-limit`.
    /// Unbounded when absent: set it below the host's own memory limit.
    #[arg(long, env = "WASMOP_GUEST_MEMORY_BUDGET", value_parser = bytes)]
    pub guest_memory_budget: Option<usize>,
    /// The bytes of the guest memory budget tenants' plugins (`WasmReconciler`s) may not reserve
    /// or borrow, kept for the operator's own plugins (`--plugin`, `--plugin-dir`) and their
    /// upgrades. 64Mi, at most a quarter of the budget, when absent; nothing without a budget.
    #[arg(long, env = "WASMOP_OPERATOR_RESERVED_MEMORY", value_parser = bytes, requires = "guest_memory_budget")]
    pub operator_reserved_memory: Option<usize>,
    /// The instances of the host's pool of 1000 tenants' plugins (`WasmReconciler`s) may not
    /// reserve, kept for the operator's own plugins and their upgrades; 128 when absent.
    #[arg(long, env = "WASMOP_OPERATOR_RESERVED_INSTANCES")]
    pub operator_reserved_instances: Option<u32>,
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
    /// Which plugins `/readyz` waits for: `operator` (plugin files, the plugin directory,
    /// `oci://` references and ClusterWasmReconcilers: each must run, or be loaded on a replica
    /// that does not lead), `all` (tenants' WasmReconcilers too) or `none`.
    #[arg(long, env = "WASMOP_READY_REQUIRES", value_enum, default_value_t)]
    pub ready_requires: ReadyRequires,
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
    /// How long a plugin may go without a reconcile, map or webhook call before it is
    /// suspended: its compiled code, warm instances and warm memory slots are given back, its
    /// informers and queue kept, and its next call wakes it (a few milliseconds, counted in
    /// `wasmop_plugin_wake_seconds_total`). `0s` never suspends.
    #[arg(long, env = "WASMOP_SUSPEND_IDLE_AFTER", default_value = "30s", value_parser = duration)]
    pub suspend_idle_after: Duration,
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

impl RunArgs {
    /// The limits of the plugin in `file`: the common limits with its own overrides.
    pub fn plugin_limits(&self, file: &Path) -> PluginLimits {
        let mut limits = self.limits.clone();
        if let Some(overrides) = self.entry(file) {
            overrides.apply(&mut limits);
        }
        limits
    }

    /// The arguments and environment variables the guests of the plugin in `file` start with:
    /// its config file entry's `args` and `env`.
    pub fn plugin_environment(&self, file: &Path) -> Environment {
        self.entry(file)
            .map(|overrides| overrides.environment().clone())
            .unwrap_or_default()
    }

    /// The controllers of the module in `file` its config file entry runs, each as a plugin of
    /// its own; none when the module is one plugin.
    pub fn plugin_controllers(&self, file: &Path) -> Vec<String> {
        self.entry(file)
            .map(|overrides| overrides.controllers().to_vec())
            .unwrap_or_default()
    }

    /// The config file entry of the plugin in `file`, if it has one.
    fn entry(&self, file: &Path) -> Option<&PluginOverrides> {
        self.overrides
            .iter()
            .find(|(f, _)| f == file)
            .map(|(_, overrides)| overrides)
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
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
        let memory_limits = std::iter::once(self.limits.memory_limit).chain(
            self.overrides
                .iter()
                .map(|(file, _)| self.plugin_limits(file).memory_limit),
        );
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
