//! The cost of one reconcile dispatch — store, instantiate, call, one 4 KiB cache get — in fresh
//! and warm instance modes, beside the bare wasmtime floor for the same component measured in
//! the same run: its `InstancePre` instantiated and called with no host work.
//!
//! Run with `cargo bench -p wasmop --bench dispatch` after building the guests.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use wasmop::object::ObjectKey;
use wasmop::runtime::memory::MemoryHost;
use wasmop::runtime::{InstanceMode, Plugin, PluginOptions, Runtime, RuntimeConfig};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod support;

use support::{median, repo};

mod floor {
    wasmtime::component::bindgen!({ world: "reconciler", path: "../wit", exports: { default: async } });
}

const ROUNDS: usize = 2000;
/// Each measurement is repeated, alternating floor and wasmop, so the machine's noise hits both.
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

/// The median cost of one wasmop dispatch of `key`; an empty namespace makes guest-bench skip its
/// cache get, so only the host's own dispatch work is measured.
async fn wasmop_dispatch(
    runtime: &Runtime,
    component: &Path,
    mode: InstanceMode,
    key: ObjectKey,
) -> Duration {
    let host = MemoryHost::new();
    let padding = "x".repeat(4000);
    host.insert(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "bench", "name": "four-kib"}, "data": {"payload": padding}}));
    let options = PluginOptions {
        mode,
        ..PluginOptions::default()
    };
    let plugin: Plugin = runtime
        .load(component, options, |_| host.services())
        .await
        .expect("guest-bench loads");
    measure(async || {
        plugin.reconcile(&key).await.expect("reconcile succeeds");
    })
    .await
}

fn floor_engine() -> Engine {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(100).max_memory_size(1 << 30);
    let mut config = Config::new();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).expect("the floor engine starts")
}

async fn floor_dispatch(component: &Path, warm: bool) -> Duration {
    let engine = floor_engine();
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
    if warm {
        let mut store = bare_store(&engine);
        let instance = pre
            .instantiate_async(&mut store)
            .await
            .expect("instantiates");
        measure(async || call(&instance, &mut store, &request).await).await
    } else {
        measure(async || {
            let mut store = bare_store(&engine);
            let instance = pre
                .instantiate_async(&mut store)
                .await
                .expect("instantiates");
            call(&instance, &mut store, &request).await
        })
        .await
    }
}

async fn call(
    instance: &floor::Reconciler,
    store: &mut Store<Bare>,
    request: &floor::wasmop::reconciler::types::ObjectKey,
) {
    instance
        .call_reconcile(store, request)
        .await
        .expect("calls")
        .expect("done");
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
        let floor = floor_dispatch(&component, warm).await;
        let bare = wasmop_dispatch(&runtime, &component, instances, nothing.clone()).await;
        let with_get = wasmop_dispatch(&runtime, &component, instances, get.clone()).await;
        rows.push((mode, floor, bare, with_get));
    }

    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let size = std::fs::metadata(&component).map(|m| m.len()).unwrap_or(0);
    println!(
        "one reconcile dispatch of guest-bench ({size} bytes): median of {REPEATS} alternating runs, each the median of {ROUNDS} calls"
    );
    println!(
        "{:<6} {:>14} {:>16} {:>7} {:>20} {:>7}",
        "mode", "wasmtime floor", "wasmop, no get", "ratio", "wasmop + 4 KiB get", "ratio"
    );
    for (mode, floor, bare, with_get) in rows {
        let ratio = |d: Duration| micros(d) / micros(floor);
        println!(
            "{mode:<6} {:>11.2} µs {:>13.2} µs {:>6.2}x {:>17.2} µs {:>6.2}x",
            micros(floor),
            micros(bare),
            ratio(bare),
            micros(with_get),
            ratio(with_get)
        );
    }
}
