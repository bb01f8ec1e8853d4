//! Guest instances of one plugin version and the dispatch of one call into them.
//!
//! In fresh mode every call gets a new store and instance from the `InstancePre` (no state
//! survives between calls). In warm mode instances are kept in a small pool and reused; an
//! instance that trapped or timed out is never returned to the pool. Every call runs under a
//! deadline enforced twice: the epoch callback interrupts guest code past it (and yields to the
//! executor on every tick, so a busy guest cannot starve others), and a tokio timeout bounds time
//! spent waiting on host calls. Every call counts itself in flight for as long as it runs, which
//! is what keeps the epoch ticking.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::component::{InstancePre, Linker};
use wasmtime::{Engine, Store, Trap, UpdateDeadline};

use crate::runtime::Runtime;
use crate::runtime::artifacts::{Artifact, Mapped};
use crate::runtime::bindings::{Reconciler, ReconcilerIndices, handlers, webhooks};
use crate::runtime::engine::GuestCalls;
use crate::runtime::error::{DispatchError, TrapKind};
use crate::runtime::host::{MemoryLimitExceeded, PluginContext, StoreState};
use crate::runtime::memory::{GuestMemoryExhausted, MemoryShare};
use crate::runtime::suspend::{Code, Relink};
use wasmop_contract::object::ObjectKey;

/// How a plugin's instances are used across reconciles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceMode {
    /// A new instance for every call: nothing survives between requests (the default).
    Fresh,
    /// Reuse up to `pool` idle instances; retire one after `max_uses` calls if set.
    Warm {
        /// How many idle instances to keep.
        pool: usize,
        /// Retire an instance after this many calls.
        max_uses: Option<u64>,
    },
}

/// A future returned by a call into an instance.
pub(crate) type Call<'a, R> = Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>;

/// A component linked against the host's imports, with its exports looked up once.
#[derive(Clone)]
pub(crate) struct Linked {
    pre: InstancePre<StoreState>,
    reconciler: ReconcilerIndices,
    webhooks: Option<webhooks::GuestIndices>,
    handlers: Option<handlers::GuestIndices>,
    /// Held for as long as the link, so other loads of the same artifact share the mapping.
    mapped: Arc<Mapped>,
}

impl Linked {
    /// Links `mapped` with `linker` and finds the reconciler world's exports (an error if one is
    /// missing) and its `webhooks` and `handlers` interfaces if it exports them.
    pub(crate) fn link(linker: &Linker<StoreState>, mapped: Arc<Mapped>) -> wasmtime::Result<Self> {
        let pre = linker.instantiate_pre(&mapped.component)?;
        Ok(Linked {
            reconciler: ReconcilerIndices::new(&pre)?,
            webhooks: webhooks::GuestIndices::new(&pre).ok(),
            handlers: handlers::GuestIndices::new(&pre).ok(),
            pre,
            mapped,
        })
    }

    /// The artifact file the component is mapped from, if it is not a copy in memory.
    pub(crate) fn artifact(&self) -> Option<&Artifact> {
        self.mapped.artifact.as_ref()
    }

    /// Whether the component exports the `webhooks` interface.
    pub(crate) fn has_webhooks(&self) -> bool {
        self.webhooks.is_some()
    }

    /// Whether the component exports the `handlers` interface.
    pub(crate) fn has_handlers(&self) -> bool {
        self.handlers.is_some()
    }

    async fn instantiate(&self, store: &mut Store<StoreState>) -> wasmtime::Result<Exports> {
        let instance = self.pre.instantiate_async(&mut *store).await?;
        let reconciler = self.reconciler.load(&mut *store, &instance)?;
        let webhooks = match &self.webhooks {
            Some(indices) => Some(indices.load(&mut *store, &instance)?),
            None => None,
        };
        let handlers = match &self.handlers {
            Some(indices) => Some(indices.load(&mut *store, &instance)?),
            None => None,
        };
        Ok(Exports {
            reconciler,
            webhooks,
            handlers,
        })
    }
}

