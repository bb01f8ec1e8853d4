//! The host's Prometheus metrics, under controller-runtime's names and labels so its dashboards
//! work unchanged — reconcile counts, errors, durations and workers per controller, the
//! workqueue family per queue — plus wasmop's own per plugin and per cached kind.
//!
//! One [`Metrics`] per process owns the registry. Counters and histograms are updated as work
//! happens; gauges that describe state (queue depth, in-flight work, cache size, guest memory)
//! are read from their owners by [`Metrics::gather`] at scrape time, so they are never stale.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{
    CounterVec, Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::cache::Cache;
use crate::queue::{Queue, QueueMetrics};
use crate::runtime::{Plugin, Refusal, TrapKind};

/// controller-runtime's reconcile-time buckets.
const RECONCILE_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// client-go's workqueue buckets: 1 ns to 10 s, by factors of ten.
const QUEUE_BUCKETS: &[f64] = &[1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0];

/// How a reconcile ended, as controller-runtime labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Done.
    Success,
    /// Failed, terminally or not.
    Error,
    /// Asked to run again after a delay.
    RequeueAfter,
}

impl ReconcileResult {
    fn label(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Error => "error",
            ReconcileResult::RequeueAfter => "requeue_after",
        }
    }
}

/// Every metric family the host exports.
struct Families {
    reconcile_total: IntCounterVec,
    reconcile_errors: IntCounterVec,
    terminal_errors: IntCounterVec,
    reconcile_time: HistogramVec,
    reconcile_timeouts: IntCounterVec,
    reconcile_panics: IntCounterVec,
    active_workers: IntGaugeVec,
    max_concurrent: IntGaugeVec,
    queue_depth: IntGaugeVec,
    queue_adds: IntCounterVec,
    queue_retries: IntCounterVec,
    queue_latency: HistogramVec,
    work_duration: HistogramVec,
    unfinished_work: GaugeVec,
    longest_running: GaugeVec,
    leader: IntGaugeVec,
    plugin_info: IntGaugeVec,
    plugin_traps: IntCounterVec,
    plugin_refusals: IntCounterVec,
    plugin_load_failures: IntCounterVec,
    plugin_memory: IntGaugeVec,
    instantiations: IntCounterVec,
    instantiation_seconds: CounterVec,
    cache_objects: IntGaugeVec,
    cache_bytes: IntGaugeVec,
}

/// Registers a freshly built metric; the names and labels are constants, so failure is a bug.
fn registered<M: Collector + Clone + 'static>(
    registry: &Registry,
    built: prometheus::Result<M>,
) -> M {
    let metric = built.expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("unique metric");
    metric
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    registered(registry, IntCounterVec::new(Opts::new(name, help), labels))
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    registered(registry, IntGaugeVec::new(Opts::new(name, help), labels))
}

fn seconds(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    registered(registry, GaugeVec::new(Opts::new(name, help), labels))
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    registered(registry, HistogramVec::new(opts, labels))
}

