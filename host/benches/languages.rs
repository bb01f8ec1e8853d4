//! The `webapp` plugin written in each guest language, side by side in one run: component size,
//! the first load with an empty compile cache (compile + describe) beside a load from the cache,
//! the mean instantiation, and the median reconcile latency for the same scenario — a new
//! WebApp reconciled for the first time (finalizer, marker, Deployment, Service and status
//! written), then the converged WebApp reconciled again (reads only), in fresh and warm instance
//! modes — and the JSON bytes the host hands the guest per reconcile (cache reads and the objects
//! writes return). The objects live in the in-memory host, so the figures are the plugin's and
//! the host's, not an apiserver's. Repeats alternate the languages so the machine's noise hits
//! all.
//!
//! Run with `cargo bench -p wasmop --bench languages` after `make guests`; a language whose
//! component is not built is listed as missing.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use wasmop::object::ObjectKey;
use wasmop::runtime::memory::MemoryHost;
use wasmop::runtime::{InstanceMode, Plugin, PluginOptions, Runtime, RuntimeConfig};

use support::counting::{Counter, counted};
use support::{median, repo};

/// The languages, by the file their `webapp` builds to under `target/components/`.
const LANGUAGES: [(&str, &str); 4] = [
    ("Rust", "webapp.wasm"),
    ("Python", "webapp-python.wasm"),
    ("TypeScript", "webapp-js.wasm"),
    ("Go", "webapp-go.wasm"),
];
/// Runs of the reconcile measurements per language, alternating languages.
const REPEATS: usize = 3;
/// New WebApps reconciled per run.
const CREATES: usize = 20;
/// Reconciles of converged WebApps per run and instance mode.
const CONVERGED: usize = 100;
/// Reconciles a new WebApp may take to stop writing.
const SETTLE_ROUNDS: usize = 5;

/// One language's plugin, loaded twice (fresh and warm instances) against its own objects.
struct Subject {
    name: &'static str,
    size: u64,
    cold_load: Duration,
    cached_load: Duration,
    host: Arc<MemoryHost>,
    bytes: Arc<Counter>,
    fresh: Plugin,
    warm: Plugin,
    created: usize,
    create: Vec<Duration>,
    converged_fresh: Vec<Duration>,
    converged_warm: Vec<Duration>,
    create_bytes: Vec<usize>,
    converged_bytes: Vec<usize>,
}

fn webapp(i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "example.wasmop.dev/v1alpha1",
        "kind": "WebApp",
        "metadata": {"namespace": "bench", "name": format!("app-{i:04}")},
        "spec": {"image": "nginx:1.27", "replicas": 1 + i % 3, "port": 8080},
    })
}

fn key(i: usize) -> ObjectKey {
    ObjectKey::new("bench", format!("app-{i:04}"))
}

async fn load(
    runtime: &Runtime,
    file: &Path,
    host: &Arc<MemoryHost>,
    bytes: &Arc<Counter>,
    mode: InstanceMode,
) -> (Plugin, Duration) {
    let options = PluginOptions {
        mode,
        ..PluginOptions::default()
    };
    let started = Instant::now();
    let plugin = runtime
        .load(file, options, |_| counted(host.services(), bytes))
        .await
        .unwrap_or_else(|e| panic!("{} loads: {e}", file.display()));
    (plugin, started.elapsed())
}

impl Subject {
    /// Loads `file` with an empty compile cache, then again from it in warm mode.
    async fn load(name: &'static str, file: &Path) -> Subject {
        let cache = tempfile::tempdir().expect("a temporary compile cache");
        let config = || RuntimeConfig {
            cache_dir: cache.path().to_owned(),
            ..RuntimeConfig::default()
        };
        let host = MemoryHost::new();
        let bytes = Arc::new(Counter::default());
        let cold = Runtime::new(config()).expect("the runtime starts");
        let (fresh, cold_load) = load(&cold, file, &host, &bytes, InstanceMode::Fresh).await;
        let cached = Runtime::new(config()).expect("the runtime starts");
        let warm_mode = InstanceMode::Warm {
            pool: 1,
            max_uses: None,
        };
        let (warm, cached_load) = load(&cached, file, &host, &bytes, warm_mode).await;
        Subject {
            name,
            size: std::fs::metadata(file).map(|m| m.len()).unwrap_or(0),
            cold_load,
            cached_load,
            host,
            bytes,
            fresh,
            warm,
            created: 0,
            create: Vec::new(),
            converged_fresh: Vec::new(),
            converged_warm: Vec::new(),
            create_bytes: Vec::new(),
            converged_bytes: Vec::new(),
        }
    }

