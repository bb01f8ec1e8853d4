//! The cost of one reconcile dispatch — store, instantiate, call, one 4 KiB cache get — in fresh
//! and warm instance modes, beside the bare wasmtime floor for the same component measured in
//! the same run: its `InstancePre` instantiated and called with no host work.
//!
//! Run with `cargo bench -p wasmop --bench dispatch` after building the guests.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use wasmop::object::ObjectKey;
use wasmop::runtime::memory::MemoryHost;
use wasmop::runtime::{InstanceMode, Plugin, PluginOptions, Runtime, RuntimeConfig};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod floor {
    wasmtime::component::bindgen!({ world: "reconciler", path: "../wit", exports: { default: async } });
}

const ROUNDS: usize = 2000;

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

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
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

async fn wasmop_dispatch(runtime: &Runtime, component: &Path, mode: InstanceMode) -> Duration {
    let host = MemoryHost::new();
    let padding = "x".repeat(4000);
    host.insert(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "bench", "name": "four-kib"}, "data": {"payload": padding}}));
    let options = PluginOptions {
        mode,
        ..PluginOptions::default()
    };
    let plugin: Plugin = runtime
        .load(component, options, host.services())
        .await
        .expect("guest-bench loads");
    let key = ObjectKey::new("bench", "four-kib");
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
    let component =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/components/guest-bench.wasm");
    assert!(
        component.exists(),
        "{} is missing: run `make guests` first",
        component.display()
    );
    let runtime = Runtime::new(RuntimeConfig::default()).expect("the runtime starts");

    let floor_fresh = floor_dispatch(&component, false).await;
    let fresh = wasmop_dispatch(&runtime, &component, InstanceMode::Fresh).await;
    let floor_warm = floor_dispatch(&component, true).await;
    let warm = wasmop_dispatch(
        &runtime,
        &component,
        InstanceMode::Warm {
            pool: 4,
            max_uses: None,
        },
    )
    .await;

    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "one reconcile dispatch of guest-bench, median of {ROUNDS} ({} bytes)",
        std::fs::metadata(&component).map(|m| m.len()).unwrap_or(0)
    );
    println!(
        "{:<6} {:>22} {:>24} {:>7}",
        "mode", "bare wasmtime floor", "wasmop + 4 KiB get", "ratio"
    );
    for (mode, floor, ours) in [("fresh", floor_fresh, fresh), ("warm", floor_warm, warm)] {
        println!(
            "{mode:<6} {:>19.2} µs {:>21.2} µs {:>6.2}x",
            micros(floor),
            micros(ours),
            micros(ours) / micros(floor)
        );
    }
}
