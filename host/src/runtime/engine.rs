//! The one wasmtime [`Engine`] of the process: component model, async calls, a pooling
//! allocator that makes a fresh instance per reconcile cheap, epoch interruption driven by a
//! ticker thread that runs only while a guest call is in flight (an idle host never wakes for
//! it), and compiled components from the on-disk compile cache, so a restart does not recompile.
//!
//! Guest code is compiled by Winch, wasmtime's single-pass baseline compiler, unless the operator
//! chooses Cranelift ([`Backend`]): a first start must compile inside the pod's memory limit, and
//! Cranelift's register allocator needs hundreds of MiB for one large function (a cold start of
//! the serde-heavy Rust `webapp` peaked at 700 MB, against 70 MB and a tenth of the time with
//! Winch). Winch's code is slower where a guest computes, which a reconcile seldom does
//! (`make bench` finds no difference in the host's CPU converging `webapp`'s WebApps); Cranelift
//! is wasmtime's default and most-fuzzed backend, for plugins that arrive precompiled or a compile
//! memory limit that fits it. `SinglePass` register allocation would fit but wasmtime leaves it
//! outside its security support, and fewer threads, a lower opt level or no address map save
//! little. The backend is part of the compilation settings: artifacts of one are never mapped by
//! an engine of the other.
//!
//! Components are compiled on a short-lived second engine with the same compilation settings, in
//! this process or a child ([`CompileIn`]), and handed to the long-lived engine as artifacts of
//! the compile cache ([`Artifacts`]), so what the compiler allocates (its reusable contexts,
//! Cranelift's for the trampolines) goes with it, and the long-lived engine maps the code from
//! the cache's file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy,
};

use crate::rate::TokenBucket;
use crate::runtime::RuntimeError;
use crate::runtime::artifacts::{Artifacts, CACHE_LIMIT, default_cache_dir};
use crate::runtime::bindings::Reconciler;
use crate::runtime::compiler::{CompileIn, Compiler};
use crate::runtime::compiles::CompileQueue;
use crate::runtime::host::StoreState;
use crate::runtime::memory::GuestMemory;
use crate::runtime::reserve::{Bound, Claimant, Claimed};
use crate::runtime::suspend::Suspender;
use crate::runtime::wrap::Wrap;
use wasmop_contract::limits::Rate;
use wasmop_contract::policy::Ceiling;

/// The log lines per second, and burst, all tenants' plugins share by default: twice one
/// plugin's default rate.
const TENANT_LOG_RATE: Rate = Rate::new(200.0, 1000);

/// How often the epoch advances while a guest call is in flight: the granularity of timeouts and
/// of yields of busy guests. A call is in flight while it waits on the apiserver too, so under load
/// the ticker runs all the time: at 1 ms it took a tenth of the host's CPU converging 5,000
/// WebApps (`make bench-profile`); timeouts are seconds, and 10 ms between yields keeps a busy
/// guest from holding a runtime thread for longer than a tick.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The most elements one guest table may hold. A Go component built with client-go's types
/// (controller-runtime's API) has a function table of ~29,000 entries, past wasmtime's default
/// of 20,000; each element is a pointer of address space the pool reserves per table, touched
/// only as the table fills.
const TABLE_ELEMENTS: usize = 100_000;

/// The most of a freed instance's linear memory its pool slot keeps resident for the next
/// instance: the pages the guest wrote (found with Linux's `PAGEMAP_SCAN`, on kernels from 6.7)
/// are reset in place from the plugin's memory image rather than unmapped, so a fresh instance
/// per reconcile takes no page faults and the host no cross-CPU TLB flushes for them. What a
/// guest wrote past it is unmapped as before.
const KEEP_RESIDENT: usize = 1 << 20;

/// The most freed slots that stay warm (keep [`KEEP_RESIDENT`] and their plugin's memory image
/// mapped for its next instance): freed instances hold at most this many times
/// [`KEEP_RESIDENT`] of the host's memory, 32 MiB, outside every plugin's limit.
const WARM_SLOTS: u32 = 32;

/// The pool instances only the operator's plugins may reserve, unless
/// `--operator-reserved-instances` says otherwise: at most half the pool.
const OPERATOR_RESERVED_INSTANCES: u32 = 128;