    /// Times one reconcile of `key`; returns whether it wrote anything.
    async fn reconcile(&self, plugin: &Plugin, key: &ObjectKey) -> (Duration, bool) {
        let started = Instant::now();
        plugin
            .reconcile(key)
            .await
            .unwrap_or_else(|e| panic!("{}: reconcile of {key} failed: {e}", self.name));
        let took = started.elapsed();
        (took, !self.host.take_writes().is_empty())
    }

    /// One run: new WebApps reconciled until they settle, then converged ones re-reconciled.
    async fn run(&mut self) {
        let first = self.created;
        for i in first..first + CREATES {
            self.host.insert(webapp(i));
            self.bytes.take();
            let (took, wrote) = self.reconcile(&self.fresh, &key(i)).await;
            self.create_bytes.push(self.bytes.take());
            assert!(
                wrote,
                "{}: a new WebApp was reconciled without a write",
                self.name
            );
            self.create.push(took);
            self.settle(&key(i)).await;
            self.bytes.take();
        }
        self.created += CREATES;
        for round in 0..CONVERGED {
            let key = key(round % self.created);
            for warm in [false, true] {
                let plugin = if warm { &self.warm } else { &self.fresh };
                let (took, wrote) = self.reconcile(plugin, &key).await;
                assert!(!wrote, "{}: the converged {key} was written", self.name);
                self.converged_bytes.push(self.bytes.take());
                let samples = if warm {
                    &mut self.converged_warm
                } else {
                    &mut self.converged_fresh
                };
                samples.push(took);
            }
        }
    }

    async fn settle(&self, key: &ObjectKey) {
        for _ in 0..SETTLE_ROUNDS {
            if !self.reconcile(&self.fresh, key).await.1 {
                return;
            }
        }
        panic!(
            "{}: {key} still writes after {SETTLE_ROUNDS} reconciles",
            self.name
        );
    }

    fn mean_instantiation(&self) -> Duration {
        let (count, total) = self.fresh.instantiations();
        total / u32::try_from(count.max(1)).unwrap_or(u32::MAX)
    }
}

fn print(subjects: Vec<Subject>, missing: &[&str]) {
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
    println!(
        "webapp per guest language: medians over {REPEATS} alternating runs ({CREATES} new WebApps, {CONVERGED} converged reconciles per mode each)"
    );
    println!(
        "| language | component | load, empty cache | load, cached | instantiate (mean) | new WebApp, fresh | converged, fresh | converged, warm | JSON to guest, new / converged |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for s in subjects {
        println!(
            "| {} | {:.1} MiB | {:.2} s | {} | {} | {} | {} | {} | {} / {} B |",
            s.name,
            s.size as f64 / (1 << 20) as f64,
            s.cold_load.as_secs_f64(),
            ms(s.cached_load),
            ms(s.mean_instantiation()),
            ms(median(s.create.clone())),
            ms(median(s.converged_fresh.clone())),
            ms(median(s.converged_warm.clone())),
            median(s.create_bytes.clone()),
            median(s.converged_bytes.clone()),
        );
    }
    for name in missing {
        println!("| {name} | not built | | | | | | | |");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let components = repo().join("target/components");
    let mut subjects = Vec::new();
    let mut missing = Vec::new();
    for (name, file) in LANGUAGES {
        let file = components.join(file);
        if !file.exists() {
            eprintln!(
                "[languages] {name}: {} is not built (make guests)",
                file.display()
            );
            missing.push(name);
            continue;
        }
        eprintln!("[languages] {name}: compiling {} ...", file.display());
        subjects.push(Subject::load(name, &file).await);
    }
    for repeat in 1..=REPEATS {
        for subject in &mut subjects {
            eprintln!("[languages] run {repeat}/{REPEATS}: {}", subject.name);
            subject.run().await;
        }
    }
    print(subjects, &missing);
}
