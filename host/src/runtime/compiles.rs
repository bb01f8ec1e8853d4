//! The compile queue: at most `--max-concurrent-compiles` compiles run at once, the rest wait in
//! line, and the operator's plugins (files, the plugin directory) go before any tenant's
//! (WasmReconcilers), so a flood of tenant modules never keeps the operator's from loading.
//! A load served from the compile cache compiles nothing and never waits. Its depth and what it
//! runs are Prometheus gauges read at scrape time.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGauge, IntGaugeVec, Opts};

use super::gauges::{collected, count};

/// Who asks for a compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asker {
    /// The operator's own plugins: compiled first.
    Operator,
    /// A tenant's WasmReconciler.
    Tenant,
}

/// How many compiles run and wait now.
#[derive(Debug, Default)]
struct Line {
    running: usize,
    operators: usize,
    tenants: usize,
}

/// The compile queue of one runtime. Blocking: take a turn off the async runtime.
#[derive(Debug)]
pub(crate) struct CompileQueue {
    limit: usize,
    line: Mutex<Line>,
    turn: Condvar,
}

/// A running compile's turn, given back when dropped.
pub(crate) struct Turn<'a> {
    queue: &'a CompileQueue,
}

impl CompileQueue {
    /// A queue running at most `limit` compiles at once (at least one).
    pub(crate) fn new(limit: usize) -> Self {
        CompileQueue {
            limit: limit.max(1),
            line: Mutex::default(),
            turn: Condvar::new(),
        }
    }

    /// Waits until `asker` may compile: a free slot, and for a tenant no operator waiting.
    pub(crate) fn turn(&self, asker: Asker) -> Turn<'_> {
        let mut line = self.line();
        *waiting(&mut line, asker) += 1;
        let mut line = self
            .turn
            .wait_while(line, |line| {
                line.running >= self.limit || (asker == Asker::Tenant && line.operators > 0)
            })
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *waiting(&mut line, asker) -= 1;
        line.running += 1;
        Turn { queue: self }
    }

    fn line(&self) -> MutexGuard<'_, Line> {
        self.line
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn waiting(line: &mut Line, asker: Asker) -> &mut usize {
    match asker {
        Asker::Operator => &mut line.operators,
        Asker::Tenant => &mut line.tenants,
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.queue.line().running -= 1;
        self.queue.turn.notify_all();
    }
}

/// The compile queue as gauges: its limit, the compiles running and those waiting by asker.
#[derive(Clone)]
pub struct CompileGauges {
    queue: Arc<CompileQueue>,
    limit: IntGauge,
    running: IntGauge,
    waiting: IntGaugeVec,
}

impl CompileGauges {
    pub(super) fn new(queue: Arc<CompileQueue>) -> Self {
        let opts = |name: &str, help: &str| Opts::new(name, help);
        let gauge = |name, help| IntGauge::with_opts(opts(name, help)).expect("a constant metric");
        CompileGauges {
            queue,
            limit: gauge(
                "wasmop_compiles_limit",
                "The most compiles that run at once (--max-concurrent-compiles)",
            ),
            running: gauge("wasmop_compiles_running", "Compiles running now"),
            waiting: IntGaugeVec::new(
                opts(
                    "wasmop_compiles_waiting",
                    "Compiles waiting for their turn, by who asked (operator plugins go first)",
                ),
                &["asker"],
            )
            .expect("a constant metric"),
        }
    }
}

impl Collector for CompileGauges {
    fn desc(&self) -> Vec<&Desc> {
        [self.limit.desc(), self.running.desc(), self.waiting.desc()].concat()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let line = self.queue.line();
        self.limit.set(count(self.queue.limit));
        self.running.set(count(line.running));
        let waiting = |asker: &str, n| self.waiting.with_label_values(&[asker]).set(count(n));
        waiting("operator", line.operators);
        waiting("tenant", line.tenants);
        drop(line);
        collected(&[&self.limit, &self.running, &self.waiting])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_waiting_operator_compile_goes_before_every_waiting_tenant() {
        let queue = Arc::new(CompileQueue::new(1));
        let first = queue.turn(Asker::Tenant);
        let (order, served) = mpsc::channel();
        let spawn = |asker, queue: Arc<CompileQueue>, order: mpsc::Sender<Asker>| {
            std::thread::spawn(move || {
                let _turn = queue.turn(asker);
                order.send(asker).unwrap();
            })
        };
        let tenants: Vec<_> = (0..3)
            .map(|_| spawn(Asker::Tenant, queue.clone(), order.clone()))
            .collect();
        while queue.line().tenants < 3 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let operator = spawn(Asker::Operator, queue.clone(), order.clone());
        while queue.line().operators < 1 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let gauges = CompileGauges::new(queue.clone());
        let values: Vec<f64> = gauges
            .collect()
            .iter()
            .flat_map(|f| f.get_metric().iter().map(|m| m.get_gauge().get_value()))
            .collect();
        assert_eq!(
            values,
            [1.0, 1.0, 1.0, 3.0],
            "limit, running, operator, tenant"
        );
        drop(first);
        operator.join().unwrap();
        tenants.into_iter().for_each(|t| t.join().unwrap());
        drop(order);
        let order: Vec<Asker> = served.iter().collect();
        assert_eq!(order[0], Asker::Operator, "{order:?}");
        assert_eq!(order.len(), 4);
        assert_eq!(queue.line().running, 0);
    }
}