/// What one instance exports: the reconciler world's functions and, when the component has
/// them, its webhooks.
pub(crate) struct Exports {
    /// `describe`, `reconcile` and `map`.
    pub(crate) reconciler: Reconciler,
    /// `describe-webhooks`, `validate`, `default` and `convert`.
    pub(crate) webhooks: Option<webhooks::Guest>,
    /// `describe-handlers` and `handle`.
    pub(crate) handlers: Option<handlers::Guest>,
}

struct Instance {
    store: Store<StoreState>,
    exports: Exports,
    uses: u64,
    _share: OwnedSemaphorePermit,
}

/// The instances of one plugin version.
pub(crate) struct Instances {
    engine: Engine,
    calls: GuestCalls,
    code: Code,
    context: Arc<PluginContext>,
    /// The plugin's share of the guest memory budget.
    memory: Arc<MemoryShare>,
    mode: InstanceMode,
    /// One permit per instance this plugin may have at once, busy or idle.
    share: Arc<Semaphore>,
    idle: Mutex<Vec<Instance>>,
    high_water: AtomicUsize,
    instantiations: AtomicU64,
    instantiation_nanos: AtomicU64,
}

impl Instances {
    pub(crate) fn new(
        runtime: &Runtime,
        linked: Linked,
        context: Arc<PluginContext>,
        memory: Arc<MemoryShare>,
        (mode, max_instances): (InstanceMode, u32),
    ) -> Self {
        let relink = Relink::of(
            &runtime.engine,
            &runtime.linker,
            &runtime.compiler.artifacts,
            &linked,
        );
        Instances {
            engine: runtime.engine.clone(),
            calls: runtime.calls(),
            code: Code::new(linked, relink),
            context,
            memory,
            mode,
            share: Arc::new(Semaphore::new(max_instances as usize)),
            idle: Mutex::default(),
            high_water: AtomicUsize::new(0),
            instantiations: AtomicU64::new(0),
            instantiation_nanos: AtomicU64::new(0),
        }
    }

    /// The bytes of the guest memory budget reserved for the plugin.
    pub(crate) fn memory_reserved(&self) -> usize {
        self.memory.reserved()
    }

    /// The largest linear memory any instance grew to, in bytes.
    pub(crate) fn memory_high_water(&self) -> usize {
        self.high_water.load(Ordering::Relaxed)
    }

    /// How many instances were created so far, and the time spent creating them.
    pub(crate) fn instantiations(&self) -> (u64, Duration) {
        let nanos = self.instantiation_nanos.load(Ordering::Relaxed);
        (
            self.instantiations.load(Ordering::Relaxed),
            Duration::from_nanos(nanos),
        )
    }

    /// How many warm instances are idle in the pool.
    pub(crate) fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The code of the version: suspended or not, and its wakes.
    pub(crate) fn code(&self) -> &Code {
        &self.code
    }

    /// Gives back the linked component and the warm instances if no call ran for `idle`.
    pub(crate) fn suspend_if_idle(&self, idle: Duration) {
        let warm = || self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
        if self.code.suspend_if_idle(idle, warm) {
            self.context.observer.suspended();
        }
    }

    /// Runs `call` in an instance under `limit`; traps and timeouts become [`DispatchError`]s
    /// naming `key`, and the instance that caused them is discarded.
    pub(crate) async fn dispatch<R>(
        &self,
        key: &ObjectKey,
        limit: Duration,
        call: impl for<'a> FnOnce(&'a Exports, &'a mut Store<StoreState>) -> Call<'a, R>,
    ) -> Result<R, DispatchError> {
        let deadline = Instant::now() + limit;
        let _in_flight = self.calls.start();
        let _running = self.code.running();
        let run = async {
            let mut instance = self
                .checkout(deadline)
                .await
                .map_err(|(e, store)| self.trapped(key, limit, e, &store))?;
            let result = call(&instance.exports, &mut instance.store).await;
            self.note_memory(&instance.store);
            match result {
                Ok(value) => {
                    self.checkin(instance);
                    Ok(value)
                }
                Err(error) => Err(self.trapped(key, limit, error, &instance.store)),
            }
        };
        tokio::time::timeout(limit, run).await.unwrap_or_else(|_| {
            Err(DispatchError::Trapped {
                plugin: self.context.name.to_string(),
                key: key.clone(),
                kind: TrapKind::Timeout,
                message: format!("did not finish within {limit:?} (waiting on the host)"),
            })
        })
    }

