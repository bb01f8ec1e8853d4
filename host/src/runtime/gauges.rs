//! The guest memory budget and the instance pool as Prometheus gauges — the budget, the
//! operator's reserve of it, what the plugins' shares reserve of it (all and tenants') and what
//! all instances hold; the pool, its operator's reserve and what the plugins' shares reserve of
//! it (all and tenants') — read at scrape time by collectors registered while the manager lives.
//! An unbounded budget has no budget gauge, so no alert compares against it.

use std::sync::{Arc, Mutex};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGauge, Opts};

use super::memory::GuestMemory;
use super::reserve::{Bound, Claimed};

fn gauge(name: &str, help: &str) -> IntGauge {
    IntGauge::with_opts(Opts::new(name, help)).expect("a constant metric")
}

/// The guest memory gauges of one runtime.
#[derive(Clone)]
pub struct MemoryGauges {
    memory: Arc<GuestMemory>,
    budget: IntGauge,
    operator_reserve: IntGauge,
    reserved: IntGauge,
    tenants: IntGauge,
    held: IntGauge,
}

impl MemoryGauges {
    pub(super) fn new(memory: Arc<GuestMemory>) -> Self {
        MemoryGauges {
            memory,
            budget: gauge(
                "wasmop_guest_memory_budget_bytes",
                "The most linear memory all plugins' instances may hold together (--guest-memory-budget)",
            ),
            operator_reserve: gauge(
                "wasmop_guest_memory_operator_reserve_bytes",
                "The budget tenants' plugins may not reserve or borrow (--operator-reserved-memory)",
            ),
            tenants: gauge(
                "wasmop_guest_memory_tenant_reserved_bytes",
                "The budget the shares of tenants' plugins (WasmReconcilers) reserve",
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
        let gauges = [
            &self.budget,
            &self.operator_reserve,
            &self.reserved,
            &self.tenants,
            &self.held,
        ];
        gauges.iter().flat_map(|g| g.desc()).collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let (budget, reserved, held) = self.memory.totals_now();
        self.reserved.set(count(reserved.all));
        self.tenants.set(count(reserved.tenants));
        self.held.set(count(held));
        let gauges = [&self.reserved, &self.tenants, &self.held];
        let mut families: Vec<_> = gauges.iter().flat_map(|g| g.collect()).collect();
        if budget != usize::MAX {
            self.budget.set(count(budget));
            self.operator_reserve
                .set(count(self.memory.bound().reserve));
            families.extend(self.budget.collect());
            families.extend(self.operator_reserve.collect());
        }
        families
    }
}

/// The instance pool gauges of one runtime.
#[derive(Clone)]
pub struct PoolGauges {
    pool: Bound,
    reserved: Arc<Mutex<Claimed>>,
    gauges: [IntGauge; 4],
}

impl PoolGauges {
    pub(super) fn new(pool: Bound, reserved: Arc<Mutex<Claimed>>) -> Self {
        let gauges = [
            gauge(
                "wasmop_instance_pool_instances",
                "The guest instances that may exist at once across all plugins",
            ),
            gauge(
                "wasmop_instance_pool_operator_reserve_instances",
                "The instances tenants' plugins may not reserve (--operator-reserved-instances)",
            ),
            gauge(
                "wasmop_instance_pool_reserved_instances",
                "The instances the loaded plugins' shares reserve",
            ),
            gauge(
                "wasmop_instance_pool_tenant_reserved_instances",
                "The instances the shares of tenants' plugins (WasmReconcilers) reserve",
            ),
        ];
        PoolGauges {
            pool,
            reserved,
            gauges,
        }
    }
}

impl Collector for PoolGauges {
    fn desc(&self) -> Vec<&Desc> {
        self.gauges.iter().flat_map(|g| g.desc()).collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let reserved = *self.reserved.lock().unwrap_or_else(|e| e.into_inner());
        let values = [
            self.pool.whole,
            self.pool.reserve,
            reserved.all,
            reserved.tenants,
        ];
        for (gauge, value) in self.gauges.iter().zip(values) {
            gauge.set(count(value));
        }
        self.gauges.iter().flat_map(|g| g.collect()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::reserve::Claimant;

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
        let memory = Arc::new(GuestMemory::new(Some(1000), 200));
        let gauges = MemoryGauges::new(memory.clone());
        let share = memory.reserve(300, Claimant::TENANT).unwrap();
        share.take(120).unwrap();
        let named = |name: &str, value: f64| (name.to_owned(), value);
        assert_eq!(
            values(&gauges),
            [
                named("wasmop_guest_memory_budget_bytes", 1000.0),
                named("wasmop_guest_memory_held_bytes", 120.0),
                named("wasmop_guest_memory_operator_reserve_bytes", 200.0),
                named("wasmop_guest_memory_reserved_bytes", 300.0),
                named("wasmop_guest_memory_tenant_reserved_bytes", 300.0),
            ]
        );
        share.give(120);
        drop(share);
        assert_eq!(
            values(&gauges)[1],
            named("wasmop_guest_memory_held_bytes", 0.0)
        );
        let unbounded = MemoryGauges::new(Arc::new(GuestMemory::new(None, 0)));
        let names: Vec<_> = values(&unbounded).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "wasmop_guest_memory_held_bytes",
                "wasmop_guest_memory_reserved_bytes",
                "wasmop_guest_memory_tenant_reserved_bytes"
            ]
        );
    }
}