impl Families {
    fn register(r: &Registry) -> Self {
        let c = &["controller"];
        let q = &["name", "controller"];
        Families {
            reconcile_total: counter(
                r,
                "controller_runtime_reconcile_total",
                "Total number of reconciliations per controller",
                &["controller", "result"],
            ),
            reconcile_errors: counter(
                r,
                "controller_runtime_reconcile_errors_total",
                "Total number of reconciliation errors per controller",
                c,
            ),
            terminal_errors: counter(
                r,
                "controller_runtime_terminal_reconcile_errors_total",
                "Total number of terminal reconciliation errors per controller",
                c,
            ),
            reconcile_time: histogram(
                r,
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                c,
                RECONCILE_BUCKETS,
            ),
            reconcile_timeouts: counter(
                r,
                "controller_runtime_reconcile_timeouts_total",
                "Total number of reconciliation timeouts per controller",
                c,
            ),
            reconcile_panics: counter(
                r,
                "controller_runtime_reconcile_panics_total",
                "Total number of reconciliation panics per controller",
                c,
            ),
            active_workers: gauge(
                r,
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
                c,
            ),
            max_concurrent: gauge(
                r,
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
                c,
            ),
            queue_depth: gauge(r, "workqueue_depth", "Current depth of workqueue", q),
            queue_adds: counter(
                r,
                "workqueue_adds_total",
                "Total number of adds handled by workqueue",
                q,
            ),
            queue_retries: counter(
                r,
                "workqueue_retries_total",
                "Total number of retries handled by workqueue",
                q,
            ),
            queue_latency: histogram(
                r,
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested",
                q,
                QUEUE_BUCKETS,
            ),
            work_duration: histogram(
                r,
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes",
                q,
                QUEUE_BUCKETS,
            ),
            unfinished_work: seconds(
                r,
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
                q,
            ),
            longest_running: seconds(
                r,
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running",
                q,
            ),
            leader: gauge(
                r,
                "leader_election_master_status",
                "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master",
                &["name"],
            ),
            plugin_info: gauge(
                r,
                "wasmop_plugin_info",
                "The loaded version of each plugin (always 1)",
                &["plugin", "version"],
            ),
            plugin_traps: counter(
                r,
                "wasmop_plugin_traps_total",
                "Guest traps per plugin, by kind (timeout, memory, panic, trap)",
                &["plugin", "kind"],
            ),
            plugin_refusals: counter(
                r,
                "wasmop_plugin_refusals_total",
                "What the host refused, dropped or slowed at a plugin's boundary, by reason (invalid, undeclared, write_throttled, event_throttled, event_dropped, log_throttled, requeue_throttled)",
                &["plugin", "reason"],
            ),
            plugin_load_failures: counter(
                r,
                "wasmop_plugin_load_failures_total",
                "Modules that failed to load or to take over, per plugin source",
                &["source"],
            ),
            plugin_memory: gauge(
                r,
                "wasmop_plugin_memory_high_water_bytes",
                "The largest linear memory any instance of the plugin has grown to",
                &["plugin"],
            ),
            instantiations: counter(
                r,
                "wasmop_plugin_instantiations_total",
                "Guest instances created per plugin",
                &["plugin"],
            ),
            instantiation_seconds: registered(
                r,
                CounterVec::new(
                    Opts::new(
                        "wasmop_plugin_instantiation_seconds_total",
                        "Time spent instantiating guests per plugin; divide by wasmop_plugin_instantiations_total for the mean",
                    ),
                    &["plugin"],
                ),
            ),
            cache_objects: gauge(
                r,
                "wasmop_cache_objects",
                "Objects in the shared informer cache per kind",
                &["group", "version", "kind"],
            ),
            cache_bytes: gauge(
                r,
                "wasmop_cache_json_bytes",
                "JSON bytes held by the shared informer cache per kind",
                &["group", "version", "kind"],
            ),
        }
    }
}

/// A plugin's totals as of the last scrape, so each scrape adds only what is new.
#[derive(Default)]
struct Exported {
    instantiations: u64,
    took: Duration,
    refused: [u64; Refusal::ALL.len()],
}

/// What the scrape reads from its owners.
#[derive(Default)]
struct Sources {
    queues: Vec<(String, Weak<Queue<crate::object::ObjectKey>>)>,
    /// Each plugin with the totals already exported.
    plugins: Vec<(Weak<Plugin>, Exported)>,
    cache: Weak<Cache>,
}

/// The process's metrics registry.
pub struct Metrics {
    registry: Registry,
    families: Families,
    sources: Mutex<Sources>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A registry with every family registered.
    pub fn new() -> Self {
        let registry = Registry::new();
        let families = Families::register(&registry);
        Metrics {
            registry,
            families,
            sources: Mutex::default(),
        }
    }

    /// The handle a controller reports through.
    pub fn controller(self: &Arc<Self>, name: &str) -> ControllerMetrics {
        ControllerMetrics {
            metrics: self.clone(),
            name: name.to_owned(),
        }
    }

    /// Reads the size of `cache`'s informers at every scrape while it lives.
    pub fn watch_cache(&self, cache: &Arc<Cache>) {
        self.sources().cache = Arc::downgrade(cache);
    }

    /// Counts a module from `source` that failed to load or to take over.
    pub fn load_failed(&self, source: &str) {
        self.families
            .plugin_load_failures
            .with_label_values(&[source])
            .inc();
    }

    /// Whether this process leads (`lease` names the Lease).
    pub fn set_leader(&self, lease: &str, leading: bool) {
        self.families
            .leader
            .with_label_values(&[lease])
            .set(i64::from(leading));
    }