/// The guest memory budget only the operator's plugins may reserve or borrow, unless
/// `--operator-reserved-memory` says otherwise: at most a quarter of the budget (with `deploy/`'s
/// 128Mi, 32Mi: an operator plugin at its memory limit, while tenants keep three of theirs).
const OPERATOR_RESERVED_MEMORY: usize = 64 << 20;

/// Which of wasmtime's compilers turns guest code into machine code (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Backend {
    /// The single-pass baseline compiler: a tenth of Cranelift's compile time and memory.
    #[default]
    Winch,
    /// The optimising compiler, wasmtime's default: a large plugin's compile needs ~700 MiB.
    Cranelift,
}

impl Backend {
    /// The name the compile worker's `--compiler` takes.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Winch => "winch",
            Backend::Cranelift => "cranelift",
        }
    }
}

/// Settings of the runtime as a whole.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached.
    pub cache_dir: PathBuf,
    /// The most bytes of compiled components the cache keeps; the least recently used go first.
    pub cache_limit: u64,
    /// How many guest instances may exist at once across all plugins.
    pub max_instances: u32,
    /// The largest linear memory any plugin may be allowed, in bytes.
    pub max_memory: usize,
    /// The most any plugin may be granted or ask for.
    pub ceiling: Ceiling,
    /// Where components are compiled.
    pub compile: CompileIn,
    /// What compiles them.
    pub backend: Backend,
    /// The most linear memory all guest instances may hold together, in bytes; unbounded when
    /// absent.
    pub guest_memory: Option<usize>,
    /// The most compiles that run at once; the rest wait, the operator's plugins first.
    pub max_concurrent_compiles: usize,
    /// The log lines per second (and burst) all tenants' plugins share, beside each plugin's own
    /// rate.
    pub tenant_log_rate: Rate,
    /// The instances of the pool tenants' plugins may not reserve; 128, at most half the pool,
    /// when absent.
    pub operator_reserved_instances: Option<u32>,
    /// The bytes of the guest memory budget tenants' plugins may not reserve or borrow; 64 MiB,
    /// at most a quarter of the budget, when absent.
    pub operator_reserved_memory: Option<usize>,
    /// Installed around every plugin it loads (the fixture recorder of `--record`), if anything.
    pub wrap: Option<Arc<dyn Wrap>>,
    /// How long a plugin version may go without a call before it is suspended (its code and
    /// instances given back until its next call); never when absent.
    pub suspend_after: Option<Duration>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: default_cache_dir(),
            cache_limit: CACHE_LIMIT,
            max_instances: 1000,
            max_memory: wasmop_contract::MAX_MEMORY,
            ceiling: Ceiling::default(),
            compile: CompileIn::Process,
            backend: Backend::default(),
            guest_memory: None,
            max_concurrent_compiles: 1,
            tenant_log_rate: TENANT_LOG_RATE,
            operator_reserved_instances: None,
            operator_reserved_memory: None,
            wrap: None,
            suspend_after: None,
        }
    }
}

/// The engine, the linker with every host import, and the epoch ticker.
pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) linker: Arc<Linker<StoreState>>,
    pub(crate) config: RuntimeConfig,
    pub(crate) compiler: Compiler,
    /// The linear memory all guest instances hold, under `config.guest_memory`.
    pub(crate) guest_memory: Arc<GuestMemory>,
    /// The log lines all tenants' plugins draw from, under `config.tenant_log_rate`.
    pub(crate) tenant_logs: Arc<Mutex<TokenBucket>>,
    /// The instance pool and what only the operator's plugins may reserve of it.
    pool: Bound,
    /// Instances promised to loaded plugins, out of the pool.
    reserved: Arc<Mutex<Claimed>>,
    /// What suspends idle plugin versions, when `config.suspend_after` is set.
    pub(crate) suspender: Option<Suspender>,
    ticker: Ticker,
}

