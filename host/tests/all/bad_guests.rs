//! Purpose-built misbehaving guests are contained: each failure is typed, names the plugin, and
//! the host and a well-behaved plugin keep working.

use crate::common;

use std::time::Duration;

use common::{LIMIT, configmap, load, runtime};
use wasmop::contract::object::{GroupVersionKind, ObjectKey};
use wasmop::runtime::{
    Backend, CompileIn, CompileWorker, DispatchError, EPOCH_TICK, InstanceMode, Outcome,
    PluginOptions, Runtime, RuntimeConfig, TrapKind,
};
use wasmop_envtest::within;

fn key() -> ObjectKey {
    ObjectKey::new("default", "victim")
}

/// A well-behaved plugin still reconciles on the same runtime.
async fn good_guest_still_works(runtime: &wasmop::runtime::Runtime) {
    let (good, host) = load(runtime, "guest-good", PluginOptions::default()).await;
    host.insert(configmap("default", "victim"));
    assert_eq!(
        good.reconcile(&key()).await.expect("guest-good reconciles"),
        Outcome::Done
    );
    let kind = GroupVersionKind::gvk("", "v1", "ConfigMap");
    let seen = host.get(&kind, &key()).unwrap();
    assert!(
        seen["metadata"]["annotations"]["guest-good.wasmop.dev/seen"].is_string(),
        "{seen}"
    );
}

/// The memory hog, capped at 16 MiB, traps at its cap and never holds more.
async fn hog_traps_at_its_cap(runtime: &Runtime) {
    let options = PluginOptions {
        memory_limit: 16 << 20,
        ..PluginOptions::default()
    };
    let (hog, _host) = load(runtime, "guest-hog", options).await;
    let (kind, message) = trapped(hog.reconcile(&key()).await);
    assert_eq!(kind, TrapKind::Memory, "{message}");
    assert!(
        message.contains("over its limit of 16777216 bytes"),
        "{message}"
    );
    assert!(hog.memory_high_water() <= 16 << 20);
}

fn trapped(result: Result<Outcome, DispatchError>) -> (TrapKind, String) {
    match result {
        Err(error @ DispatchError::Trapped { kind, .. }) => (kind, error.to_string()),
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[tokio::test]
async fn a_looping_guest_is_interrupted_at_its_timeout() {
    within(LIMIT, "the spinning guest", async {
        let runtime = runtime();
        let (spin, _host) = load(&runtime, "guest-spin", PluginOptions::default()).await;
        assert_eq!(spin.timeout(), Duration::from_millis(200));
        let started = std::time::Instant::now();
        let (kind, message) = trapped(spin.reconcile(&key()).await);
        assert_eq!(kind, TrapKind::Timeout, "{message}");
        assert!(
            message.contains("guest-spin"),
            "the error names the plugin: {message}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "interrupted late: {:?}",
            started.elapsed()
        );
        good_guest_still_works(&runtime).await;
    })
    .await
}

/// Guests compiled by Cranelift in the compile worker meet the same walls as Winch's: a loop is
/// interrupted at its timeout, a memory hog traps at its cap, and a good guest still reconciles.
#[tokio::test]
async fn the_cranelift_backend_keeps_loops_and_hogs_contained() {
    within(LIMIT, "guests compiled by Cranelift", async {
        let cache = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: cache.path().to_owned(),
            compile: CompileIn::Child(CompileWorker {
                program: env!("CARGO_BIN_EXE_wasmop").into(),
                memory_limit: None,
            }),
            backend: Backend::Cranelift,
            ..RuntimeConfig::default()
        })
        .unwrap();
        let (spin, _host) = load(&runtime, "guest-spin", PluginOptions::default()).await;
        let (kind, message) = trapped(spin.reconcile(&key()).await);
        assert_eq!(kind, TrapKind::Timeout, "{message}");
        hog_traps_at_its_cap(&runtime).await;
        good_guest_still_works(&runtime).await;
        assert_eq!(runtime.cache_misses(), 3, "each guest compiled once");
    })
    .await
}

/// How far the epoch advances over ten ticks' time with no call in flight, after three ticks'
/// time for a tick under way to finish.
async fn idle_ticks(runtime: &wasmop::runtime::Runtime) -> u64 {
    tokio::time::sleep(EPOCH_TICK * 3).await;
    let before = runtime.epoch_ticks();
    tokio::time::sleep(EPOCH_TICK * 10).await;
    runtime.epoch_ticks() - before
}

#[tokio::test]
async fn the_epoch_advances_only_while_a_guest_runs() {
    within(LIMIT, "the spinning guest", async {
        let runtime = runtime();
        let (spin, _host) = load(&runtime, "guest-spin", PluginOptions::default()).await;
        assert_eq!(idle_ticks(&runtime).await, 0, "ticking after describe");
        let before = runtime.epoch_ticks();
        let (kind, message) = trapped(spin.reconcile(&key()).await);
        assert_eq!(kind, TrapKind::Timeout, "{message}");
        assert!(
            runtime.epoch_ticks() > before,
            "the epoch stood still while the guest spun"
        );
        assert_eq!(idle_ticks(&runtime).await, 0, "ticking after the reconcile");
    })
    .await
}

