//! The limits every plugin runs under, each a flag; a plugin may override those in
//! [`super::OVERRIDES`].

use std::path::PathBuf;
use std::time::Duration;

use wasmop_contract::{FailurePolicy, GuestLimits, Rate};

use super::{bytes, duration, positive, rate, webhook_timeout};

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
