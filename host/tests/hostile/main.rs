//! The sandbox attacked as a malicious plugin author would, on the real control plane. Each test
//! loads a purpose-built hostile guest (`tests/guests/hostile`, `greedy`, `describe-flood`) with
//! the production client and event recorder, makes it attack one promise of `SECURITY.md`, and
//! checks what a user would: the apiserver's own request counters show that nothing was sent for
//! the attempt (or no more than the plugin's rate), the target is untouched, the host's memory
//! stayed bounded, the refusal is typed and names the plugin, and a well-behaved plugin beside the
//! attack, repeated at the pace the host allows it, kept at least three quarters of its
//! throughput (0.9 or more on an otherwise idle machine; the bound leaves room for a machine
//! busy with other work, where the attack's own share of the cores weighs more).

#[path = "../all/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use wasmop::cache::Cache;
use wasmop::contract::Rate;
use wasmop::contract::object::{GroupVersionKind, ObjectKey};
use wasmop::contract::{GuestLimits, Refusal};
use wasmop::runtime::{
    DispatchError, InstanceMode, Plugin, PluginOptions, Runtime, RuntimeError, TrapKind,
};
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(240);
/// The hostile guests need room to build their floods.
const GUEST_MEMORY: usize = 256 << 20;
/// How far the test process's memory may grow beyond the guest's own cap during an attack.
const HOST_SLACK: u64 = 256 << 20;

/// One attack at a time: the apiserver's request counters are process-wide, so a test counting
/// them must not share the apiserver with another test of this file.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A namespace with a shared cache of its ConfigMaps, and a runtime to load plugins into.
struct Arena {
    plane: Arc<ControlPlane>,
    kube: kube::Client,
    cache: Arc<Cache>,
    _configmaps: Arc<wasmop::cache::Informer>,
    runtime: Runtime,
    namespace: String,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

impl Arena {
    async fn new(prefix: &str) -> anyhow::Result<Self> {
        let serial = SERIAL.lock().await;
        let plane = shared_by(module_path!()).await?;
        let namespace = plane.create_namespace(prefix).await?;
        let kube = plane.client().await?;
        let cache = Arc::new(Cache::new(kube.clone()));
        let informer = cache
            .informer(&GroupVersionKind::gvk("", "v1", "ConfigMap"))
            .await?;
        informer.wait_synced().await;
        Ok(Arena {
            plane,
            kube,
            cache,
            _configmaps: informer,
            runtime: common::runtime(),
            namespace,
            _serial: serial,
        })
    }

    /// Loads component `name` with the production client and event recorder.
    async fn load(&self, name: &str, options: PluginOptions) -> Result<Plugin, RuntimeError> {
        let cluster = (&self.kube, &self.cache);
        common::load_on_cluster(&self.runtime, cluster, name, options).await
    }

    async fn hostile(&self, limits: GuestLimits) -> anyhow::Result<Plugin> {
        let options = PluginOptions {
            memory_limit: GUEST_MEMORY,
            reconcile_timeout: Some(Duration::from_secs(20)),
            limits,
            ..PluginOptions::default()
        };
        Ok(self.load("guest-hostile", options).await?)
    }

    fn key(&self, name: &str) -> ObjectKey {
        ObjectKey::new(&self.namespace, name)
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.kube.clone(), &self.namespace)
    }