#[tokio::test]
async fn a_guest_that_exhausts_its_memory_cap_traps_cleanly() {
    within(LIMIT, "the memory hog", async {
        let runtime = runtime();
        hog_traps_at_its_cap(&runtime).await;
        good_guest_still_works(&runtime).await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_greedy_plugin_cannot_starve_another_of_guest_memory() {
    within(
        LIMIT,
        "the memory hog under the guest memory budget",
        async {
            let budget = 64 << 20;
            let runtime = Runtime::new(RuntimeConfig {
                guest_memory: Some(budget),
                ..RuntimeConfig::default()
            })
            .unwrap();
            let hog_options = PluginOptions {
                memory_limit: 32 << 20,
                max_concurrent_reconciles: Some(4),
                ..PluginOptions::default()
            };
            let (hog, _hog_host) = load(&runtime, "guest-hog", hog_options).await;
            let good_options = PluginOptions {
                memory_limit: 16 << 20,
                ..PluginOptions::default()
            };
            let (good, host) = load(&runtime, "guest-good", good_options).await;
            host.insert(configmap("default", "victim"));
            let too_much = PluginOptions {
                memory_limit: 32 << 20,
                ..PluginOptions::default()
            };
            let refused = runtime
                .load(&common::component("guest-good"), too_much, |_| {
                    host.services()
                })
                .await
                .map(|p| p.name().to_owned())
                .unwrap_err()
                .to_string();
            assert!(
                refused.contains("the budget of 67108864 bytes has 16777216 left unreserved"),
                "{refused}"
            );

            let hog = std::sync::Arc::new(hog);
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let strikes: Vec<_> = (0..4)
                .map(|_| {
                    let (hog, stop) = (hog.clone(), stop.clone());
                    tokio::spawn(async move {
                        let mut traps = Vec::new();
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            traps.push(trapped(hog.reconcile(&key()).await));
                        }
                        traps
                    })
                })
                .collect();
            for _ in 0..100 {
                let outcome = good.reconcile(&key()).await;
                assert_eq!(
                    outcome.expect("guest-good reconciles beside the hog"),
                    Outcome::Done
                );
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let mut traps = Vec::new();
            for strike in strikes {
                traps.extend(strike.await.unwrap());
            }
            let over_budget = traps
                .iter()
                .filter(|(_, m)| m.contains(&format!("guest memory budget of {budget} bytes")))
                .count();
            println!(
                "MEMORY: guest-good reconciled 100 times beside 4 hogs; the hogs trapped {} times, \
             {over_budget} of them at the budget (their share and the unreserved part taken)",
                traps.len()
            );
            assert!(
                traps.iter().all(|(kind, _)| *kind == TrapKind::Memory),
                "{traps:?}"
            );
            assert!(over_budget >= 1, "no hog reached the budget: {traps:?}");
            assert!(hog.memory_high_water() <= 32 << 20);
            assert_eq!(
                runtime.guest_memory_held(),
                0,
                "a trapped instance kept its memory"
            );
        },
    )
    .await
}

#[tokio::test]
async fn a_panicking_guest_reports_its_panic_message() {
    within(LIMIT, "the panicking guest", async {
        let runtime = runtime();
        let (panicky, _host) = load(&runtime, "guest-panic", PluginOptions::default()).await;
        let (kind, message) = trapped(panicky.reconcile(&key()).await);
        assert_eq!(kind, TrapKind::Panic, "{message}");
        assert!(
            message.contains("guest-panic: deliberate panic for default/victim"),
            "{message}"
        );
        good_guest_still_works(&runtime).await;
    })
    .await
}

#[tokio::test]
async fn invalid_json_from_a_guest_is_an_invalid_error_not_a_crash() {
    within(LIMIT, "the guest sending malformed JSON", async {
        let runtime = runtime();
        let (bad, host) = load(&runtime, "guest-bad-json", PluginOptions::default()).await;
        match bad.reconcile(&key()).await {
            Err(DispatchError::Failed {
                message,
                terminal: true,
                ..
            }) => {
                assert!(message.contains("Invalid"), "{message}");
                assert!(message.contains("not valid JSON"), "{message}");
            }
            other => panic!("expected the guest to report an invalid error, got {other:?}"),
        }
        assert!(
            host.writes().is_empty(),
            "malformed JSON reached the writer"
        );
        good_guest_still_works(&runtime).await;
    })
    .await
}

#[tokio::test]
async fn undeclared_writes_are_forbidden_before_they_leave_the_host() {
    within(LIMIT, "the guest writing what it did not declare", async {
        let runtime = runtime();
        let (sneaky, host) =
            load(&runtime, "guest-undeclared-write", PluginOptions::default()).await;
        match sneaky.reconcile(&key()).await {
            Err(DispatchError::Failed {
                message,
                terminal: true,
                ..
            }) => {
                assert!(message.contains("Forbidden"), "{message}");
                assert!(message.contains("DeclaredPermissions"), "{message}");
            }
            other => panic!("expected a forbidden error, got {other:?}"),
        }
        assert!(
            host.writes().is_empty(),
            "the undeclared write reached the writer"
        );
    })
    .await
}

#[tokio::test]
async fn warm_instances_are_reused_and_dropped_after_a_trap() {
    within(LIMIT, "warm instance pools", async {
        let runtime = runtime();
        let warm = PluginOptions {
            mode: InstanceMode::Warm {
                pool: 2,
                max_uses: None,
            },
            ..PluginOptions::default()
        };
        let (good, host) = load(&runtime, "guest-good", warm.clone()).await;
        host.insert(configmap("default", "victim"));
        for _ in 0..3 {
            good.reconcile(&key()).await.expect("guest-good reconciles");
        }
        assert_eq!(
            good.idle_instances(),
            1,
            "sequential reconciles reuse one instance"
        );

        let (panicky, _host) = load(&runtime, "guest-panic", warm).await;
        assert!(panicky.reconcile(&key()).await.is_err());
        assert_eq!(
            panicky.idle_instances(),
            0,
            "a trapped instance must not be reused"
        );
    })
    .await
}
