//! The cost of one reconcile dispatch — store, instantiate, call, one 4 KiB cache get — in fresh
//! and warm instance modes, beside the bare wasmtime floor for the same component measured in
//! the same run: its `InstancePre` instantiated and called with no host work. Every figure is
//! measured in each of [`REPEATS`] repeats that alternate floor and wasmop, and printed as the
//! median of the repeats with their range.
//!
//! Run with `cargo bench -p wasmop --bench dispatch` after building the guests.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use wasmop::contract::object::ObjectKey;
use wasmop::runtime::{InstanceMode, Plugin, PluginOptions, Runtime, RuntimeConfig};
use wasmop::testing::MemoryHost;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod support;

use support::{Spread, median, repo};

mod floor {
    wasmtime::component::bindgen!({ world: "reconciler", path: "../wit", exports: { default: async } });
}

const ROUNDS: usize = 2000;
/// Repeats of every figure, alternating floor and wasmop, so the machine's noise hits both.
const REPEATS: usize = 5;

struct Bare {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Bare {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

fn bare_store(engine: &Engine) -> Store<Bare> {
    Store::new(
        engine,
        Bare {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        },
    )
}

async fn measure<F: AsyncFnMut()>(mut once: F) -> Duration {
    for _ in 0..ROUNDS / 10 {
        once().await;
    }
    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        once().await;
        samples.push(started.elapsed());
    }
    median(samples)
}

/// guest-bench loaded into wasmop against an in-memory host holding a 4 KiB ConfigMap.
async fn wasmop_plugin(runtime: &Runtime, component: &Path, mode: InstanceMode) -> Plugin {
    let host = MemoryHost::new();
    let padding = "x".repeat(4000);
    host.insert(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "bench", "name": "four-kib"}, "data": {"payload": padding}}));
    let options = PluginOptions {
        mode,
        ..PluginOptions::default()
    };
    runtime
        .load(component, options, move |_| host.services())
        .await
        .expect("guest-bench loads")
}

/// The median cost of one wasmop dispatch of `key`; an empty namespace makes guest-bench skip its
/// cache get, so only the host's own dispatch work is measured.
async fn wasmop_dispatch(plugin: &Plugin, key: &ObjectKey) -> Duration {
    measure(async || {
        plugin.reconcile(key).await.expect("reconcile succeeds");
    })
    .await
}

/// The bare wasmtime floor: guest-bench's `InstancePre` on a plain pooling engine, its imports
/// stubbed, no host work around the call.
struct Floor {
    engine: Engine,
    pre: floor::ReconcilerPre<Bare>,
    request: floor::wasmop::reconciler::types::ObjectKey,
}

impl Floor {
    fn new(component: &Path) -> Floor {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(100).max_memory_size(1 << 30);
        let mut config = Config::new();
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config).expect("the floor engine starts");
        let component = Component::from_file(&engine, component).expect("guest-bench compiles");
        let mut linker: Linker<Bare> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("WASI links");
        linker
            .define_unknown_imports_as_traps(&component)
            .expect("stub imports");
        let pre = floor::ReconcilerPre::new(linker.instantiate_pre(&component).expect("links"))
            .expect("typed");
        let request = floor::wasmop::reconciler::types::ObjectKey {
            namespace: String::new(),
            name: String::new(),
        };
        Floor {
            engine,
            pre,
            request,
        }
    }

    async fn instance(&self) -> (Store<Bare>, floor::Reconciler) {
        let mut store = bare_store(&self.engine);
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .expect("instantiates");
        (store, instance)
    }

    async fn call(&self, instance: &floor::Reconciler, store: &mut Store<Bare>) {
        instance
            .call_reconcile(store, &self.request)
            .await
            .expect("calls")
            .expect("done");
    }

    /// The median cost of one call, in a new instance each time unless `warm`.
    async fn dispatch(&self, warm: bool) -> Duration {
        if warm {
            let (mut store, instance) = self.instance().await;
            measure(async || self.call(&instance, &mut store).await).await
        } else {
            measure(async || {
                let (mut store, instance) = self.instance().await;
                self.call(&instance, &mut store).await
            })
            .await
        }
    }
}

/// One instance mode's figures, one per repeat.
struct Row {
    mode: &'static str,
    warm: bool,
    bare: Plugin,
    with_get: Plugin,
    floor_times: Vec<Duration>,
    bare_times: Vec<Duration>,
    get_times: Vec<Duration>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let component = repo().join("target/components/guest-bench.wasm");
    assert!(
        component.exists(),
        "{} is missing: run `make guests` first",
        component.display()
    );
    let runtime = Runtime::new(RuntimeConfig::default()).expect("the runtime starts");
    let floor = Floor::new(&component);

    let get = ObjectKey::new("bench", "four-kib");
    let nothing = ObjectKey::default();
    let warm_mode = InstanceMode::Warm {
        pool: 4,
        max_uses: None,
    };
    let mut rows = Vec::new();
    for (mode, instances, warm) in [
        ("fresh", InstanceMode::Fresh, false),
        ("warm", warm_mode, true),
    ] {
        rows.push(Row {
            mode,
            warm,
            bare: wasmop_plugin(&runtime, &component, instances).await,
            with_get: wasmop_plugin(&runtime, &component, instances).await,
            floor_times: Vec::with_capacity(REPEATS),
            bare_times: Vec::with_capacity(REPEATS),
            get_times: Vec::with_capacity(REPEATS),
        });
    }
    for repeat in 1..=REPEATS {
        eprintln!("[dispatch] repeat {repeat}/{REPEATS}");
        for row in &mut rows {
            row.floor_times.push(floor.dispatch(row.warm).await);
            row.bare_times
                .push(wasmop_dispatch(&row.bare, &nothing).await);
            row.get_times
                .push(wasmop_dispatch(&row.with_get, &get).await);
        }
    }

    let micros = |times: &[Duration]| Spread::of(times.iter().map(|d| d.as_secs_f64() * 1e6));
    let ratios = |times: &[Duration], floors: &[Duration]| {
        Spread::of(
            times
                .iter()
                .zip(floors)
                .map(|(time, floor)| time.as_secs_f64() / floor.as_secs_f64()),
        )
    };
    let size = std::fs::metadata(&component).map(|m| m.len()).unwrap_or(0);
    println!(
        "one reconcile dispatch of guest-bench ({size} bytes): median (min–max) over {REPEATS} alternating repeats, each figure of a repeat the median of {ROUNDS} calls; ratios are to the same repeat's floor"
    );
    println!(
        "| mode | wasmtime floor, µs | wasmop, no get, µs | ratio | wasmop + 4 KiB get, µs | ratio |"
    );
    println!("|---|---|---|---|---|---|");
    for row in rows {
        println!(
            "| {} | {} | {} | {}x | {} | {}x |",
            row.mode,
            micros(&row.floor_times).show(2),
            micros(&row.bare_times).show(2),
            ratios(&row.bare_times, &row.floor_times).show(2),
            micros(&row.get_times).show(2),
            ratios(&row.get_times, &row.floor_times).show(2),
        );
    }
}
