//! Suspending idle plugins: a plugin version none of whose calls ran for the runtime's idle
//! period gives back its linked component — the mapping of its compiled code, what wasmtime keeps
//! of it, and with them the pool slots kept warm for it — and its warm instances; its next call
//! maps the artifact again and links it (its wake, timed and counted). Its registration,
//! informers, queue and shares stay: only the guest's code and memory go.
//!
//! Invariants: a call holds its [`Linked`] from its checkout to its end, so suspension never takes
//! code from under a running instance; a wake maps the artifact file held open since the load
//! (the bytes checked then, whatever the cache evicted since); a version whose component is only
//! a copy in memory (the cache could not be written) is never suspended, having nothing to map
//! again from.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wasmtime::Engine;
use wasmtime::component::Linker;

use crate::runtime::artifacts::{Artifact, Artifacts};
use crate::runtime::host::StoreState;
use crate::runtime::instances::{Instances, Linked};

/// The shortest and longest time between two looks for idle plugins.
const LOOK_BOUNDS: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(10));

/// How a suspended version links its component again.
pub(crate) struct Relink {
    engine: Engine,
    linker: Arc<Linker<StoreState>>,
    artifacts: Arc<Artifacts>,
    artifact: Artifact,
}

impl Relink {
    /// How to link again what `linked` links, when it is mapped from an artifact.
    pub(crate) fn of(
        engine: &Engine,
        linker: &Arc<Linker<StoreState>>,
        artifacts: &Arc<Artifacts>,
        linked: &Linked,
    ) -> Option<Self> {
        Some(Relink {
            engine: engine.clone(),
            linker: linker.clone(),
            artifacts: artifacts.clone(),
            artifact: linked.artifact()?.clone(),
        })
    }

    /// Maps the artifact and links it. Blocking: call it off the async runtime.
    fn link(&self) -> wasmtime::Result<Linked> {
        let mapped = self.artifacts.remap(&self.engine, &self.artifact)?;
        Linked::link(&self.linker, mapped)
    }
}

/// One version's linked component — dropped while it is suspended — and its use.
pub(crate) struct Code {
    linked: Mutex<Option<Linked>>,
    relink: Option<Arc<Relink>>,
    /// Calls running now.
    calls: AtomicUsize,
    /// When the last call ended, in nanoseconds after `born`.
    last: AtomicU64,
    born: Instant,
    wakes: AtomicU64,
    wake_nanos: AtomicU64,
}

/// A call counted as running on a version's code until dropped.
pub(crate) struct Running<'a>(&'a Code);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let since = u64::try_from(self.0.born.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.0.last.fetch_max(since, Ordering::Relaxed);
        self.0.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Code {
    /// The code of `linked`, which `relink` links again after a suspension (never, if `None`).
    pub(crate) fn new(linked: Linked, relink: Option<Relink>) -> Self {
        Code {
            linked: Mutex::new(Some(linked)),
            relink: relink.map(Arc::new),
            calls: AtomicUsize::new(0),
            last: AtomicU64::new(0),
            born: Instant::now(),
            wakes: AtomicU64::new(0),
            wake_nanos: AtomicU64::new(0),
        }
    }

    /// Counts a call as running until the guard drops: no suspension meanwhile.
    pub(crate) fn running(&self) -> Running<'_> {
        self.calls.fetch_add(1, Ordering::AcqRel);
        Running(self)
    }

    /// The linked component, linked again first if the version is suspended; `woke` is told how
    /// long a wake took.
    pub(crate) async fn linked(&self, woke: impl FnOnce(Duration)) -> wasmtime::Result<Linked> {
        if let Some(linked) = self.held().clone() {
            return Ok(linked);
        }
        let relink = self
            .relink
            .clone()
            .expect("only a relinkable version is suspended");
        let started = Instant::now();
        let linked = tokio::task::spawn_blocking(move || relink.link())
            .await
            .map_err(|e| wasmtime::format_err!("the wake's thread failed: {e}"))??;
        let took = started.elapsed();
        self.wakes.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.wake_nanos.fetch_add(nanos, Ordering::Relaxed);
        woke(took);
        Ok(self.held().get_or_insert(linked).clone())
    }

    /// Drops the linked component if no call ran for `idle`, running `before` first (which gives
    /// back what holds the component beside it); whether it did.
    pub(crate) fn suspend_if_idle(&self, idle: Duration, before: impl FnOnce()) -> bool {
        if self.relink.is_none() || self.calls.load(Ordering::Acquire) > 0 {
            return false;
        }
        let last = Duration::from_nanos(self.last.load(Ordering::Relaxed));
        if self.born.elapsed().saturating_sub(last) < idle {
            return false;
        }
        let mut held = self.held();
        if held.is_none() || self.calls.load(Ordering::Acquire) > 0 {
            return false;
        }
        before();
        *held = None;
        drop(held);
        if let Some(relink) = &self.relink {
            relink.artifact.release();
        }
        true
    }

    /// Whether the version is suspended now.
    pub(crate) fn suspended(&self) -> bool {
        self.held().is_none()
    }

    /// How many wakes there were so far, and the time they took.
    pub(crate) fn wakes(&self) -> (u64, Duration) {
        let nanos = self.wake_nanos.load(Ordering::Relaxed);
        (
            self.wakes.load(Ordering::Relaxed),
            Duration::from_nanos(nanos),
        )
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Option<Linked>> {
        self.linked.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The thread that looks for idle plugin versions and suspends them, until dropped.
pub(crate) struct Suspender {
    watched: Arc<Mutex<Vec<Weak<Instances>>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Suspender {
    /// Starts looking, every quarter of `idle` (within [`LOOK_BOUNDS`]), for versions idle that
    /// long.
    pub(crate) fn start(idle: Duration) -> std::io::Result<Self> {
        let watched: Arc<Mutex<Vec<Weak<Instances>>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let every = (idle / 4).clamp(LOOK_BOUNDS.0, LOOK_BOUNDS.1);
        let (list, stopped) = (watched.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("wasmop-suspend".into())
            .spawn(move || {
                while !stopped.load(Ordering::Acquire) {
                    std::thread::park_timeout(every);
                    for instances in alive(&list) {
                        instances.suspend_if_idle(idle);
                    }
                }
            })?;
        Ok(Suspender {
            watched,
            stop,
            thread: Some(thread),
        })
    }

    /// Watches `instances` until they are dropped.
    pub(crate) fn watch(&self, instances: &Arc<Instances>) {
        let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        watched.retain(|held| held.strong_count() > 0);
        watched.push(Arc::downgrade(instances));
    }
}

/// The watched versions still loaded.
fn alive(watched: &Mutex<Vec<Weak<Instances>>>) -> Vec<Arc<Instances>> {
    let watched = watched.lock().unwrap_or_else(|e| e.into_inner());
    watched.iter().filter_map(Weak::upgrade).collect()
}

impl Drop for Suspender {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}
