//! The host's Prometheus metrics, under controller-runtime's names and labels so its dashboards
//! work unchanged — reconcile counts, errors, durations and workers per controller, the
//! workqueue family per queue — plus wasmop's own per plugin and per cached kind.
//!
//! One [`Metrics`] per process owns the registry. Counters and histograms are counted as work
//! happens, through the handles of their owners ([`ControllerMetrics`], [`PluginMetrics`]), so
//! a plugin unloaded between two scrapes loses none of its counts. Gauges that describe state
//! (a queue's depth and in-flight work, the cache's size) are collectors their owners register
//! while they live ([`Metrics::register`]): a scrape reads them and changes nothing, and their
//! series leave with their owner. This module knows none of those owners.
//!
//! Imports: nothing of the host; every part reports to it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus::core::{Collector, MetricVec, MetricVecBuilder};
use prometheus::{
    CounterVec, Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

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
    queue_adds: IntCounterVec,
    queue_retries: IntCounterVec,
    queue_latency: HistogramVec,
    work_duration: HistogramVec,
    leader: IntGaugeVec,
    plugin_info: IntGaugeVec,
    plugin_traps: IntCounterVec,
    plugin_refusals: IntCounterVec,
    plugin_load_failures: IntCounterVec,
    plugin_memory: IntGaugeVec,
    instantiations: IntCounterVec,
    instantiation_seconds: CounterVec,
    plugin_suspended: IntGaugeVec,
    suspensions: IntCounterVec,
    wakes: IntCounterVec,
    wake_seconds: CounterVec,
    webhook_requests: IntCounterVec,
    webhook_latency: HistogramVec,
    webhook_in_flight: IntGaugeVec,
    webhook_failures: IntCounterVec,
    webhook_denials: IntCounterVec,
    review_refusals: IntCounterVec,
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
            plugin_suspended: gauge(
                r,
                "wasmop_plugin_suspended",
                "1 while the plugin is suspended: idle past --suspend-idle-after, its code and instances given back until its next call",
                &["plugin"],
            ),
            suspensions: counter(
                r,
                "wasmop_plugin_suspensions_total",
                "Times the plugin was suspended for being idle",
                &["plugin"],
            ),
            wakes: counter(
                r,
                "wasmop_plugin_wakes_total",
                "Times the suspended plugin was woken (its code mapped and linked again) for a call",
                &["plugin"],
            ),
            wake_seconds: registered(
                r,
                CounterVec::new(
                    Opts::new(
                        "wasmop_plugin_wake_seconds_total",
                        "Time spent waking the suspended plugin; divide by wasmop_plugin_wakes_total for the mean",
                    ),
                    &["plugin"],
                ),
            ),
            webhook_requests: counter(
                r,
                "controller_runtime_webhook_requests_total",
                "Total number of admission requests by HTTP status code",
                &["webhook", "code"],
            ),
            webhook_latency: histogram(
                r,
                "controller_runtime_webhook_latency_seconds",
                "Histogram of the latency of processing admission requests",
                &["webhook"],
                prometheus::DEFAULT_BUCKETS,
            ),
            webhook_in_flight: gauge(
                r,
                "controller_runtime_webhook_requests_in_flight",
                "Current number of admission requests being served",
                &["webhook"],
            ),
            webhook_failures: counter(
                r,
                "wasmop_webhook_plugin_failures_total",
                "Webhook calls the plugin failed to answer (trap, timeout, garbage), answered by its failure policy",
                &["webhook", "failure_policy"],
            ),
            webhook_denials: counter(
                r,
                "wasmop_webhook_denials_total",
                "Admission requests refused: by the plugin's verdict, or an object nested too deep to review (a failing plugin's failure policy counts in wasmop_webhook_plugin_failures_total)",
                &["webhook"],
            ),
            review_refusals: counter(
                r,
                "wasmop_http_review_refusals_total",
                "Requests to /metrics or /plugins refused (429) without asking the apiserver to review their bearer token, by reason (rate, concurrency)",
                &["reason"],
            ),
        }
    }
}

/// A collector registered while its owner lives; dropping this unregisters it.
pub struct Collecting {
    registry: Registry,
    collector: Option<Box<dyn Collector>>,
}

impl Drop for Collecting {
    fn drop(&mut self) {
        if let Some(collector) = self.collector.take() {
            let _ = self.registry.unregister(collector);
        }
    }
}

