//! The one wasmtime [`Engine`] of the process: component model, async calls, a pooling
//! allocator that makes a fresh instance per reconcile cheap, epoch interruption driven by a
//! ticker thread, and an on-disk cache of compiled components keyed by content hash and engine
//! configuration, so a restart does not recompile.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{
    Cache, CacheConfig, Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig,
};

use crate::runtime::RuntimeError;
use crate::runtime::bindings::Reconciler;
use crate::runtime::host::StoreState;

/// How often the epoch advances: the granularity of timeouts and of yields of busy guests.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Settings of the runtime as a whole.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// How many guest instances may exist at once across all plugins.
    pub max_instances: u32,
    /// The largest linear memory any plugin may be allowed, in bytes.
    pub max_memory: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: None,
            max_instances: 1000,
            max_memory: 1 << 30,
        }
    }
}

/// The engine, the linker with every host import, and the epoch ticker.
pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<StoreState>,
    pub(crate) config: RuntimeConfig,
    cache: Option<Cache>,
    _ticker: Ticker,
}

impl Runtime {
    /// Builds the engine and linker and starts the epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<Self, RuntimeError> {
        let cache = match &config.cache_dir {
            Some(dir) => {
                let mut cache = CacheConfig::new();
                cache.with_directory(dir);
                Some(Cache::new(cache).map_err(RuntimeError::Engine)?)
            }
            None => None,
        };
        let mut engine_config = engine_config(&config);
        engine_config.cache(cache.clone());
        let engine = Engine::new(&engine_config).map_err(RuntimeError::Engine)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(RuntimeError::Engine)?;
        Reconciler::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)
            .map_err(RuntimeError::Engine)?;
        let _ticker = Ticker::start(engine.clone());
        Ok(Runtime {
            engine,
            linker,
            config,
            cache,
            _ticker,
        })
    }

    /// Compiled components found in the on-disk cache so far.
    pub fn cache_hits(&self) -> usize {
        self.cache.as_ref().map_or(0, Cache::cache_hits)
    }

    /// Compiled components that were not in the on-disk cache so far.
    pub fn cache_misses(&self) -> usize {
        self.cache.as_ref().map_or(0, Cache::cache_misses)
    }
}

fn engine_config(settings: &RuntimeConfig) -> Config {
    let instances = settings.max_instances;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(instances)
        .total_core_instances(instances * 4)
        .total_memories(instances * 2)
        .total_tables(instances * 4)
        .total_stacks(instances)
        .max_core_instances_per_component(64)
        .max_memories_per_component(16)
        .max_tables_per_component(64)
        .max_memory_size(settings.max_memory);
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Ticker {
    fn start(engine: Engine) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("wasmop-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .expect("spawning the epoch thread");
        Ticker { stop }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