impl Runtime {
    /// Builds the engine and linker and starts the epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<Self, RuntimeError> {
        let engine = Engine::new(&pooled(compilation_config(config.backend), &config))
            .map_err(RuntimeError::Engine)?;
        let artifacts = Artifacts::open(&config.cache_dir, &engine)?;
        let artifacts = Arc::new(artifacts.with_limit(config.cache_limit));
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(RuntimeError::Engine)?;
        Reconciler::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)
            .map_err(RuntimeError::Engine)?;
        let ticker = Ticker::start(engine.clone());
        let suspender = config.suspend_after.map(Suspender::start).transpose();
        Ok(Runtime {
            suspender: suspender.map_err(RuntimeError::Suspender)?,
            linker: Arc::new(linker),
            compiler: Compiler {
                engine: engine.clone(),
                artifacts,
                place: config.compile.clone(),
                backend: config.backend,
                queue: Arc::new(CompileQueue::new(config.max_concurrent_compiles)),
            },
            engine,
            tenant_logs: Arc::new(Mutex::new(TokenBucket::new(config.tenant_log_rate))),
            guest_memory: Arc::new(GuestMemory::new(
                config.guest_memory,
                operator_reserved_memory(&config),
            )),
            pool: Bound::new(
                config.max_instances as usize,
                operator_reserved_instances(&config) as usize,
            ),
            config,
            reserved: Arc::default(),
            ticker,
        })
    }

    /// The operator's ceiling over every plugin this runtime loads.
    pub fn ceiling(&self) -> &Ceiling {
        &self.config.ceiling
    }

    /// Promises `instances` of the pool to one plugin version until the reservation is dropped,
    /// so no plugin can take another's share (nor a tenant's the operator's reserve); `None`
    /// when what `who` may reserve has not that many left.
    pub(crate) fn reserve(&self, instances: u32, who: Claimant) -> Option<Reservation> {
        let mut reserved = lock(&self.reserved);
        let instances = instances as usize;
        if !self.pool.admits(*reserved, instances, who) {
            return None;
        }
        reserved.add(instances, who.tenant);
        Some(Reservation {
            pool: self.reserved.clone(),
            instances,
            tenant: who.tenant,
        })
    }

    /// Instances of the pool `who` may still reserve.
    pub(crate) fn unreserved_instances(&self, who: Claimant) -> usize {
        self.pool.left(*lock(&self.reserved), who)
    }

    /// The instance pool, and what only the operator's plugins may reserve of it.
    pub(crate) fn pool(&self) -> Bound {
        self.pool
    }

    /// Gauges of the instance pool, for the metrics registry.
    pub fn pool_gauges(&self) -> super::PoolGauges {
        super::PoolGauges::new(self.pool, self.reserved.clone())
    }

    /// The bytes of linear memory and tables all guest instances hold now.
    pub fn guest_memory_held(&self) -> usize {
        self.guest_memory.held()
    }

    /// Gauges of the guest memory budget, for the metrics registry.
    pub fn memory_gauges(&self) -> super::MemoryGauges {
        super::MemoryGauges::new(self.guest_memory.clone())
    }

    /// Gauges of the compile queue, for the metrics registry.
    pub fn compile_gauges(&self) -> super::CompileGauges {
        super::CompileGauges::new(self.compiler.queue.clone())
    }

    /// Compiled components found in the on-disk cache so far.
    pub fn cache_hits(&self) -> usize {
        self.compiler.artifacts.hits()
    }

    /// Compiled components that were not in the on-disk cache so far.
    pub fn cache_misses(&self) -> usize {
        self.compiler.artifacts.misses()
    }

    /// How many times the epoch has advanced: only while a guest call is in flight.
    pub fn epoch_ticks(&self) -> u64 {
        self.ticker.calls.ticking.ticks.load(Ordering::Relaxed)
    }

    /// The count of guest calls in flight, which keeps the epoch ticker awake.
    pub(crate) fn calls(&self) -> GuestCalls {
        self.ticker.calls.clone()
    }
}

/// A plugin version's share of the instance pool, given back when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    pool: Arc<Mutex<Claimed>>,
    instances: usize,
    tenant: bool,
}

impl Reservation {
    /// The instances it holds.
    pub(crate) fn instances(&self) -> usize {
        self.instances
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        lock(&self.pool).sub(self.instances, self.tenant);
    }
}

fn lock(claimed: &Mutex<Claimed>) -> std::sync::MutexGuard<'_, Claimed> {
    claimed.lock().unwrap_or_else(|e| e.into_inner())
}