    async fn checkout(
        &self,
        deadline: Instant,
    ) -> Result<Instance, (wasmtime::Error, Store<StoreState>)> {
        let reused = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut instance = match reused {
            Some(instance) => instance,
            None => {
                let share = self.share.clone().acquire_owned().await;
                let share = share.expect("the instance share is never closed");
                let mut store = self.new_store(deadline);
                let observer = &self.context.observer;
                let linked = match self.code.linked(|took| observer.woke(took)).await {
                    Ok(linked) => linked,
                    Err(error) => return Err((error.context("waking the plugin"), store)),
                };
                let started = Instant::now();
                match linked.instantiate(&mut store).await {
                    Ok(exports) => {
                        let took = started.elapsed();
                        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
                        self.context.observer.instantiated(took);
                        self.instantiations.fetch_add(1, Ordering::Relaxed);
                        self.instantiation_nanos.fetch_add(nanos, Ordering::Relaxed);
                        Instance {
                            store,
                            exports,
                            uses: 0,
                            _share: share,
                        }
                    }
                    Err(error) => return Err((error, store)),
                }
            }
        };
        instance.uses += 1;
        instance.store.data_mut().deadline = deadline;
        instance.store.data_mut().read_only = false;
        instance.store.data_mut().reconcile_id = None;
        instance.store.data().stderr.clear();
        instance.store.set_epoch_deadline(1);
        Ok(instance)
    }

    fn checkin(&self, instance: Instance) {
        let InstanceMode::Warm { pool, max_uses } = self.mode else {
            return;
        };
        if max_uses.is_some_and(|max| instance.uses >= max) {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < pool {
            idle.push(instance);
        }
    }

    fn new_store(&self, deadline: Instant) -> Store<StoreState> {
        let mut state = StoreState::new(self.context.clone(), self.memory.clone());
        state.deadline = deadline;
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        store.set_hostcall_fuel(self.context.limits.call_bytes);
        store.epoch_deadline_callback(|store| {
            if Instant::now() >= store.data().deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        store.set_epoch_deadline(1);
        store
    }

    fn note_memory(&self, store: &Store<StoreState>) {
        let reached = store.data().limiter.high_water;
        if self.high_water.fetch_max(reached, Ordering::Relaxed) < reached {
            self.context.observer.memory(reached);
        }
    }

    fn trapped(
        &self,
        key: &ObjectKey,
        limit: Duration,
        error: wasmtime::Error,
        store: &Store<StoreState>,
    ) -> DispatchError {
        let kind = classify(&error);
        let mut message = match kind {
            TrapKind::Timeout => format!("interrupted at its timeout of {limit:?}"),
            _ => error.root_cause().to_string(),
        };
        let stderr = store.data().stderr.recent();
        if !stderr.is_empty() {
            message.push_str("; guest stderr: ");
            message.push_str(&stderr);
        }
        DispatchError::Trapped {
            plugin: self.context.name.to_string(),
            key: key.clone(),
            kind,
            message,
        }
    }
}

/// Sorts a failed call by its cause's type, never by its message.
fn classify(error: &wasmtime::Error) -> TrapKind {
    if error.downcast_ref::<MemoryLimitExceeded>().is_some()
        || error.downcast_ref::<GuestMemoryExhausted>().is_some()
    {
        return TrapKind::Memory;
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => TrapKind::Timeout,
        Some(Trap::UnreachableCodeReached) => TrapKind::Panic,
        _ => TrapKind::Trap,
    }
}