    /// Refreshes the state gauges and renders every family in Prometheus text format.
    pub fn gather(&self) -> String {
        self.refresh();
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("text encoding of gathered metrics");
        String::from_utf8(out).expect("the text format is UTF-8")
    }

    fn sources(&self) -> std::sync::MutexGuard<'_, Sources> {
        self.sources.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn refresh(&self) {
        let mut sources = self.sources();
        let f = &self.families;
        sources.queues.retain(|(name, queue)| {
            let Some(queue) = queue.upgrade() else {
                return false;
            };
            let labels = [name.as_str(), name.as_str()];
            let (unfinished, longest) = queue.in_progress();
            f.queue_depth
                .with_label_values(&labels)
                .set(queue.len() as i64);
            f.unfinished_work
                .with_label_values(&labels)
                .set(unfinished.as_secs_f64());
            f.longest_running
                .with_label_values(&labels)
                .set(longest.as_secs_f64());
            true
        });
        sources.plugins.retain_mut(|(plugin, exported)| {
            let Some(plugin) = plugin.upgrade() else {
                return false;
            };
            let name = [plugin.name()];
            f.plugin_memory
                .with_label_values(&name)
                .set(plugin.memory_high_water() as i64);
            let (count, took) = plugin.instantiations();
            f.instantiations
                .with_label_values(&name)
                .inc_by(count.saturating_sub(exported.instantiations));
            f.instantiation_seconds
                .with_label_values(&name)
                .inc_by(took.saturating_sub(exported.took).as_secs_f64());
            (exported.instantiations, exported.took) = (count, took);
            for (index, (why, total)) in plugin.refusals().into_iter().enumerate() {
                f.plugin_refusals
                    .with_label_values(&[plugin.name(), why.label()])
                    .inc_by(total.saturating_sub(exported.refused[index]));
                exported.refused[index] = total;
            }
            true
        });
        f.cache_objects.reset();
        f.cache_bytes.reset();
        let Some(cache) = sources.cache.upgrade() else {
            return;
        };
        for informer in cache.kinds().iter().filter_map(|k| cache.running(k)) {
            let kind = informer.kind();
            let labels = [
                kind.group.as_str(),
                kind.version.as_str(),
                kind.kind.as_str(),
            ];
            let (objects, bytes) = informer.size();
            f.cache_objects
                .with_label_values(&labels)
                .set(objects as i64);
            f.cache_bytes.with_label_values(&labels).set(bytes as i64);
        }
    }
}

/// One controller's view of the metrics: reconcile results and its queue's hooks.
#[derive(Clone)]
pub struct ControllerMetrics {
    metrics: Arc<Metrics>,
    name: String,
}

impl ControllerMetrics {
    fn f(&self) -> &Families {
        &self.metrics.families
    }

    /// Registers the controller's plugin and queue and its worker count.
    pub fn started(
        &self,
        plugin: &Arc<Plugin>,
        queue: &Arc<Queue<crate::object::ObjectKey>>,
        workers: usize,
    ) {
        self.follow(plugin);
        self.f()
            .max_concurrent
            .with_label_values(&[&self.name])
            .set(workers as i64);
        self.f()
            .active_workers
            .with_label_values(&[&self.name])
            .set(0);
        self.zero();
        self.metrics
            .sources()
            .queues
            .push((self.name.clone(), Arc::downgrade(queue)));
    }

    /// Moves the plugin's series from version `old` to `new`.
    pub fn upgraded(&self, old: &Arc<Plugin>, new: &Arc<Plugin>) {
        self.stopped(old);
        self.follow(new);
        self.f()
            .max_concurrent
            .with_label_values(&[&self.name])
            .set(i64::from(new.max_concurrent_reconciles()));
    }

    /// Drops the series naming `plugin`'s version.
    pub fn stopped(&self, plugin: &Plugin) {
        let registration = plugin.registration();
        let _ = self
            .f()
            .plugin_info
            .remove_label_values(&[&registration.name, &registration.version]);
    }

    /// Reports `plugin`'s version and, from now on, its instances.
    fn follow(&self, plugin: &Arc<Plugin>) {
        let registration = plugin.registration();
        self.f()
            .plugin_info
            .with_label_values(&[&registration.name, &registration.version])
            .set(1);
        self.metrics
            .sources()
            .plugins
            .push((Arc::downgrade(plugin), Exported::default()));
    }