/// The pool's operator reserve `config` sets, or its default.
fn operator_reserved_instances(config: &RuntimeConfig) -> u32 {
    let half = config.max_instances / 2;
    config
        .operator_reserved_instances
        .unwrap_or(OPERATOR_RESERVED_INSTANCES.min(half))
}

/// The guest memory budget's operator reserve `config` sets, or its default (none when the
/// budget is unbounded: nothing can run out).
fn operator_reserved_memory(config: &RuntimeConfig) -> usize {
    let Some(budget) = config.guest_memory else {
        return 0;
    };
    config
        .operator_reserved_memory
        .unwrap_or(OPERATOR_RESERVED_MEMORY.min(budget / 4))
}

/// Everything that decides the compiled code; both engines must agree on it.
pub(crate) fn compilation_config(backend: Backend) -> Config {
    let strategy = match backend {
        Backend::Winch => Strategy::Winch,
        Backend::Cranelift => Strategy::Cranelift,
    };
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .strategy(strategy);
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
        .table_elements(TABLE_ELEMENTS)
        .max_memory_size(settings.max_memory)
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .max_unused_warm_slots(WARM_SLOTS)
        .pagemap_scan(Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

/// The guest calls in flight; the epoch ticker runs while there is one and is parked otherwise.
#[derive(Clone)]
pub(crate) struct GuestCalls {
    ticking: Arc<Ticking>,
    ticker: Thread,
}

/// What the ticker thread shares with the calls that wake it.
#[derive(Default)]
struct Ticking {
    in_flight: AtomicUsize,
    ticks: AtomicU64,
    stop: AtomicBool,
}

impl GuestCalls {
    /// Counts a guest call in flight until the guard is dropped; the first wakes the ticker.
    pub(crate) fn start(&self) -> GuestCall {
        if self.ticking.in_flight.fetch_add(1, Ordering::AcqRel) == 0 {
            self.ticker.unpark();
        }
        GuestCall(self.ticking.clone())
    }
}

/// One guest call in flight, from the start of its dispatch until it returns or is dropped.
pub(crate) struct GuestCall(Arc<Ticking>);

impl Drop for GuestCall {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Advances the engine's epoch every [`EPOCH_TICK`] while a guest call is in flight and parks
/// its thread while none is, until dropped.
struct Ticker {
    calls: GuestCalls,
}

impl Ticker {
    fn start(engine: Engine) -> Self {
        let ticking = Arc::new(Ticking::default());
        let shared = ticking.clone();
        let thread = std::thread::Builder::new()
            .name("wasmop-epoch".into())
            .spawn(move || {
                while !shared.stop.load(Ordering::Acquire) {
                    // A call that starts after this load unparks the thread, so its park returns.
                    if shared.in_flight.load(Ordering::Acquire) == 0 {
                        std::thread::park();
                        continue;
                    }
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                    shared.ticks.fetch_add(1, Ordering::Relaxed);
                }
            })
            .expect("spawning the epoch thread");
        Ticker {
            calls: GuestCalls {
                ticking,
                ticker: thread.thread().clone(),
            },
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.calls.ticking.stop.store(true, Ordering::Release);
        self.calls.ticker.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::compiles::Asker;
    use prometheus::core::Collector;
    use std::path::Path;

    /// The empty component: magic, component-model version and layer.
    const COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    /// A runtime with default settings whose compile cache is `dir`.
    fn runtime_in(dir: &Path) -> Runtime {
        Runtime::new(RuntimeConfig {
            cache_dir: dir.to_owned(),
            ..RuntimeConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn a_second_load_is_served_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = runtime_in(dir.path());
        runtime
            .compiler
            .compile(COMPONENT, None, Asker::Operator)
            .unwrap();
        runtime
            .compiler
            .compile(COMPONENT, None, Asker::Operator)
            .unwrap();
        assert_eq!((runtime.cache_hits(), runtime.cache_misses()), (1, 1));
    }

    #[test]
    fn winch_compiles_the_serde_heavy_webapp_once_and_the_cache_serves_it_after() {
        let webapp = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/components/webapp.wasm");
        let bytes = std::fs::read(&webapp).expect("build the guests first with `make guests`");
        let dir = tempfile::tempdir().unwrap();
        let config = RuntimeConfig {
            cache_dir: dir.path().to_owned(),
            ..RuntimeConfig::default()
        };
        let first = Runtime::new(config.clone()).unwrap();
        first
            .compiler
            .compile(&bytes, None, Asker::Operator)
            .unwrap();
        assert_eq!((first.cache_hits(), first.cache_misses()), (0, 1));
        drop(first);
        let restarted = Runtime::new(config).unwrap();
        restarted
            .compiler
            .compile(&bytes, None, Asker::Operator)
            .unwrap();
        assert_eq!((restarted.cache_hits(), restarted.cache_misses()), (1, 0));
    }

    /// Waits out the tick that may be under way, then reads the ticks over many ticks' time.
    fn ticks_over_a_while(runtime: &Runtime) -> (u64, u64) {
        std::thread::sleep(EPOCH_TICK * 3);
        let before = runtime.epoch_ticks();
        std::thread::sleep(EPOCH_TICK * 20);
        (before, runtime.epoch_ticks())
    }

    #[test]
    fn the_epoch_advances_only_while_a_guest_call_is_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = runtime_in(dir.path());
        let (before, after) = ticks_over_a_while(&runtime);
        assert_eq!(before, after, "the epoch advanced with no call in flight");
        for _ in 0..3 {
            let calls = [runtime.calls().start(), runtime.calls().start()];
            let (before, after) = ticks_over_a_while(&runtime);
            assert!(after > before, "the epoch stood still during a call");
            drop(calls);
            let (before, after) = ticks_over_a_while(&runtime);
            assert_eq!(before, after, "the epoch advanced after the calls returned");
        }
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
        let operator = Claimant::OPERATOR;
        let first = runtime.reserve(6, operator).expect("room for six");
        assert!(runtime.reserve(5, operator).is_none(), "only four are left");
        let second = runtime.reserve(4, operator).expect("room for four");
        assert_eq!(runtime.unreserved_instances(operator), 0);
        drop(first);
        assert_eq!(runtime.unreserved_instances(operator), 6);
        drop(second);
    }

    #[test]
    fn tenants_fill_the_pool_but_its_reserve_and_the_operator_still_upgrades_when_it_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: dir.path().to_owned(),
            max_instances: 100,
            operator_reserved_instances: Some(30),
            ..RuntimeConfig::default()
        })
        .unwrap();
        let tenant = Claimant::TENANT;
        let tenants: Vec<_> = std::iter::from_fn(|| runtime.reserve(10, tenant)).collect();
        assert_eq!(tenants.len(), 7, "tenants took all but the reserve");
        assert_eq!(runtime.unreserved_instances(tenant), 0);
        let gauges: Vec<_> = (runtime.pool_gauges().collect().iter())
            .map(|f| {
                (
                    f.name().to_owned(),
                    f.get_metric()[0].get_gauge().get_value(),
                )
            })
            .collect();
        let expected = [
            ("instances", 100.0),
            ("operator_reserve_instances", 30.0),
            ("reserved_instances", 70.0),
            ("tenant_reserved_instances", 70.0),
        ]
        .map(|(name, value)| (format!("wasmop_instance_pool_{name}"), value));
        assert_eq!(gauges, expected);
        let operator = runtime
            .reserve(30, Claimant::OPERATOR)
            .expect("the reserve");
        let upgrade = Claimant::OPERATOR.replacing(operator.instances());
        let upgraded = runtime
            .reserve(30, upgrade)
            .expect("the old version's share");
        drop(operator);
        assert!(runtime.reserve(1, Claimant::OPERATOR).is_none());
        drop(tenants);
        assert_eq!(runtime.unreserved_instances(tenant), 70);
        drop(upgraded);
    }

    #[test]
    fn the_default_reserves_keep_a_share_at_most_and_none_of_an_unbounded_budget() {
        let small = RuntimeConfig {
            max_instances: 40,
            guest_memory: Some(128 << 20),
            ..RuntimeConfig::default()
        };
        assert_eq!(operator_reserved_instances(&small), 20);
        assert_eq!(operator_reserved_memory(&small), 32 << 20);
        let default = RuntimeConfig::default();
        assert_eq!(operator_reserved_instances(&default), 128);
        assert_eq!(operator_reserved_memory(&default), 0);
    }
}
