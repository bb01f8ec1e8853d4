//! The operator's own identity as `deploy/` creates it: the `wasmop` ServiceAccount in
//! `wasmop-system` bound to the ClusterRole of `deploy/manager/rbac.yaml`, a token for it, and
//! narrowing that role while a test runs.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::json;
use wasmop_envtest::ControlPlane;

/// The namespace `deploy/` installs into.
pub const NAMESPACE: &str = "wasmop-system";

/// The index of the Services rule in the ClusterRole.
const SERVICES_RULE: usize = 5;

/// Applies `deploy/manager/rbac.yaml` in [`NAMESPACE`] and mints a token for its account.
pub async fn token(plane: &ControlPlane) -> anyhow::Result<String> {
    let _ = plane
        .run_kubectl(&["create", "namespace", NAMESPACE], None)
        .await;
    let rbac = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/manager/rbac.yaml");
    let rbac = rbac.to_str().context("UTF-8 path")?;
    plane
        .run_kubectl(&["apply", "-n", NAMESPACE, "-f", rbac], None)
        .await?;
    let create_token = [
        "create",
        "token",
        "wasmop",
        "-n",
        NAMESPACE,
        "--duration",
        "1h",
    ];
    let token = plane.run_kubectl(&create_token, None).await?;
    Ok(token.trim().to_owned())
}

/// A token, valid for an hour, for ServiceAccount `account` in `namespace`.
pub async fn service_token(
    plane: &ControlPlane,
    namespace: &str,
    account: &str,
) -> anyhow::Result<String> {
    let args = [
        "create",
        "token",
        account,
        "-n",
        namespace,
        "--duration",
        "1h",
    ];
    Ok(plane.run_kubectl(&args, None).await?.trim().to_owned())
}

/// Creates ServiceAccount `account` in `namespace`, binds it to `deploy/`'s
/// `wasmop-metrics-reader` ClusterRole, and returns a token for it.
pub async fn metrics_reader(
    plane: &ControlPlane,
    namespace: &str,
    account: &str,
) -> anyhow::Result<String> {
    let create = ["create", "serviceaccount", account, "-n", namespace];
    plane.run_kubectl(&create, None).await?;
    let binding = format!("{namespace}-{account}");
    let subject = format!("--serviceaccount={namespace}:{account}");
    let bind = [
        "create",
        "clusterrolebinding",
        &binding,
        "--clusterrole=wasmop-metrics-reader",
        &subject,
    ];
    plane.run_kubectl(&bind, None).await?;
    service_token(plane, namespace, account).await
}

/// Writes a kubeconfig under the plane's directory that speaks as the operator's account.
pub async fn kubeconfig(plane: &ControlPlane) -> anyhow::Result<PathBuf> {
    let token = token(plane).await?;
    Ok(plane.kubeconfig_for("wasmop-operator", &token)?)
}

/// Sets the verbs the operator's ClusterRole grants on Services.
pub async fn grant_services(plane: &ControlPlane, verbs: &[&str]) -> anyhow::Result<()> {
    let patch = json!([{
        "op": "replace",
        "path": format!("/rules/{SERVICES_RULE}/verbs"),
        "value": verbs,
    }]);
    let patch = patch.to_string();
    let args = [
        "patch",
        "clusterrole",
        "wasmop",
        "--type",
        "json",
        "-p",
        &patch,
    ];
    plane.run_kubectl(&args, None).await?;
    Ok(())
}

/// Every verb the ClusterRole grants on Services as shipped.
pub const ALL_VERBS: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];
