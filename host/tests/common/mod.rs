//! Shared helpers of the runtime tests: the components built from `plugins/` and `tests/guests/`,
//! and loading them against an in-memory host.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wasmop::runtime::memory::MemoryHost;
use wasmop::runtime::{Plugin, PluginOptions, Runtime, RuntimeConfig};

/// Bounds every async test.
pub const LIMIT: Duration = Duration::from_secs(120);

/// The component `name` built by `guest-sdk/rust/build`.
pub fn component(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/components")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: build the guests first with `make guests`",
        path.display()
    );
    path
}

/// A runtime with default settings.
pub fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig::default()).expect("the runtime starts")
}

/// Loads component `name` against a fresh in-memory host.
pub async fn load(
    runtime: &Runtime,
    name: &str,
    options: PluginOptions,
) -> (Plugin, Arc<MemoryHost>) {
    let host = MemoryHost::new();
    let plugin = runtime
        .load(&component(name), options, |_| host.services())
        .await
        .expect("the plugin loads");
    (plugin, host)
}

/// A ConfigMap in `namespace`.
pub fn configmap(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "name": name},
        "data": {"key": "value"},
    })
}