/// The process's metrics registry.
pub struct Metrics {
    registry: Registry,
    families: Families,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A registry with every family registered, and the process's own (`process_*`: resident
    /// memory, CPU seconds, open files), as controller-runtime's dashboards read them.
    pub fn new() -> Self {
        let registry = Registry::new();
        let families = Families::register(&registry);
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("the process collector registers once per registry");
        Metrics { registry, families }
    }

    /// The handle a controller reports through.
    pub fn controller(self: &Arc<Self>, name: &str) -> ControllerMetrics {
        ControllerMetrics {
            metrics: self.clone(),
            name: name.to_owned(),
        }
    }

    /// The handle a plugin's versions count through, one series per plugin name.
    pub fn plugin(self: &Arc<Self>, name: &str) -> PluginMetrics {
        PluginMetrics {
            metrics: self.clone(),
            name: name.to_owned(),
        }
    }

    /// Collects `collector` at every scrape until the returned guard is dropped. Its metric
    /// names and label names must agree with every other collector's of the same names.
    pub fn register<C: Collector + Clone + 'static>(
        &self,
        collector: C,
    ) -> Result<Collecting, prometheus::Error> {
        self.registry.register(Box::new(collector.clone()))?;
        Ok(Collecting {
            registry: self.registry.clone(),
            collector: Some(Box::new(collector)),
        })
    }

    /// Counts a module from `source` that failed to load or to take over.
    pub fn load_failed(&self, source: &str) {
        self.families
            .plugin_load_failures
            .with_label_values(&[source])
            .inc();
    }

    /// Removes every series of plugin or controller `name` (and of its webhooks' paths), once
    /// no loaded plugin has that name: a deleted plugin's series leave `/metrics` with it.
    pub fn forget_plugin(&self, name: &str) {
        let f = &self.families;
        let named = |label: &'static str| move |labels: &Labels| labels.get(label) == Some(&name);
        let plugin = named("plugin");
        let controller = named("controller");
        let webhook = |labels: &Labels| {
            let path = labels.get("webhook").and_then(|p| p.strip_prefix('/'));
            path.and_then(|p| p.split_once('/'))
                .is_some_and(|(_, p)| p == name)
        };
        forget(&f.plugin_info, plugin);
        forget(&f.plugin_traps, plugin);
        forget(&f.plugin_refusals, plugin);
        forget(&f.plugin_memory, plugin);
        forget(&f.instantiations, plugin);
        forget(&f.instantiation_seconds, plugin);
        forget(&f.plugin_suspended, plugin);
        forget(&f.suspensions, plugin);
        forget(&f.wakes, plugin);
        forget(&f.wake_seconds, plugin);
        forget(&f.reconcile_total, controller);
        forget(&f.reconcile_errors, controller);
        forget(&f.terminal_errors, controller);
        forget(&f.reconcile_time, controller);
        forget(&f.reconcile_timeouts, controller);
        forget(&f.reconcile_panics, controller);
        forget(&f.active_workers, controller);
        forget(&f.max_concurrent, controller);
        forget(&f.queue_adds, controller);
        forget(&f.queue_retries, controller);
        forget(&f.queue_latency, controller);
        forget(&f.work_duration, controller);
        forget(&f.webhook_requests, webhook);
        forget(&f.webhook_latency, webhook);
        forget(&f.webhook_in_flight, webhook);
        forget(&f.webhook_failures, webhook);
        forget(&f.webhook_denials, webhook);
    }

    /// Removes the load failure series of `source`, once it is gone.
    pub fn forget_source(&self, source: &str) {
        let failures = &self.families.plugin_load_failures;
        forget(failures, |labels| labels.get("source") == Some(&source));
    }

    /// Whether this process leads (`lease` names the Lease).
    pub fn set_leader(&self, lease: &str, leading: bool) {
        self.families
            .leader
            .with_label_values(&[lease])
            .set(i64::from(leading));
    }

    /// Counts a request whose bearer token was not reviewed, for `reason` (`rate` or
    /// `concurrency`).
    pub fn review_refused(&self, reason: &str) {
        self.families
            .review_refusals
            .with_label_values(&[reason])
            .inc();
    }

    /// Counts a request to `webhook` (its path) in flight until the returned guard is answered
    /// or dropped.
    pub fn webhook_request(self: &Arc<Self>, webhook: &str) -> WebhookRequest {
        self.families
            .webhook_in_flight
            .with_label_values(&[webhook])
            .inc();
        WebhookRequest {
            metrics: self.clone(),
            webhook: webhook.to_owned(),
            started: Instant::now(),
        }
    }

    /// Renders every family and registered collector in Prometheus text format.
    pub fn gather(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("text encoding of gathered metrics");
        String::from_utf8(out).expect("the text format is UTF-8")
    }
}

