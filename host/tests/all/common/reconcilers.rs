//! WasmReconcilers on the test control plane: their API, their conditions, and waiting for a
//! status.

use std::time::Duration;

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

/// The cluster's ClusterWasmReconcilers.
pub fn api(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(client, &resource("ClusterWasmReconciler"))
}

/// The WasmReconcilers of `namespace`.
pub fn namespaced(client: kube::Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client, namespace, &resource("WasmReconciler"))
}

/// The resource of `kind`, one of the two.
fn resource(kind: &str) -> kube::core::ApiResource {
    let plural = format!("{}s", kind.to_ascii_lowercase());
    let kind = kube::api::GroupVersionKind::gvk("wasmop.dev", "v1alpha1", kind);
    kube::core::ApiResource::from_gvk_with_plural(&kind, &plural)
}

/// Installs the WasmReconciler and ClusterWasmReconciler CRDs on `plane` (idempotent).
pub async fn install_crd(plane: &wasmop_envtest::ControlPlane) -> anyhow::Result<()> {
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
    let files = ["wasmreconciler.yaml", "clusterwasmreconciler.yaml"];
    plane
        .install_crds(&files.map(|file| crds.join(file)))
        .await?;
    Ok(())
}

/// The condition of type `kind` in `status`, or null.
pub fn condition<'a>(status: &'a Value, kind: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

/// Waits until `name`'s status satisfies `check`; returns it.
pub async fn status_until(
    api: &Api<DynamicObject>,
    name: &str,
    check: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    loop {
        let status = api.get(name).await?.data["status"].clone();
        if check(&status) {
            return Ok(status);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Stores component `name` in a ConfigMap of the same name in `namespace` (key `module.wasm`);
/// returns the `spec.module` that loads it, pinned by its digest.
pub async fn store_module(
    plane: &wasmop_envtest::ControlPlane,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Value> {
    store_bytes(
        plane,
        namespace,
        name,
        std::fs::read(super::component(name))?,
    )
    .await
}

/// Stores `bytes` in ConfigMap `name` of `namespace` (key `module.wasm`); returns the
/// `spec.module` that loads them, pinned by their digest.
pub async fn store_bytes(
    plane: &wasmop_envtest::ControlPlane,
    namespace: &str,
    name: &str,
    bytes: Vec<u8>,
) -> anyhow::Result<Value> {
    let pin = wasmop::distribution::digest(&bytes)
        .trim_start_matches("sha256:")
        .to_owned();
    let configmap = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        binary_data: Some(BTreeMap::from([("module.wasm".into(), ByteString(bytes))])),
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(plane.client().await?, namespace)
        .create(&PostParams::default(), &configmap)
        .await?;
    Ok(json!({
        "configMap": {"namespace": namespace, "name": name, "key": "module.wasm"},
        "sha256": pin,
    }))
}
