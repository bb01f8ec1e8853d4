//! The WasmReconciler install line: at most `--max-concurrent-installs` installs (fetch, compile,
//! load) run at once and the rest wait in arrival order, so however many objects tenants apply at
//! once, the host holds at most that many modules (each at most
//! [`MAX_MODULE_BYTES`](crate::distribution::download::MAX_MODULE_BYTES)) and runs that many fetches. Its depth
//! and what it runs are Prometheus gauges read at scrape time; installs that failed are counted
//! by their status reason (a fixed set, so the series are bounded whatever tenants apply).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounterVec, IntGauge, Opts};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::runtime::{collected, count};

/// The install line of one WasmReconciler source.
#[derive(Debug)]
pub(crate) struct Installs {
    limit: usize,
    slots: Semaphore,
    waiting: AtomicUsize,
    failures: IntCounterVec,
}

/// A running install's slot, given back when dropped.
pub(crate) struct Slot<'a> {
    _permit: SemaphorePermit<'a>,
}

impl Installs {
    /// A line running at most `limit` installs at once (at least one).
    pub(crate) fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        let failures = Opts::new(
            "wasmop_wasmreconciler_install_failures_total",
            "WasmReconciler installs that failed, by the reason their status gives (SourceRefused, ModuleTooLarge, Exhausted, NameTaken, ...)",
        );
        Installs {
            limit,
            slots: Semaphore::new(limit),
            waiting: AtomicUsize::new(0),
            failures: IntCounterVec::new(failures, &["reason"]).expect("a constant metric"),
        }
    }

    /// Counts an install that failed for `reason`, a status reason.
    pub(crate) fn failed(&self, reason: &'static str) {
        self.failures.with_label_values(&[reason]).inc();
    }

    /// Waits for a free slot, after every install that asked before.
    pub(crate) async fn slot(&self) -> Slot<'_> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let permit = self.slots.acquire().await;
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        Slot {
            _permit: permit.expect("the install semaphore is never closed"),
        }
    }

    fn running(&self) -> usize {
        self.limit - self.slots.available_permits()
    }
}

/// The install line as metrics: its limit, the installs running and those waiting, and the
/// installs that failed by reason.
#[derive(Clone)]
pub struct InstallGauges {
    installs: Arc<Installs>,
    limit: IntGauge,
    running: IntGauge,
    waiting: IntGauge,
}

impl InstallGauges {
    pub(crate) fn new(installs: Arc<Installs>) -> Self {
        let gauge = |name: &str, help: &str| {
            IntGauge::with_opts(Opts::new(name, help)).expect("a constant metric")
        };
        InstallGauges {
            installs,
            limit: gauge(
                "wasmop_wasmreconciler_installs_limit",
                "The most WasmReconciler installs (fetch, compile, load) that run at once (--max-concurrent-installs)",
            ),
            running: gauge(
                "wasmop_wasmreconciler_installs_running",
                "WasmReconciler installs fetching, compiling or loading now",
            ),
            waiting: gauge(
                "wasmop_wasmreconciler_installs_waiting",
                "WasmReconciler installs waiting for a slot, their modules not yet fetched",
            ),
        }
    }
}

impl Collector for InstallGauges {
    fn desc(&self) -> Vec<&Desc> {
        let gauges = [self.limit.desc(), self.running.desc(), self.waiting.desc()];
        [gauges.concat(), self.installs.failures.desc()].concat()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.limit.set(count(self.installs.limit));
        self.running.set(count(self.installs.running()));
        let waiting = self.installs.waiting.load(Ordering::Relaxed);
        self.waiting.set(count(waiting));
        let mut families = collected(&[&self.limit, &self.running, &self.waiting]);
        families.extend(self.installs.failures.collect());
        families
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(gauges: &InstallGauges) -> Vec<f64> {
        gauges
            .collect()
            .iter()
            .filter(|f| f.name().starts_with("wasmop_wasmreconciler_installs_"))
            .map(|f| f.get_metric()[0].get_gauge().get_value())
            .collect()
    }

    #[tokio::test]
    async fn installs_past_the_limit_wait_for_a_slot() {
        let installs = Arc::new(Installs::new(2));
        let gauges = InstallGauges::new(installs.clone());
        let (first, second) = (installs.slot().await, installs.slot().await);
        let (done, mut order) = tokio::sync::mpsc::channel(3);
        let waiters: Vec<_> = (0..3)
            .map(|n| {
                let (installs, done) = (installs.clone(), done.clone());
                tokio::spawn(async move {
                    let _slot = installs.slot().await;
                    done.send(n).await.unwrap();
                })
            })
            .collect();
        while installs.waiting.load(Ordering::Relaxed) < 3 {
            tokio::task::yield_now().await;
        }
        assert_eq!(values(&gauges), [2.0, 2.0, 3.0], "limit, running, waiting");
        drop((first, second));
        for waiter in waiters {
            waiter.await.unwrap();
        }
        let mut served = Vec::new();
        while let Ok(n) = order.try_recv() {
            served.push(n);
        }
        assert_eq!(served.len(), 3);
        assert_eq!(values(&gauges), [2.0, 0.0, 0.0]);
    }

    #[test]
    fn failed_installs_are_counted_by_reason() {
        let installs = Arc::new(Installs::new(1));
        let gauges = InstallGauges::new(installs.clone());
        installs.failed("ModuleTooLarge");
        installs.failed("ModuleTooLarge");
        installs.failed("Exhausted");
        let families = gauges.collect();
        let failures = families
            .iter()
            .find(|f| f.name() == "wasmop_wasmreconciler_install_failures_total")
            .expect("counted");
        let mut counted: Vec<(String, f64)> = failures
            .get_metric()
            .iter()
            .map(|m| {
                let reason = m.get_label()[0].value().to_owned();
                (reason, m.get_counter().get_value())
            })
            .collect();
        counted.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            counted,
            [
                ("Exhausted".to_owned(), 1.0),
                ("ModuleTooLarge".to_owned(), 2.0)
            ]
        );
    }
}