/// A webhook request in flight, counted in `controller_runtime_webhook_requests_in_flight`
/// while it lives.
pub struct WebhookRequest {
    metrics: Arc<Metrics>,
    webhook: String,
    started: Instant,
}

impl WebhookRequest {
    /// Counts the answer: its HTTP status, its latency, the failure policy that answered for
    /// a plugin that failed, if one did, and whether it refused the admission.
    pub fn answered(self, code: u16, failure_policy: Option<&str>, denied: bool) {
        let families = &self.metrics.families;
        let webhook = [self.webhook.as_str()];
        families
            .webhook_latency
            .with_label_values(&webhook)
            .observe(self.started.elapsed().as_secs_f64());
        families
            .webhook_requests
            .with_label_values(&[self.webhook.as_str(), &code.to_string()])
            .inc();
        if let Some(policy) = failure_policy {
            families
                .webhook_failures
                .with_label_values(&[self.webhook.as_str(), policy])
                .inc();
        }
        if denied {
            families.webhook_denials.with_label_values(&webhook).inc();
        }
    }
}

impl Drop for WebhookRequest {
    fn drop(&mut self) {
        self.metrics
            .families
            .webhook_in_flight
            .with_label_values(&[self.webhook.as_str()])
            .dec();
    }
}

/// A series' labels, by name.
type Labels<'a> = std::collections::HashMap<&'a str, &'a str>;

/// Removes every series of `family` whose labels `matches`.
fn forget<T: MetricVecBuilder>(family: &MetricVec<T>, matches: impl Fn(&Labels) -> bool) {
    for collected in family.collect() {
        for series in collected.get_metric() {
            let labels: Labels = series
                .get_label()
                .iter()
                .map(|l| (l.name(), l.value()))
                .collect();
            if matches(&labels) {
                let _ = family.remove(&labels);
            }
        }
    }
}

/// One plugin's counts: instances created, refusals at its boundary, memory reached.
#[derive(Clone)]
pub struct PluginMetrics {
    metrics: Arc<Metrics>,
    name: String,
}

impl PluginMetrics {
    /// An instance was created in `took`.
    pub fn instantiated(&self, took: Duration) {
        let f = &self.metrics.families;
        f.instantiations.with_label_values(&[&self.name]).inc();
        f.instantiation_seconds
            .with_label_values(&[&self.name])
            .inc_by(took.as_secs_f64());
    }

    /// The plugin was suspended for being idle.
    pub fn suspended(&self) {
        let f = &self.metrics.families;
        f.suspensions.with_label_values(&[&self.name]).inc();
        f.plugin_suspended.with_label_values(&[&self.name]).set(1);
    }

    /// The suspended plugin was woken in `took`.
    pub fn woke(&self, took: Duration) {
        let f = &self.metrics.families;
        f.wakes.with_label_values(&[&self.name]).inc();
        f.wake_seconds
            .with_label_values(&[&self.name])
            .inc_by(took.as_secs_f64());
        f.plugin_suspended.with_label_values(&[&self.name]).set(0);
    }

    /// The host refused, dropped or slowed something at the plugin's boundary, for `reason`.
    pub fn refused(&self, reason: &str) {
        self.metrics
            .families
            .plugin_refusals
            .with_label_values(&[&self.name, reason])
            .inc();
    }

    /// An instance's linear memory reached `bytes`; the gauge keeps the largest.
    pub fn memory(&self, bytes: usize) {
        let gauge = self
            .metrics
            .families
            .plugin_memory
            .with_label_values(&[&self.name]);
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        if bytes > gauge.get() {
            gauge.set(bytes);
        }
    }
}

/// One controller's view of the metrics: reconcile results and its queue's counts.
#[derive(Clone)]
pub struct ControllerMetrics {
    metrics: Arc<Metrics>,
    name: String,
}

