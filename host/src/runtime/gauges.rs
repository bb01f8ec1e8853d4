//! The guest memory budget as Prometheus gauges — the budget, what the plugins' shares reserve
//! of it and what all instances hold — read at scrape time by a collector registered while the
//! manager lives. An unbounded budget has no budget gauge, so no alert compares against it.

use std::sync::Arc;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGauge, Opts};

use super::memory::GuestMemory;

/// The guest memory gauges of one runtime.
#[derive(Clone)]
pub struct MemoryGauges {
    memory: Arc<GuestMemory>,
    budget: IntGauge,
    reserved: IntGauge,
    held: IntGauge,
}

impl MemoryGauges {
    pub(super) fn new(memory: Arc<GuestMemory>) -> Self {
        let gauge = |name: &str, help: &str| {
            IntGauge::with_opts(Opts::new(name, help)).expect("a constant metric")
        };
        MemoryGauges {
            memory,
            budget: gauge(
                "wasmop_guest_memory_budget_bytes",
                "The most linear memory all plugins' instances may hold together (--guest-memory-budget)",
            ),
            reserved: gauge(
                "wasmop_guest_memory_reserved_bytes",
                "The budget the loaded plugins' shares reserve (each plugin's memory limit)",
            ),
            held: gauge(
                "wasmop_guest_memory_held_bytes",
                "The linear memory and tables all plugins' live instances hold now",
            ),
        }
    }
}

/// A count (of bytes, of compiles, …) as a gauge value.
pub(crate) fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The metric families of `collectors`, in order.
pub(crate) fn collected(collectors: &[&dyn Collector]) -> Vec<MetricFamily> {
    collectors.iter().flat_map(|c| c.collect()).collect()
}

impl Collector for MemoryGauges {
    fn desc(&self) -> Vec<&Desc> {
        [self.budget.desc(), self.reserved.desc(), self.held.desc()].concat()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let (budget, reserved, held) = self.memory.totals_now();
        self.reserved.set(count(reserved));
        self.held.set(count(held));
        let mut families = [self.reserved.collect(), self.held.collect()].concat();
        if budget != usize::MAX {
            self.budget.set(count(budget));
            families.extend(self.budget.collect());
        }
        families
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(gauges: &MemoryGauges) -> Vec<(String, f64)> {
        let mut found: Vec<_> = gauges
            .collect()
            .iter()
            .map(|f| {
                (
                    f.name().to_owned(),
                    f.get_metric()[0].get_gauge().get_value(),
                )
            })
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }

    #[test]
    fn the_gauges_follow_shares_and_instances_and_leave_out_an_unbounded_budget() {
        let memory = Arc::new(GuestMemory::new(Some(1000)));
        let gauges = MemoryGauges::new(memory.clone());
        let share = memory.reserve(300).unwrap();
        share.take(120).unwrap();
        let named = |name: &str, value: f64| (name.to_owned(), value);
        assert_eq!(
            values(&gauges),
            [
                named("wasmop_guest_memory_budget_bytes", 1000.0),
                named("wasmop_guest_memory_held_bytes", 120.0),
                named("wasmop_guest_memory_reserved_bytes", 300.0),
            ]
        );
        share.give(120);
        drop(share);
        assert_eq!(
            values(&gauges)[1],
            named("wasmop_guest_memory_held_bytes", 0.0)
        );
        let unbounded = MemoryGauges::new(Arc::new(GuestMemory::new(None)));
        let names: Vec<_> = values(&unbounded).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "wasmop_guest_memory_held_bytes",
                "wasmop_guest_memory_reserved_bytes"
            ]
        );
    }
}
