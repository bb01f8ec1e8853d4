//! The one wasmtime [`Engine`] of the process: component model, async calls, a pooling
//! allocator that makes a fresh instance per reconcile cheap, epoch interruption driven by a
//! ticker thread, and an on-disk cache of compiled components keyed by content hash and engine
//! configuration, so a restart does not recompile.
//!
//! Components are compiled on a short-lived second engine with the same compilation settings
//! and handed to the long-lived engine through the cache: Cranelift keeps its per-thread
//! compilation contexts, sized by the largest function it ever compiled (hundreds of MiB for a
//! serde-heavy guest), for as long as its engine lives. The cache lives in the user's cache
//! directory unless configured elsewhere; wasmtime bounds its size.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{
    Cache, CacheConfig, Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig,
};

use crate::runtime::RuntimeError;
use crate::runtime::bindings::Reconciler;
use crate::runtime::host::StoreState;
use crate::runtime::policy::Ceiling;

/// How often the epoch advances: the granularity of timeouts and of yields of busy guests.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Settings of the runtime as a whole.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached.
    pub cache_dir: PathBuf,
    /// How many guest instances may exist at once across all plugins.
    pub max_instances: u32,
    /// The largest linear memory any plugin may be allowed, in bytes.
    pub max_memory: usize,
    /// The most any plugin may be granted or ask for.
    pub ceiling: Ceiling,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: default_cache_dir(),
            max_instances: 1000,
            max_memory: 1 << 30,
            ceiling: Ceiling::default(),
        }
    }
}

/// The engine, the linker with every host import, and the epoch ticker.
pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<StoreState>,
    pub(crate) config: RuntimeConfig,
    pub(crate) compiler: Compiler,
    /// Instances promised to loaded plugins, out of `config.max_instances`.
    reserved: Arc<AtomicU32>,
    _ticker: Ticker,
}

impl Runtime {
    /// Builds the engine and linker and starts the epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<Self, RuntimeError> {
        let (cache, compiler_cache) = (
            open_cache(&config.cache_dir)?,
            open_cache(&config.cache_dir)?,
        );
        let mut engine_config = pooled(compilation_config(), &config);
        engine_config.cache(Some(cache.clone()));
        let engine = Engine::new(&engine_config).map_err(RuntimeError::Engine)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(RuntimeError::Engine)?;
        Reconciler::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)
            .map_err(RuntimeError::Engine)?;
        let _ticker = Ticker::start(engine.clone());
        Ok(Runtime {
            linker,
            compiler: Compiler {
                engine: engine.clone(),
                cache,
                compiler_cache,
            },
            engine,
            config,
            reserved: Arc::default(),
            _ticker,
        })
    }

    /// Promises `instances` of the pool to one plugin version until the reservation is dropped,
    /// so no plugin can take another's share; `None` when the pool has not that many left.
    pub(crate) fn reserve(&self, instances: u32) -> Option<Reservation> {
        let max = self.config.max_instances;
        self.reserved
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |reserved| {
                reserved
                    .checked_add(instances)
                    .filter(|total| *total <= max)
            })
            .ok()?;
        Some(Reservation {
            pool: self.reserved.clone(),
            instances,
        })
    }

    /// Instances of the pool not promised to any plugin.
    pub fn unreserved_instances(&self) -> u32 {
        self.config
            .max_instances
            .saturating_sub(self.reserved.load(Ordering::Acquire))
    }

    /// Compiled components found in the on-disk cache so far.
    pub fn cache_hits(&self) -> usize {
        self.compiler.compiler_cache.cache_hits()
    }

    /// Compiled components that were not in the on-disk cache so far.
    pub fn cache_misses(&self) -> usize {
        self.compiler.compiler_cache.cache_misses()
    }
}

/// A plugin version's share of the instance pool, given back when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    pool: Arc<AtomicU32>,
    instances: u32,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.pool.fetch_sub(self.instances, Ordering::AcqRel);
    }
}

/// Compiles components for the runtime's engine without leaving the compiler's memory behind.
#[derive(Clone)]
pub(crate) struct Compiler {
    engine: Engine,
    cache: Cache,
    compiler_cache: Cache,
}