    /// Creates ConfigMap `name` and waits until the cache holds it.
    async fn configmap(&self, name: &str) -> anyhow::Result<()> {
        let object = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        self.configmaps()
            .create(&PostParams::default(), &object)
            .await?;
        let informer = self
            .cache
            .running(&GroupVersionKind::gvk("", "v1", "ConfigMap"))
            .expect("the ConfigMap informer runs");
        while informer.get(&self.key(name)).is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// Requests the apiserver has answered for `resource` with one of `verbs`, from its own
    /// metrics (`apiserver_request_total`).
    async fn served(&self, resource: &str, verbs: &[&str]) -> anyhow::Result<f64> {
        let request = http::Request::get("/metrics").body(Vec::new())?;
        let text = self.kube.request_text(request).await?;
        let samples = common::scrape::parse(&text);
        let counted = samples.get("apiserver_request_total").map(|all| {
            all.iter()
                .filter(|(labels, _)| {
                    labels.get("resource").map(String::as_str) == Some(resource)
                        && labels
                            .get("verb")
                            .is_some_and(|v| verbs.contains(&v.as_str()))
                })
                .map(|(_, value)| value)
                .sum()
        });
        Ok(counted.unwrap_or(0.0))
    }
}

const WRITES: &[&str] = &[
    "POST",
    "PUT",
    "PATCH",
    "APPLY",
    "DELETE",
    "DELETECOLLECTION",
];

/// The attempts a guest reported in its terminal error: `[{"call": .., "result": ..}]`.
fn attempts(result: Result<wasmop::runtime::Outcome, DispatchError>) -> Vec<(String, String)> {
    let Err(DispatchError::Failed { message, .. }) = result else {
        panic!("expected the guest's report as a terminal error, got {result:?}");
    };
    let report: Vec<Value> = serde_json::from_str(&message).expect("the guest reports JSON");
    report
        .iter()
        .map(|a| {
            (
                a["call"].as_str().unwrap().to_owned(),
                a["result"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The test process's resident memory, in bytes.
fn rss() -> u64 {
    status_bytes("/proc/self/status", "VmRSS:")
}

/// A size field (`VmRSS:`, `VmHWM:`) of a `/proc/<pid>/status` file, in bytes.
fn status_bytes(path: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(path).expect("procfs");
    let line = status.lines().find(|l| l.starts_with(field)).expect(field);
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Fails when the process grew by `allowance` bytes or more since it had `baseline`.
fn assert_grew_less_than(baseline: u64, allowance: u64) {
    let grown = rss().saturating_sub(baseline);
    eprintln!(
        "the host grew by {} MiB (bound {} MiB)",
        grown >> 20,
        allowance >> 20
    );
    assert!(grown < allowance, "the host grew by {} MiB", grown >> 20);
}

fn refused(plugin: &Plugin, why: Refusal) -> u64 {
    plugin.refusals()[why as usize].1
}

/// Pairs of measurements of the neighbour alone and beside an attack.
const ROUNDS: u32 = 9;
/// The ConfigMaps guest-good reconciles, converged before it is measured.
const CONFIGMAPS: u32 = 50;
/// Passes over them in one measurement: about a second of reconciles in a debug build.
const PASSES: u32 = 20;
/// How often a repeated attack strikes: the pace at which the workqueue retries failing keys
/// (its overall limit, 10 per second).
const STRIKE: Duration = Duration::from_millis(100);
/// How often a repeated load strikes: ten times the pace at which the `WasmReconciler` source
/// retries a generation that failed to load.
const LOAD_STRIKE: Duration = Duration::from_secs(1);

/// guest-good with converged ConfigMaps to reconcile: the well-behaved neighbour.
struct Neighbour {
    good: Plugin,
    names: Vec<String>,
}

impl Arena {
    async fn neighbour(&self) -> anyhow::Result<Neighbour> {
        let good = self.load("guest-good", PluginOptions::default()).await?;
        let names: Vec<String> = (0..CONFIGMAPS).map(|i| format!("good-{i}")).collect();
        for name in &names {
            self.configmap(name).await?;
            good.reconcile(&self.key(name)).await?;
        }
        Ok(Neighbour { good, names })
    }

    /// guest-good's reconciles per second over its converged ConfigMaps.
    async fn throughput(&self, neighbour: &Neighbour) -> anyhow::Result<f64> {
        let started = Instant::now();
        for _ in 0..PASSES {
            for name in &neighbour.names {
                neighbour.good.reconcile(&self.key(name)).await?;
            }
        }
        Ok(f64::from(PASSES * CONFIGMAPS) / started.elapsed().as_secs_f64())
    }

    /// The share of its throughput the neighbour keeps while `attack`'s tasks run: the median
    /// over [`ROUNDS`] pairs of measurements without and with them, in alternating order so a
    /// machine that slows down or speeds up weighs on both sides alike.
    async fn kept(
        &self,
        neighbour: &Neighbour,
        attack: impl Fn() -> Vec<tokio::task::JoinHandle<()>>,
    ) -> anyhow::Result<f64> {
        let (mut alone, mut beside) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            if round % 2 == 0 {
                alone.push(self.throughput(neighbour).await?);
            }
            let tasks = attack();
            beside.push(self.throughput(neighbour).await?);
            for task in tasks {
                task.abort();
                let _ = task.await;
            }
            if round % 2 == 1 {
                alone.push(self.throughput(neighbour).await?);
            }
        }
        eprintln!("guest-good rounds: alone {alone:.0?}, beside {beside:.0?}");
        let ratios = alone.iter().zip(&beside).map(|(a, b)| b / a).collect();
        let kept = median(ratios);
        eprintln!("guest-good kept {kept:.2} of its throughput beside the attack");
        Ok(kept)
    }
}

/// A task reconciling `keys` with `plugin` in turn, again and again, [`STRIKE`] apart.
fn strike(plugin: &Arc<Plugin>, keys: Vec<ObjectKey>) -> tokio::task::JoinHandle<()> {
    let plugin = plugin.clone();
    tokio::spawn(async move {
        for key in keys.iter().cycle() {
            let _ = plugin.reconcile(key).await;
            tokio::time::sleep(STRIKE).await;
        }
    })
}

/// Fails unless the neighbour kept at least three quarters of its throughput.
fn assert_kept(kept: f64) {
    assert!(
        kept >= 0.75,
        "guest-good kept only {kept:.2} of its throughput"
    );
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crafted_names_and_namespaces_cannot_reach_a_secret() -> anyhow::Result<()> {
    within(LIMIT, "the path attack", async {
        let arena = Arena::new("hostile-path").await?;
        let secrets: Api<Secret> = Api::namespaced(arena.kube.clone(), &arena.namespace);
        let secret = serde_json::from_value(json!({
            "metadata": {"name": "token"}, "stringData": {"token": "s3cret"},
        }))?;
        secrets.create(&PostParams::default(), &secret).await?;
        let hostile = Arc::new(arena.hostile(GuestLimits::default()).await?);
        let neighbour = arena.neighbour().await?;
        let (secret_writes, configmap_writes) = (
            arena.served("secrets", WRITES).await?,
            arena.served("configmaps", WRITES).await?,
        );
        let baseline = rss();

        let report = attempts(hostile.reconcile(&arena.key("path-token")).await);
        assert_eq!(report.len(), 10, "{report:?}");
        for (call, result) in &report {
            assert!(
                result == "invalid" || result == "forbidden",
                "attempt {call} was not refused: {result}"
            );
        }
        let kept = arena
            .kept(&neighbour, || {
                vec![strike(&hostile, vec![arena.key("path-token")])]
            })
            .await?;

        assert_eq!(arena.served("secrets", WRITES).await?, secret_writes);
        assert_eq!(
            arena.served("configmaps", WRITES).await?,
            configmap_writes,
            "a crafted request reached the apiserver"
        );
        let untouched = secrets.get("token").await?;
        assert!(
            untouched.metadata.labels.is_none(),
            "{:?}",
            untouched.metadata
        );
        assert!(refused(&hostile, Refusal::Invalid) + refused(&hostile, Refusal::Undeclared) >= 9);
        assert_grew_less_than(baseline, HOST_SLACK);
        assert_kept(kept);
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_selectors_names_and_objects_are_invalid_and_unsent() -> anyhow::Result<()> {
    within(LIMIT, "the size attacks", async {
        let arena = Arena::new("hostile-size").await?;
        let hostile = Arc::new(arena.hostile(GuestLimits::default()).await?);
        let neighbour = arena.neighbour().await?;
        let before = arena.served("configmaps", WRITES).await?;
        let baseline = rss();
        let selector = attempts(hostile.reconcile(&arena.key("selector")).await);
        let big = attempts(hostile.reconcile(&arena.key("big-object")).await);
        for (call, result) in selector.iter().chain(&big) {
            assert_eq!(result, "invalid", "{call}");
        }
        let kept = arena
            .kept(&neighbour, || {
                let keys = vec![arena.key("selector"), arena.key("big-object")];
                vec![strike(&hostile, keys)]
            })
            .await?;
        assert_eq!(arena.served("configmaps", WRITES).await?, before);
        assert_grew_less_than(baseline, GUEST_MEMORY as u64 + HOST_SLACK);
        assert_kept(kept);
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_flood_waits_for_its_rate_and_memory_stays_bounded() -> anyhow::Result<()> {
    within(LIMIT, "the event flood", async {
        let arena = Arena::new("hostile-events").await?;
        arena.configmap("events-1000").await?;
        let options = PluginOptions {
            memory_limit: GUEST_MEMORY,
            reconcile_timeout: Some(Duration::from_secs(5)),
            limits: GuestLimits {
                events: Rate::new(10.0, 50),
                ..GuestLimits::default()
            },
            ..PluginOptions::default()
        };
        let hostile = Arc::new(arena.load("guest-hostile", options).await?);
        let neighbour = arena.neighbour().await?;
        let before = arena.served("events", WRITES).await?;
        let baseline = rss();
        let started = Instant::now();
        let outcome = hostile.reconcile(&arena.key("events-1000")).await;
        assert_eq!(
            outcome.unwrap_err().trap_kind(),
            Some(TrapKind::Timeout),
            "1000 events at 10/s outlast a 5 s reconcile"
        );
        let kept = arena
            .kept(&neighbour, || {
                vec![strike(&hostile, vec![arena.key("events-1000")])]
            })
            .await?;
        let took = started.elapsed();
        assert_grew_less_than(baseline, GUEST_MEMORY as u64 + HOST_SLACK);
        tokio::time::sleep(Duration::from_secs(3)).await;

        let published = arena.served("events", WRITES).await? - before;
        let rate = GuestLimits::default().events;
        let allowed = f64::from(rate.burst) + rate.per_second * took.as_secs_f64();
        eprintln!("event flood: {published} event writes in {took:?}, {allowed:.0} allowed");
        assert!(
            published <= allowed + 1.0,
            "{published} event writes, {allowed} allowed"
        );
        assert!(
            refused(&hostile, Refusal::EventThrottled) > 0,
            "waits are counted"
        );
        assert!(
            refused(&hostile, Refusal::EventDropped) > 0,
            "oversized reasons are dropped"
        );
        assert_kept(kept);
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aliased_log_fields_trap_before_the_host_copies_them() -> anyhow::Result<()> {
    within(LIMIT, "the log flood", async {
        let arena = Arena::new("hostile-logs").await?;
        let hostile = Arc::new(arena.hostile(GuestLimits::default()).await?);
        let neighbour = arena.neighbour().await?;
        let before = arena.served("configmaps", WRITES).await?;
        let baseline = rss();
        let error = hostile.reconcile(&arena.key("logs")).await.unwrap_err();
        let message = error.to_string();
        assert!(message.contains("guest-hostile"), "{message}");
        assert!(message.contains("too much data"), "{message}");
        let kept = arena
            .kept(&neighbour, || {
                vec![strike(&hostile, vec![arena.key("logs")])]
            })
            .await?;
        assert_eq!(arena.served("configmaps", WRITES).await?, before);
        assert_grew_less_than(baseline, GUEST_MEMORY as u64 + HOST_SLACK);
        assert_kept(kept);
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aliased_map_output_and_describe_lists_are_refused() -> anyhow::Result<()> {
    within(LIMIT, "the map and describe floods", async {
        let arena = Arc::new(Arena::new("hostile-map").await?);
        let hostile = Arc::new(arena.hostile(GuestLimits::default()).await?);
        let neighbour = arena.neighbour().await?;
        let before = arena.served("configmaps", WRITES).await?;
        let baseline = rss();
        let namespace = GroupVersionKind::gvk("", "v1", "Namespace");
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        let object = object.to_string();
        let mapped = hostile
            .map(&namespace, &object, &ObjectKey::new("", "x"))
            .await;
        let message = mapped.unwrap_err().to_string();
        assert!(
            message.contains("guest-hostile") && message.contains("too much data"),
            "{message}"
        );

        let options = PluginOptions {
            memory_limit: GUEST_MEMORY,
            ..PluginOptions::default()
        };
        let flood = arena.load("guest-describe-flood", options.clone()).await;
        let Err(error @ RuntimeError::Describe { .. }) = flood else {
            panic!("a flooding describe() loaded: {:?}", flood.err());
        };
        assert!(error.to_string().contains("too much data"), "{error}");

        let kept = arena
            .kept(&neighbour, || {
                let (hostile, namespace, object) =
                    (hostile.clone(), namespace.clone(), object.clone());
                let map = tokio::spawn(async move {
                    loop {
                        let _ = hostile
                            .map(&namespace, &object, &ObjectKey::new("", "x"))
                            .await;
                        tokio::time::sleep(STRIKE).await;
                    }
                });
                let (arena, options) = (arena.clone(), options.clone());
                let describe = tokio::spawn(async move {
                    loop {
                        let _ = arena.load("guest-describe-flood", options.clone()).await;
                        tokio::time::sleep(LOAD_STRIKE).await;
                    }
                });
                vec![map, describe]
            })
            .await?;
        assert_eq!(arena.served("configmaps", WRITES).await?, before);
        assert_grew_less_than(baseline, 2 * GUEST_MEMORY as u64 + HOST_SLACK);
        assert_kept(kept);
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_greedy_registration_is_refused_by_the_ceiling() -> anyhow::Result<()> {
    within(LIMIT, "the greedy plugin", async {
        let arena = Arc::new(Arena::new("hostile-greedy").await?);
        let neighbour = arena.neighbour().await?;
        let before = arena.served("secrets", WRITES).await?;
        let baseline = rss();
        let greedy = arena.load("guest-greedy", PluginOptions::default()).await;
        let Err(error @ RuntimeError::Refused { .. }) = greedy else {
            panic!("a greedy plugin loaded: {:?}", greedy.err());
        };
        let message = error.to_string();
        assert!(message.contains("guest-greedy"), "{message}");
        assert!(
            message.contains("max-concurrent-reconciles 4294967295"),
            "{message}"
        );
        let kept = arena
            .kept(&neighbour, || {
                let arena = arena.clone();
                vec![tokio::spawn(async move {
                    loop {
                        let _ = arena.load("guest-greedy", PluginOptions::default()).await;
                        tokio::time::sleep(LOAD_STRIKE).await;
                    }
                })]
            })
            .await?;
        assert_eq!(arena.served("secrets", WRITES).await?, before);
        assert_grew_less_than(baseline, HOST_SLACK);
        assert_kept(kept);
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_are_held_to_their_rates_and_a_neighbour_keeps_its_throughput() -> anyhow::Result<()>
{
    within(LIMIT, "the write and event floods", async {
        let arena = Arena::new("hostile-floods").await?;
        let rate = Rate::new(5.0, 5);
        let limits = GuestLimits {
            writes: rate,
            events: Rate::new(2.0, 2),
            ..GuestLimits::default()
        };
        let hostile = Arc::new(arena.hostile(limits).await?);
        arena.configmap("writes-100000").await?;
        let neighbour = arena.neighbour().await?;
        let before = arena.served("configmaps", &["PATCH"]).await?;
        let baseline = rss();
        let first = Instant::now();
        let kept = arena
            .kept(&neighbour, || {
                ["writes-100000", "events-100000"]
                    .map(|name| strike(&hostile, vec![arena.key(name)]))
                    .into()
            })
            .await?;

        // guest-good's ConfigMaps are converged, so every PATCH is the flood's. The bucket
        // refills between floods too: the bound is the burst plus the rate since the first.
        let patched = arena.served("configmaps", &["PATCH"]).await? - before;
        let elapsed = first.elapsed();
        let allowed = f64::from(rate.burst) + rate.per_second * elapsed.as_secs_f64();
        eprintln!("write flood: {patched} patches in {elapsed:?}, {allowed:.0} allowed");
        assert!(
            patched <= allowed + 1.0,
            "{patched} patches in {elapsed:?}, {allowed} allowed"
        );
        assert!(refused(&hostile, Refusal::WriteThrottled) > 0);
        assert!(refused(&hostile, Refusal::EventDropped) > 0);
        assert_grew_less_than(baseline, GUEST_MEMORY as u64 + HOST_SLACK);
        assert_kept(kept);
        Ok(())
    })
    .await
}

/// Plants a pattern with one reconcile of `plugin` and reports whether the next finds it.
async fn leftover(arena: &Arena, plugin: &Plugin, token: &str) -> String {
    let planted = plugin
        .reconcile(&arena.key(&format!("plant-{token}")))
        .await;
    assert!(planted.is_ok(), "planting {token}: {planted:?}");
    let report = attempts(
        plugin
            .reconcile(&arena.key(&format!("recall-{token}")))
            .await,
    );
    assert_eq!(report.len(), 1, "{report:?}");
    report[0].1.clone()
}

#[tokio::test]
async fn a_fresh_instance_finds_nothing_an_earlier_reconcile_left_in_memory() -> anyhow::Result<()>
{
    within(LIMIT, "the leftovers probe", async {
        let arena = Arena::new("hostile-leftovers").await?;
        let fresh = arena.hostile(GuestLimits::default()).await?;
        // Freed instances' slots are reset in place and reused: many rounds, so the same slot
        // serves a plant and the recall after it.
        for round in 0..50 {
            let token = format!("t{round}q7zk");
            let found = leftover(&arena, &fresh, &token).await;
            assert_eq!(
                found, "absent",
                "round {round}: a reconcile read what the one before left"
            );
        }
        // The probe finds what is there: a warm instance keeps its memory between reconciles.
        let options = PluginOptions {
            mode: InstanceMode::Warm {
                pool: 1,
                max_uses: None,
            },
            memory_limit: GUEST_MEMORY,
            ..PluginOptions::default()
        };
        let warm = arena.load("guest-hostile", options).await?;
        assert_eq!(leftover(&arena, &warm, "w4rmq7zk").await, "found");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn requeue_after_zero_is_held_to_the_requeue_rate() -> anyhow::Result<()> {
    within(LIMIT, "the requeue loop", async {
        let arena = Arena::new("hostile-requeue").await?;
        let (metrics, probes) = (
            common::scrape::free_address(),
            common::scrape::free_address(),
        );
        let host = common::host(&arena.plane)
            .arg("--plugin")
            .arg(common::component("guest-hostile"))
            .args(["--namespaces", &arena.namespace, "--memory-limit", "256Mi"])
            .args(["--requeue-rate", "10:10"])
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", &probes])
            .spawn()?;
        arena.configmap("requeue").await?;
        let reconciles = |text: &str| {
            let samples = common::scrape::parse(text);
            let labels = [("controller", "guest-hostile"), ("result", "requeue_after")];
            common::scrape::value(&samples, "controller_runtime_reconcile_total", &labels)
                .unwrap_or(0.0)
        };
        let first = loop {
            if let Ok((200, text)) = common::scrape::get(&metrics, "/metrics").await
                && reconciles(&text) > 0.0
            {
                break Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        tokio::time::sleep(Duration::from_secs(3)).await;
        let (_, text) = common::scrape::get(&metrics, "/metrics").await?;
        let counted = reconciles(&text);
        // The burst, the rate since the first reconcile was seen, and a second's worth for the
        // time it took to see it; a hot loop would be thousands.
        let allowed = 10.0 + 10.0 * (first.elapsed().as_secs_f64() + 1.0);
        eprintln!("requeue loop: {counted} reconciles, {allowed:.0} allowed");
        assert!(
            counted <= allowed,
            "{counted} requeued reconciles, {allowed} allowed"
        );
        let samples = common::scrape::parse(&text);
        let throttled = [("plugin", "guest-hostile"), ("reason", "requeue_throttled")];
        let throttled = common::scrape::value(&samples, "wasmop_plugin_refusals_total", &throttled);
        assert!(
            throttled.is_some_and(|n| n > 0.0),
            "requeue throttling is counted"
        );

        // The neighbour beside the looping host, which is paused (SIGSTOP) between rounds.
        let pid = host.id().expect("the host runs");
        let neighbour = arena.neighbour().await?;
        signal(pid, "STOP");
        let kept = arena.kept(&neighbour, || vec![running(pid)]).await?;
        signal(pid, "CONT");
        let peak = peak_rss(pid);
        eprintln!("the looping host peaked at {} MiB", peak >> 20);
        assert!(
            peak < GUEST_MEMORY as u64 + HOST_SLACK,
            "{} MiB",
            peak >> 20
        );
        assert_kept(kept);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn guest_text_cannot_forge_a_host_log_line_in_either_format() -> anyhow::Result<()> {
    within(LIMIT, "the forged log lines", async {
        let arena = Arena::new("hostile-forge").await?;
        arena.configmap("forge").await?;
        for format in ["text", "json"] {
            let mut command = common::host(&arena.plane);
            command
                .arg("--plugin")
                .arg(common::component("guest-hostile"))
                .args(["--namespaces", &arena.namespace, "--memory-limit", "256Mi"])
                .args(["--log-format", format])
                .args(common::NO_PORTS);
            let host = common::logged::Logged::spawn("forger", command)?;
            // The guest's log call, its stdout line and its error, the error retried at least once.
            while host.count("FORGED") < 4 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let lines = host.log();
            common::terminate(host.child).await?;
            let carried: Vec<&String> = lines.iter().filter(|l| l.contains("FORGED")).collect();
            eprintln!(
                "FORGE ({format}): {} lines carried the forged text",
                carried.len()
            );
            for line in &lines {
                assert!(
                    !line.starts_with("2026-12-06T00:00:00"),
                    "a forged line in the {format} log: {line}"
                );
            }
            for line in carried {
                assert!(
                    line.contains("guest-hostile"),
                    "the forged text outside its plugin's line ({format}): {line}"
                );
                if format == "json" {
                    serde_json::from_str::<Value>(line)?;
                }
            }
        }
        Ok(())
    })
    .await
}

/// Sends `SIG<name>` to process `pid`.
fn signal(pid: u32, name: &str) {
    let sent = std::process::Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status();
    assert!(sent.is_ok_and(|s| s.success()), "kill -{name} {pid}");
}

/// A task that lets process `pid` run until the task is aborted, then pauses it again.
fn running(pid: u32) -> tokio::task::JoinHandle<()> {
    struct Pause(u32);
    impl Drop for Pause {
        fn drop(&mut self) {
            signal(self.0, "STOP");
        }
    }
    tokio::spawn(async move {
        let _pause = Pause(pid);
        signal(pid, "CONT");
        std::future::pending::<()>().await;
    })
}

/// The peak resident memory of process `pid`, in bytes.
fn peak_rss(pid: u32) -> u64 {
    status_bytes(&format!("/proc/{pid}/status"), "VmHWM:")
}