impl ControllerMetrics {
    fn f(&self) -> &Families {
        &self.metrics.families
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process's metrics, to register the controller's collectors with.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Reports the controller's plugin `version` and its worker count.
    pub fn started(&self, version: &str, workers: usize) {
        self.f()
            .plugin_info
            .with_label_values(&[&self.name, version])
            .set(1);
        self.f()
            .max_concurrent
            .with_label_values(&[&self.name])
            .set(workers as i64);
        self.f()
            .active_workers
            .with_label_values(&[&self.name])
            .set(0);
        self.zero();
    }

    /// Moves the plugin's version series from `old` to `new`, with `workers` workers.
    pub fn upgraded(&self, old: &str, new: &str, workers: usize) {
        self.stopped(old);
        self.f()
            .plugin_info
            .with_label_values(&[&self.name, new])
            .set(1);
        self.f()
            .max_concurrent
            .with_label_values(&[&self.name])
            .set(workers as i64);
    }

    /// Drops the series naming the plugin's `version`.
    pub fn stopped(&self, version: &str) {
        let _ = self
            .f()
            .plugin_info
            .remove_label_values(&[&self.name, version]);
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
                .with_label_values(&[&self.name, result.label()]);
        }
        for counter in [
            &f.reconcile_errors,
            &f.terminal_errors,
            &f.reconcile_timeouts,
            &f.reconcile_panics,
        ] {
            counter.with_label_values(&c);
        }
        f.reconcile_time.with_label_values(&c);
        f.queue_adds.with_label_values(&q);
        f.queue_retries.with_label_values(&q);
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

    /// The guest trapped, of `kind` (timeout, memory, panic, trap).
    pub fn trapped(&self, kind: &str) {
        let f = self.f();
        f.plugin_traps.with_label_values(&[&self.name, kind]).inc();
        match kind {
            "timeout" => f.reconcile_timeouts.with_label_values(&[&self.name]).inc(),
            "panic" => f.reconcile_panics.with_label_values(&[&self.name]).inc(),
            _ => {}
        }
    }

    /// A key was added to the queue (merged adds count too).
    pub fn queue_added(&self) {
        self.queue_counter(&self.f().queue_adds);
    }

    /// A key was scheduled for a rate-limited retry.
    pub fn queue_retried(&self) {
        self.queue_counter(&self.f().queue_retries);
    }

    fn queue_counter(&self, family: &IntCounterVec) {
        family.with_label_values(&[&self.name, &self.name]).inc();
    }

    /// A key waited `latency` between being added and being handed out.
    pub fn queued_for(&self, latency: Duration) {
        self.f()
            .queue_latency
            .with_label_values(&[&self.name, &self.name])
            .observe(latency.as_secs_f64());
    }

    /// A worker held a key for `duration`.
    pub fn worked_for(&self, duration: Duration) {
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
    fn a_forgotten_plugin_leaves_no_series_and_its_neighbour_keeps_all_of_its() {
        let metrics = Arc::new(Metrics::new());
        for name in ["gone", "kept"] {
            let controller = metrics.controller(name);
            controller.started("0.1.0", 2);
            controller.reconciled(ReconcileResult::Success, Duration::from_millis(3), false);
            controller.trapped("panic");
            metrics.plugin(name).refused("rate");
            metrics.plugin(name).instantiated(Duration::from_millis(1));
            metrics.plugin(name).memory(1 << 20);
            metrics
                .webhook_request(&format!("/validate/{name}"))
                .answered(500, Some("Fail"), false);
            metrics
                .webhook_request(&format!("/validate/{name}"))
                .answered(200, None, true);
            metrics.load_failed(&format!("clusterwasmreconciler/{name}"));
        }
        let series = |text: &str, name: &str| {
            let named = format!("{name}\"");
            let lines = text.lines().filter(|l| !l.starts_with('#'));
            lines.filter(|l| l.contains(&named)).count()
        };
        let before = metrics.gather();
        metrics.forget_plugin("gone");
        metrics.forget_source("clusterwasmreconciler/gone");
        let after = metrics.gather();
        assert!(series(&before, "gone") > 20, "{before}");
        assert_eq!(series(&after, "gone"), 0, "{after}");
        assert_eq!(series(&after, "kept"), series(&before, "kept"));
    }

    #[test]
    fn families_render_under_controller_runtime_names() {
        let metrics = Arc::new(Metrics::new());
        let controller = metrics.controller("webapp");
        controller.reconciled(ReconcileResult::Success, Duration::from_millis(3), false);
        controller.reconciled(ReconcileResult::Error, Duration::from_millis(5), true);
        controller.trapped("timeout");
        controller.queue_added();
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
        let resident = text
            .lines()
            .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
            .and_then(|v| v.parse::<f64>().ok());
        assert!(
            resident.is_some_and(|bytes| bytes > 1e6),
            "no resident memory in\n{text}"
        );
    }
}
