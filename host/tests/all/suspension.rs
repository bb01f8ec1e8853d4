//! Idle plugins are suspended — their compiled code unmapped, their warm instances dropped — and
//! woken by their next call, which behaves as before; a busy plugin is never suspended, and loads
//! of one component share one mapping of its code.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{LIMIT, configmap, load};
use wasmop::contract::object::{GroupVersionKind, ObjectKey};
use wasmop::runtime::{InstanceMode, Outcome, Plugin, PluginOptions, Runtime, RuntimeConfig};
use wasmop::testing::MemoryHost;
use wasmop_envtest::within;

/// How long a plugin may idle before it is suspended, in these tests.
const IDLE: Duration = Duration::from_millis(200);

fn key() -> ObjectKey {
    ObjectKey::new("default", "victim")
}

/// A runtime suspending plugins idle for [`IDLE`], compiling into `cache`.
fn suspending(cache: &Path) -> Runtime {
    Runtime::new(RuntimeConfig {
        cache_dir: cache.to_owned(),
        suspend_after: Some(IDLE),
        ..RuntimeConfig::default()
    })
    .expect("the runtime starts")
}

/// The artifact files in the compile cache `dir`.
fn artifacts(dir: &Path) -> Vec<PathBuf> {
    let files = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path());
    files
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect()
}

/// How many of this process's mappings are of `file`.
fn mappings_of(file: &Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let name = file.to_string_lossy();
    maps.lines()
        .filter(|line| line.ends_with(&*name) || line.ends_with(&format!("{name} (deleted)")))
        .count()
}

/// Waits until `plugin` is suspended; false if it is not within ten seconds.
async fn suspended(plugin: &Plugin) -> bool {
    for _ in 0..200 {
        if plugin.suspended() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Reconciles the victim ConfigMap with guest-good and checks that it was annotated.
async fn reconciles(good: &Plugin, host: &MemoryHost) {
    assert_eq!(
        good.reconcile(&key()).await.expect("guest-good reconciles"),
        Outcome::Done
    );
    let seen = host
        .get(&GroupVersionKind::gvk("", "v1", "ConfigMap"), &key())
        .unwrap();
    assert!(
        seen["metadata"]["annotations"]["guest-good.wasmop.dev/seen"].is_string(),
        "{seen}"
    );
}

#[tokio::test]
async fn an_idle_plugin_gives_back_its_code_and_instances_and_its_next_call_wakes_it() {
    within(LIMIT, "suspending an idle plugin", async {
        let cache = tempfile::tempdir().unwrap();
        let runtime = suspending(cache.path());
        let warm = PluginOptions {
            mode: InstanceMode::Warm {
                pool: 2,
                max_uses: None,
            },
            ..PluginOptions::default()
        };
        let (good, host) = load(&runtime, "guest-good", warm).await;
        host.insert(configmap("default", "victim"));
        reconciles(&good, &host).await;
        let [artifact] = &artifacts(cache.path())[..] else {
            panic!("one artifact: {:?}", artifacts(cache.path()))
        };
        assert!(
            mappings_of(artifact) > 0,
            "the loaded plugin's code is mapped"
        );
        assert_eq!(good.idle_instances(), 1);

        assert!(suspended(&good).await, "not suspended after idling");
        assert_eq!(
            mappings_of(artifact),
            0,
            "the suspended plugin's code is still mapped"
        );
        assert_eq!(
            good.idle_instances(),
            0,
            "the suspended plugin kept a warm instance"
        );
        assert_eq!(good.wakes().0, 0);

        // The cache may evict the artifact meanwhile: the plugin maps the file it loaded.
        std::fs::remove_file(artifact).unwrap();
        host.insert(configmap("default", "victim"));
        reconciles(&good, &host).await;
        assert!(!good.suspended(), "the call woke it");
        assert_eq!(good.wakes().0, 1, "one wake");
        assert!(
            mappings_of(artifact) > 0,
            "the woken plugin's code is mapped again"
        );
        assert_eq!(
            good.instantiations().0,
            2,
            "one instance before the suspension, one after"
        );
        assert_eq!(runtime.cache_misses(), 1, "the wake compiled nothing");
    })
    .await
}

#[tokio::test]
async fn a_plugin_in_a_call_is_never_suspended() {
    within(LIMIT, "a busy plugin", async {
        let cache = tempfile::tempdir().unwrap();
        let runtime = suspending(cache.path());
        let long = PluginOptions {
            reconcile_timeout: Some(Duration::from_secs(5)),
            ..PluginOptions::default()
        };
        let (spin, _host) = load(&runtime, "guest-spin", long).await;
        assert!(suspended(&spin).await, "the freshly loaded plugin idles");
        let victim = key();
        let call = spin.reconcile(&victim);
        let watch = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let mut awake = 0;
            for _ in 0..10 {
                tokio::time::sleep(IDLE / 2).await;
                awake += usize::from(!spin.suspended());
            }
            awake
        };
        let (result, awake) = tokio::join!(call, watch);
        assert!(result.is_err(), "the spinning guest times out");
        assert_eq!(awake, 10, "suspended while its call ran");
        assert_eq!(spin.wakes().0, 1);
    })
    .await
}

#[tokio::test]
async fn loads_of_one_component_share_one_mapping_of_its_code() {
    within(LIMIT, "two loads of one component", async {
        let cache = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: cache.path().to_owned(),
            ..RuntimeConfig::default()
        })
        .unwrap();
        let (first, _) = load(&runtime, "guest-good", PluginOptions::default()).await;
        let [artifact] = &artifacts(cache.path())[..] else {
            panic!("one artifact")
        };
        let once = mappings_of(artifact);
        assert!(once > 0);
        let (second, host) = load(&runtime, "guest-good", PluginOptions::default()).await;
        assert_eq!(
            mappings_of(artifact),
            once,
            "the second load mapped the code again"
        );
        host.insert(configmap("default", "victim"));
        reconciles(&second, &host).await;
        drop(first);
        assert_eq!(
            mappings_of(artifact),
            once,
            "the code went with the first load"
        );
        drop(second);
        assert_eq!(mappings_of(artifact), 0, "the code outlived both loads");
    })
    .await
}
