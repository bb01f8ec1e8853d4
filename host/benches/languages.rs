//! The `webapp` plugin written in each guest language, side by side in one run: component size,
//! the first load with an empty compile cache (compile + describe) beside a load from the cache,
//! the mean instantiation, and the median reconcile latency for the same scenario — a new
//! WebApp reconciled for the first time (finalizer, marker, Deployment, Service and status
//! written), then the converged WebApp reconciled again (reads only), in fresh and warm instance
//! modes — and the JSON bytes the host hands the guest per reconcile (cache reads and the objects
//! writes return). The objects live in the in-memory host, so the figures are the plugin's and
//! the host's, not an apiserver's. Every repeat loads each language anew (a new empty compile
//! cache) and measures every figure once; repeats alternate the languages so the machine's noise
//! hits all, and each figure is printed as the median of the repeats with their range.
//!
//! Run with `cargo bench -p wasmop --bench languages` after `make guests`; a language whose
//! component is not built is listed as missing.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use wasmop::contract::object::ObjectKey;
use wasmop::runtime::{InstanceMode, Plugin, PluginOptions, Runtime, RuntimeConfig};
use wasmop::testing::MemoryHost;

use support::counting::{Counter, counted};
use support::{Spread, median, repo};

/// The languages, by the file their `webapp` builds to under `target/components/`.
const LANGUAGES: [(&str, &str); 5] = [
    ("Rust", "webapp.wasm"),
    ("Python", "webapp-python.wasm"),
    ("TypeScript", "webapp-js.wasm"),
    ("Go", "webapp-go.wasm"),
    (
        "Go (controller-runtime API)",
        "webapp-controller-runtime-go.wasm",
    ),
];
/// Repeats of every measurement per language, alternating languages.
const REPEATS: usize = 3;
/// New WebApps reconciled per repeat.
const CREATES: usize = 20;
/// Reconciles of converged WebApps per repeat and instance mode.
const CONVERGED: usize = 100;
/// Reconciles a new WebApp may take to stop writing.
const SETTLE_ROUNDS: usize = 5;

/// One language's plugin in one repeat, loaded twice (fresh instances from an empty compile
/// cache, warm ones from the cache) against its own objects.
struct Subject {
    name: &'static str,
    cold_load: Duration,
    cached_load: Duration,
    host: Arc<MemoryHost>,
    bytes: Arc<Counter>,
    fresh: Plugin,
    warm: Plugin,
    /// The runtimes the plugins were loaded into, kept so their epoch tickers run.
    _runtimes: [Runtime; 2],
    /// The compile cache the runtimes were given.
    _cache: tempfile::TempDir,
    create: Vec<Duration>,
    converged_fresh: Vec<Duration>,
    converged_warm: Vec<Duration>,
}

/// One repeat's figures for one language.
struct Repeat {
    cold_load: Duration,
    cached_load: Duration,
    mean_instantiation: Duration,
    create: Duration,
    converged_fresh: Duration,
    converged_warm: Duration,
}

/// One language's repeats, and the JSON bytes its reconciles were handed over all of them.
struct Language {
    name: &'static str,
    file: PathBuf,
    size: u64,
    repeats: Vec<Repeat>,
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
            cold_load,
            cached_load,
            host,
            bytes,
            fresh,
            warm,
            _runtimes: [cold, cached],
            _cache: cache,
            create: Vec::new(),
            converged_fresh: Vec::new(),
            converged_warm: Vec::new(),
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

    /// One repeat: new WebApps reconciled until they settle, then converged ones re-reconciled;
    /// the JSON bytes handed to the guest go to `language`.
    async fn run(mut self, language: &mut Language) -> Repeat {
        for i in 0..CREATES {
            self.host.insert(webapp(i));
            self.bytes.take();
            let (took, wrote) = self.reconcile(&self.fresh, &key(i)).await;
            language.create_bytes.push(self.bytes.take());
            assert!(
                wrote,
                "{}: a new WebApp was reconciled without a write",
                self.name
            );
            self.create.push(took);
            self.settle(&key(i)).await;
            self.bytes.take();
        }
        for round in 0..CONVERGED {
            let key = key(round % CREATES);
            for warm in [false, true] {
                let plugin = if warm { &self.warm } else { &self.fresh };
                let (took, wrote) = self.reconcile(plugin, &key).await;
                assert!(!wrote, "{}: the converged {key} was written", self.name);
                language.converged_bytes.push(self.bytes.take());
                let samples = if warm {
                    &mut self.converged_warm
                } else {
                    &mut self.converged_fresh
                };
                samples.push(took);
            }
        }
        let (count, total) = self.fresh.instantiations();
        Repeat {
            cold_load: self.cold_load,
            cached_load: self.cached_load,
            mean_instantiation: total / u32::try_from(count.max(1)).unwrap_or(u32::MAX),
            create: median(self.create),
            converged_fresh: median(self.converged_fresh),
            converged_warm: median(self.converged_warm),
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
}

/// One figure of `language` over its repeats, in seconds times `unit`, as `median (min–max)`.
fn spread(
    language: &Language,
    figure: fn(&Repeat) -> Duration,
    unit: f64,
    decimals: usize,
) -> String {
    Spread::of(
        language
            .repeats
            .iter()
            .map(|repeat| figure(repeat).as_secs_f64() * unit),
    )
    .show(decimals)
}

fn print(languages: &[Language], missing: &[&str]) {
    const MS: f64 = 1e3;
    println!(
        "webapp per guest language: median (min–max) over {REPEATS} alternating repeats; each repeat loads every language anew and reconciles {CREATES} new WebApps and {CONVERGED} converged ones per mode; a reconcile figure of a repeat is the median of its reconciles, instantiate the mean of its fresh instances; JSON bytes are medians over all repeats"
    );
    println!(
        "| language | component | load, empty cache, s | load, cached, ms | instantiate (mean), ms | new WebApp, fresh, ms | converged, fresh, ms | converged, warm, ms | JSON to guest, new / converged |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for language in languages {
        println!(
            "| {} | {:.1} MiB | {} | {} | {} | {} | {} | {} | {} / {} B |",
            language.name,
            language.size as f64 / (1 << 20) as f64,
            spread(language, |r| r.cold_load, 1.0, 2),
            spread(language, |r| r.cached_load, MS, 1),
            spread(language, |r| r.mean_instantiation, MS, 3),
            spread(language, |r| r.create, MS, 2),
            spread(language, |r| r.converged_fresh, MS, 2),
            spread(language, |r| r.converged_warm, MS, 3),
            median(language.create_bytes.clone()),
            median(language.converged_bytes.clone()),
        );
    }
    for name in missing {
        println!("| {name} | not built | | | | | | | |");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let components = repo().join("target/components");
    let mut languages = Vec::new();
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
        languages.push(Language {
            name,
            size: std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0),
            file,
            repeats: Vec::with_capacity(REPEATS),
            create_bytes: Vec::new(),
            converged_bytes: Vec::new(),
        });
    }
    for repeat in 1..=REPEATS {
        for language in &mut languages {
            eprintln!(
                "[languages] repeat {repeat}/{REPEATS}: {} (compiling {})",
                language.name,
                language.file.display()
            );
            let subject = Subject::load(language.name, &language.file).await;
            let figures = subject.run(language).await;
            language.repeats.push(figures);
        }
    }
    print(&languages, &missing);
}
