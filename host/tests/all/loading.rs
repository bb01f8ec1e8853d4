//! Loading plugins: what is refused (with a message naming the file), what `describe` declares,
//! and the on-disk cache of compiled components.

use crate::common;

use std::path::Path;

use common::{LIMIT, component, runtime};
use wasmop::contract::object::GroupVersionKind;
use wasmop::contract::{Mapping, Verb};
use wasmop::runtime::{
    Backend, CompileIn, CompileWorker, PluginOptions, Runtime, RuntimeConfig, RuntimeError,
    WorkerError,
};
use wasmop::testing::MemoryHost;
use wasmop_envtest::within;

async fn load_bytes(bytes: &[u8]) -> RuntimeError {
    let runtime = runtime();
    let services = MemoryHost::new().services();
    match runtime
        .load_bytes(
            Path::new("suspect.wasm"),
            bytes.to_vec(),
            PluginOptions::default(),
            |_| services,
        )
        .await
    {
        Ok(plugin) => panic!("{} loaded", plugin.name()),
        Err(error) => error,
    }
}

#[tokio::test]
async fn files_that_are_not_reconciler_components_are_refused_by_name() {
    within(LIMIT, "refusing bad files", async {
        let core_module = load_bytes(b"\0asm\x01\0\0\0").await;
        assert!(
            matches!(
                core_module,
                RuntimeError::NotAComponent {
                    found: "a core module",
                    ..
                }
            ),
            "{core_module}"
        );
        assert!(
            core_module.to_string().contains("suspect.wasm"),
            "{core_module}"
        );

        let text = load_bytes(b"hello").await;
        assert!(
            matches!(
                text,
                RuntimeError::NotAComponent {
                    found: "not WebAssembly",
                    ..
                }
            ),
            "{text}"
        );

        let empty_component = load_bytes(b"\0asm\x0d\0\x01\0").await;
        assert!(
            matches!(
                empty_component,
                RuntimeError::MissingExport {
                    export: "describe",
                    ..
                }
            ),
            "{empty_component}"
        );

        let mut truncated = std::fs::read(component("guest-good")).unwrap();
        truncated.truncate(truncated.len() / 2);
        let corrupt = load_bytes(&truncated).await;
        assert!(matches!(corrupt, RuntimeError::Compile { .. }), "{corrupt}");
    })
    .await
}

#[tokio::test]
async fn a_component_for_another_wit_major_is_refused_with_both_versions() {
    within(LIMIT, "refusing a WIT 2.0.0 component", async {
        let bytes = std::fs::read(component("guest-wit2")).unwrap();
        let error = load_bytes(&bytes).await;
        let message = error.to_string();
        assert!(
            matches!(error, RuntimeError::WitVersion { .. }),
            "{message}"
        );
        assert!(
            message.contains("wasmop:reconciler@2.0.0")
                && message.contains("wasmop:reconciler@0.1.3"),
            "{message}"
        );
    })
    .await
}

#[tokio::test]
async fn describe_returns_what_the_webapp_plugin_declares() {
    within(LIMIT, "describing webapp", async {
        let runtime = runtime();
        let (webapp, _host) = common::load(&runtime, "webapp", PluginOptions::default()).await;
        let registration = webapp.registration();
        assert_eq!(registration.name, "webapp");
        assert_eq!(
            registration.primary,
            GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp")
        );
        let deployment = GroupVersionKind::gvk("apps", "v1", "Deployment");
        let service = GroupVersionKind::gvk("", "v1", "Service");
        assert!(registration.owns.contains(&deployment) && registration.owns.contains(&service));
        assert!(registration.allows(Verb::Create, &deployment, "any"));
        assert!(!registration.allows(
            Verb::Create,
            &GroupVersionKind::gvk("", "v1", "Secret"),
            "any"
        ));
        assert!(registration.max_concurrent_reconciles >= 1);

        let (sync, _host) =
            common::load(&runtime, "configmap-sync", PluginOptions::default()).await;
        let watch = &sync.registration().watches[0];
        assert_eq!(watch.kind, GroupVersionKind::gvk("", "v1", "Namespace"));
        assert_eq!(watch.mapping, Mapping::Guest);
    })
    .await
}