    /// Creates every series at zero, as controller-runtime does, so rates work from the start.
    fn zero(&self) {
        let f = self.f();
        let c = [self.name.as_str()];
        let q = [self.name.as_str(), self.name.as_str()];
        for result in [
            ReconcileResult::Success,
            ReconcileResult::Error,
            ReconcileResult::RequeueAfter,
        ] {
            f.reconcile_total
                .with_label_values(&[&self.name, result.label()])
                .reset();
        }
        for counter in [
            &f.reconcile_errors,
            &f.terminal_errors,
            &f.reconcile_timeouts,
            &f.reconcile_panics,
        ] {
            counter.with_label_values(&c).reset();
        }
        f.reconcile_time.with_label_values(&c);
        f.queue_adds.with_label_values(&q).reset();
        f.queue_retries.with_label_values(&q).reset();
        f.queue_latency.with_label_values(&q);
        f.work_duration.with_label_values(&q);
    }

    /// A worker took (`true`) or finished (`false`) a request.
    pub fn worker_busy(&self, busy: bool) {
        let gauge = self.f().active_workers.with_label_values(&[&self.name]);
        if busy { gauge.inc() } else { gauge.dec() }
    }

    /// A reconcile ended with `result` after `took`; `terminal` failures are not retried.
    pub fn reconciled(&self, result: ReconcileResult, took: Duration, terminal: bool) {
        let f = self.f();
        f.reconcile_total
            .with_label_values(&[&self.name, result.label()])
            .inc();
        f.reconcile_time
            .with_label_values(&[&self.name])
            .observe(took.as_secs_f64());
        if result == ReconcileResult::Error {
            f.reconcile_errors.with_label_values(&[&self.name]).inc();
        }
        if terminal {
            f.terminal_errors.with_label_values(&[&self.name]).inc();
        }
    }

    /// The guest trapped.
    pub fn trapped(&self, kind: TrapKind) {
        let f = self.f();
        let label = kind.to_string();
        f.plugin_traps
            .with_label_values(&[&self.name, &label])
            .inc();
        match kind {
            TrapKind::Timeout => f.reconcile_timeouts.with_label_values(&[&self.name]).inc(),
            TrapKind::Panic => f.reconcile_panics.with_label_values(&[&self.name]).inc(),
            TrapKind::Memory | TrapKind::Trap => {}
        }
    }
}

impl QueueMetrics for ControllerMetrics {
    fn added(&self) {
        self.f()
            .queue_adds
            .with_label_values(&[&self.name, &self.name])
            .inc();
    }

    fn retried(&self) {
        self.f()
            .queue_retries
            .with_label_values(&[&self.name, &self.name])
            .inc();
    }

    fn depth(&self, depth: usize) {
        self.f()
            .queue_depth
            .with_label_values(&[&self.name, &self.name])
            .set(depth as i64);
    }

    fn queued_for(&self, latency: Duration) {
        self.f()
            .queue_latency
            .with_label_values(&[&self.name, &self.name])
            .observe(latency.as_secs_f64());
    }

    fn worked_for(&self, duration: Duration) {
        self.f()
            .work_duration
            .with_label_values(&[&self.name, &self.name])
            .observe(duration.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_render_under_controller_runtime_names() {
        let metrics = Arc::new(Metrics::new());
        let controller = metrics.controller("webapp");
        controller.reconciled(ReconcileResult::Success, Duration::from_millis(3), false);
        controller.reconciled(ReconcileResult::Error, Duration::from_millis(5), true);
        controller.trapped(TrapKind::Timeout);
        controller.added();
        metrics.set_leader("wasmop", true);
        let text = metrics.gather();
        for line in [
            r#"controller_runtime_reconcile_total{controller="webapp",result="success"} 1"#,
            r#"controller_runtime_reconcile_total{controller="webapp",result="error"} 1"#,
            r#"controller_runtime_reconcile_errors_total{controller="webapp"} 1"#,
            r#"controller_runtime_terminal_reconcile_errors_total{controller="webapp"} 1"#,
            r#"controller_runtime_reconcile_timeouts_total{controller="webapp"} 1"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="webapp"} 2"#,
            r#"workqueue_adds_total{controller="webapp",name="webapp"} 1"#,
            r#"wasmop_plugin_traps_total{kind="timeout",plugin="webapp"} 1"#,
            r#"leader_election_master_status{name="wasmop"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
