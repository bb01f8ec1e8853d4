//! The controller's part of the metrics: its queue's counts go to its [`ControllerMetrics`] as
//! they happen, and its queue's state — client-go's depth, unfinished work and longest running
//! processor — is a collector registered while the controller lives, read at scrape time.

use std::sync::{Arc, Weak};
use std::time::Duration;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Gauge, IntGauge, Opts};

use crate::metrics::ControllerMetrics;
use crate::queue::{Queue, QueueMetrics};
use wasmop_contract::object::ObjectKey;

impl QueueMetrics for ControllerMetrics {
    fn added(&self) {
        self.queue_added();
    }

    fn retried(&self) {
        self.queue_retried();
    }

    fn queued_for(&self, latency: Duration) {
        ControllerMetrics::queued_for(self, latency);
    }

    fn worked_for(&self, duration: Duration) {
        ControllerMetrics::worked_for(self, duration);
    }
}

/// One controller's queue gauges, labelled `name` and `controller` as client-go's are.
#[derive(Clone)]
pub(super) struct QueueGauges {
    queue: Weak<Queue<ObjectKey>>,
    depth: IntGauge,
    unfinished: Gauge,
    longest: Gauge,
}

impl QueueGauges {
    /// Gauges of `queue`, the queue of controller `name`.
    pub(super) fn new(name: &str, queue: &Arc<Queue<ObjectKey>>) -> Self {
        let opts = |metric: &str, help: &str| {
            Opts::new(metric, help)
                .const_label("name", name)
                .const_label("controller", name)
        };
        let valid = "constant metric names and labels";
        QueueGauges {
            queue: Arc::downgrade(queue),
            depth: IntGauge::with_opts(opts("workqueue_depth", "Current depth of workqueue"))
                .expect(valid),
            unfinished: Gauge::with_opts(opts(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
            ))
            .expect(valid),
            longest: Gauge::with_opts(opts(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running",
            ))
            .expect(valid),
        }
    }
}

impl Collector for QueueGauges {
    fn desc(&self) -> Vec<&Desc> {
        [
            self.depth.desc(),
            self.unfinished.desc(),
            self.longest.desc(),
        ]
        .concat()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let Some(queue) = self.queue.upgrade() else {
            return Vec::new();
        };
        let (unfinished, longest) = queue.in_progress();
        self.depth
            .set(i64::try_from(queue.len()).unwrap_or(i64::MAX));
        self.unfinished.set(unfinished.as_secs_f64());
        self.longest.set(longest.as_secs_f64());
        [
            self.depth.collect(),
            self.unfinished.collect(),
            self.longest.collect(),
        ]
        .concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use crate::queue::RateLimits;

    #[test]
    fn queue_gauges_read_the_queue_while_the_controller_lives_and_leave_with_it() {
        let metrics = Arc::new(Metrics::new());
        let controller = metrics.controller("webapp");
        let queue = Arc::new(Queue::new(
            RateLimits::default(),
            Arc::new(controller.clone()),
        ));
        queue.add(ObjectKey::new("a", "one"), "object added");
        queue.add(ObjectKey::new("a", "two"), "object added");
        let registered = metrics
            .register(QueueGauges::new("webapp", &queue))
            .unwrap();
        let depth = r#"workqueue_depth{controller="webapp",name="webapp"} 2"#;
        let workload = |text: String| -> Vec<String> {
            let lines = text.lines().filter(|l| !l.contains("process_"));
            lines.map(str::to_owned).collect()
        };
        let first = metrics.gather();
        assert!(first.contains(depth), "{first}");
        assert_eq!(
            workload(metrics.gather()),
            workload(first),
            "a scrape changes nothing"
        );
        drop(registered);
        let after = metrics.gather();
        assert!(!after.contains("workqueue_depth"), "{after}");
        assert!(
            after.contains(r#"workqueue_adds_total{controller="webapp",name="webapp"} 2"#),
            "the counts stay: {after}"
        );
    }
}