impl Compiler {
    /// Compiles `bytes` on a throwaway engine unless the cache has them, then loads the result
    /// from the cache into the runtime's engine. Blocking: call it off the async runtime.
    pub(crate) fn compile(&self, bytes: &[u8]) -> wasmtime::Result<Component> {
        let mut config = compilation_config();
        config.cache(Some(self.compiler_cache.clone()));
        Component::new(&Engine::new(&config)?, bytes)?;
        let misses = self.cache.cache_misses();
        let component = Component::new(&self.engine, bytes)?;
        if self.cache.cache_misses() > misses {
            tracing::warn!("the compiled component was not found in the cache; compiled it again");
        }
        Ok(component)
    }

    /// Components the runtime's own engine had to compile (zero unless the cache failed).
    #[cfg(test)]
    fn resident_compiles(&self) -> usize {
        self.cache.cache_misses()
    }
}

fn open_cache(dir: &Path) -> Result<Cache, RuntimeError> {
    private_dir(dir)?;
    let mut config = CacheConfig::new();
    config.with_directory(dir);
    Cache::new(config).map_err(RuntimeError::Engine)
}

/// Makes `dir` (mode 0700 when it is new) and refuses it when another user owns it or anyone but
/// its owner may write it: compiled code found there runs without being checked again, so only
/// this user may put it there.
fn private_dir(dir: &Path) -> Result<(), RuntimeError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let unsafe_cache = |reason: String| RuntimeError::CompileCache {
        dir: dir.to_owned(),
        reason,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| unsafe_cache(format!("cannot create it: {e}")))?;
    let owner = std::fs::metadata(dir).map_err(|e| unsafe_cache(e.to_string()))?;
    let me = current_uid().map_err(|e| unsafe_cache(e.to_string()))?;
    if owner.uid() != me {
        return Err(unsafe_cache(format!(
            "it belongs to uid {}, not to this process's uid {me}",
            owner.uid()
        )));
    }
    if owner.mode() & 0o022 != 0 {
        return Err(unsafe_cache(format!(
            "its mode {:o} lets other users write compiled code into it",
            owner.mode() & 0o777
        )));
    }
    Ok(())
}

/// The uid this process runs as (the owner of its `/proc/self`).
fn current_uid() -> std::io::Result<u32> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata("/proc/self")?.uid())
}

/// `$XDG_CACHE_HOME/wasmop/compiled`, else `~/.cache/wasmop/compiled`, else a directory of this
/// user's own under the temp dir (refused if someone else made it first).
pub fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")));
    match base {
        Some(base) => base.join("wasmop").join("compiled"),
        None => {
            let uid = current_uid().unwrap_or(0);
            std::env::temp_dir()
                .join(format!("wasmop-{uid}"))
                .join("compiled")
        }
    }
}

/// Everything that decides the compiled code; both engines must agree on it.
fn compilation_config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true).epoch_interruption(true);
    config
}

fn pooled(mut config: Config, settings: &RuntimeConfig) -> Config {
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
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The empty component: magic, component-model version and layer.
    const COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    #[test]
    fn the_long_lived_engine_never_compiles() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: dir.path().to_owned(),
            ..RuntimeConfig::default()
        })
        .unwrap();
        runtime.compiler.compile(COMPONENT).unwrap();
        runtime.compiler.compile(COMPONENT).unwrap();
        assert_eq!(runtime.compiler.resident_compiles(), 0);
        assert_eq!((runtime.cache_hits(), runtime.cache_misses()), (1, 1));
    }

    #[test]
    fn a_compile_cache_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("compiled");
        private_dir(&cache).expect("a new cache is made private");
        let mode = std::fs::metadata(&cache).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = Runtime::new(RuntimeConfig {
            cache_dir: cache,
            ..RuntimeConfig::default()
        })
        .err()
        .expect("a world-writable cache is refused");
        assert!(refused.to_string().contains("mode 777"), "{refused}");
    }

    #[test]
    fn shares_of_the_instance_pool_never_add_up_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: dir.path().to_owned(),
            max_instances: 10,
            ..RuntimeConfig::default()
        })
        .unwrap();
        let first = runtime.reserve(6).expect("room for six");
        assert!(runtime.reserve(5).is_none(), "only four are left");
        let second = runtime.reserve(4).expect("room for four");
        assert_eq!(runtime.unreserved_instances(), 0);
        drop(first);
        assert_eq!(runtime.unreserved_instances(), 6);
        drop(second);
    }
}