#[tokio::test]
async fn compiled_components_are_cached_on_disk_across_restarts() {
    within(LIMIT, "the compiled-component cache", async {
        let cache = tempfile::tempdir().unwrap();
        let config = RuntimeConfig {
            cache_dir: cache.path().to_owned(),
            ..RuntimeConfig::default()
        };
        let first = Runtime::new(config.clone()).unwrap();
        common::load(&first, "guest-good", PluginOptions::default()).await;
        assert_eq!((first.cache_hits(), first.cache_misses()), (0, 1));
        drop(first);

        let restarted = Runtime::new(config).unwrap();
        common::load(&restarted, "guest-good", PluginOptions::default()).await;
        assert_eq!(
            (restarted.cache_hits(), restarted.cache_misses()),
            (1, 0),
            "a restart recompiled"
        );
    })
    .await
}

/// A runtime with its compile cache in `cache` that compiles in child processes of the `wasmop`
/// binary, each allowed `memory_limit` bytes.
fn compiling_in_children(cache: &Path, memory_limit: Option<u64>) -> Runtime {
    Runtime::new(RuntimeConfig {
        cache_dir: cache.to_owned(),
        compile: CompileIn::Child(CompileWorker {
            program: env!("CARGO_BIN_EXE_wasmop").into(),
            memory_limit,
        }),
        ..RuntimeConfig::default()
    })
    .unwrap()
}

#[tokio::test]
async fn a_compile_over_its_memory_limit_fails_that_load_and_leaves_nothing_cached() {
    within(LIMIT, "compiling under a memory limit", async {
        let cache = tempfile::tempdir().unwrap();
        let limit = 16 << 20;
        let tight = compiling_in_children(cache.path(), Some(limit));
        let host = MemoryHost::new();
        let refused = tight
            .load(&component("webapp"), PluginOptions::default(), |_| {
                host.services()
            })
            .await
            .err()
            .expect("the serde-heavy webapp compiled in 16 MiB");
        assert!(
            matches!(
                &refused,
                RuntimeError::CompileKilled {
                    source: WorkerError::OutOfMemory { limit: l },
                    ..
                } if *l == limit
            ),
            "{refused}"
        );
        let message = refused.to_string();
        assert!(message.contains("webapp.wasm"), "{message}");
        assert!(message.contains("--compile-memory-limit"), "{message}");
        assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);

        let roomy = compiling_in_children(cache.path(), None);
        common::load(&roomy, "webapp", PluginOptions::default()).await;
        assert_eq!((roomy.cache_hits(), roomy.cache_misses()), (0, 1));
        let in_process = Runtime::new(RuntimeConfig {
            cache_dir: cache.path().to_owned(),
            ..RuntimeConfig::default()
        })
        .unwrap();
        common::load(&in_process, "webapp", PluginOptions::default()).await;
        assert_eq!(
            (in_process.cache_hits(), in_process.cache_misses()),
            (1, 0),
            "the child's artifact is not the one this process would make"
        );
    })
    .await
}

#[tokio::test]
async fn artifacts_of_one_backend_are_never_mapped_by_the_other() {
    within(
        LIMIT,
        "Winch and Cranelift sharing a compile cache",
        async {
            let cache = tempfile::tempdir().unwrap();
            let winch = compiling_in_children(cache.path(), None);
            let cranelift = Runtime::new(RuntimeConfig {
                cache_dir: cache.path().to_owned(),
                backend: Backend::Cranelift,
                ..RuntimeConfig::default()
            })
            .unwrap();
            assert_ne!(winch.engine_fingerprint(), cranelift.engine_fingerprint());
            common::load(&winch, "guest-good", PluginOptions::default()).await;
            common::load(&cranelift, "guest-good", PluginOptions::default()).await;
            assert_eq!((cranelift.cache_hits(), cranelift.cache_misses()), (0, 1));
            assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 2);
            let restarted = compiling_in_children(cache.path(), None);
            common::load(&restarted, "guest-good", PluginOptions::default()).await;
            assert_eq!((restarted.cache_hits(), restarted.cache_misses()), (1, 0));
        },
    )
    .await
}

#[tokio::test]
async fn a_component_the_compiler_process_rejects_is_reported_with_its_error() {
    within(LIMIT, "a broken component in the compiler process", async {
        let cache = tempfile::tempdir().unwrap();
        let runtime = compiling_in_children(cache.path(), None);
        let services = MemoryHost::new().services();
        let broken = b"\0asm\x0d\0\x01\0\x7fbroken".to_vec();
        let error = runtime
            .load_bytes(
                Path::new("broken.wasm"),
                broken,
                PluginOptions::default(),
                |_| services,
            )
            .await
            .err()
            .expect("a broken component loaded");
        assert!(matches!(error, RuntimeError::Compile { .. }), "{error}");
        let message = error.to_string();
        assert!(message.contains("broken.wasm"), "{message}");
        assert!(message.contains("the compiler process failed"), "{message}");
    })
    .await
}
