//! A language's own operator identity: a ServiceAccount bound to a copy of the operator's
//! ClusterRole from `deploy/manager/rbac.yaml`, a client speaking as it, and narrowing that copy.

use std::path::Path;

use anyhow::Context;
use serde_json::{Value, json};
use wasmop_envtest::ControlPlane;

/// The operator's ServiceAccount and ClusterRole copy for one language.
pub struct Identity {
    /// The ClusterRole's name.
    role: String,
}

impl Identity {
    /// Creates the account in `namespace` with a copy of the operator's ClusterRole named after
    /// `language`, and returns it with a client that speaks as it.
    pub async fn create(
        plane: &ControlPlane,
        language: &str,
        namespace: &str,
    ) -> anyhow::Result<(Identity, kube::Client)> {
        let role = format!("wasmop-conformance-{language}");
        let account = "wasmop";
        plane
            .run_kubectl(&["apply", "-f", "-"], Some(&cluster_role(&role)?))
            .await?;
        plane
            .run_kubectl(
                &["create", "serviceaccount", account, "-n", namespace],
                None,
            )
            .await?;
        let subject = format!("{namespace}:{account}");
        let binding = [
            "create",
            "clusterrolebinding",
            &role,
            "--clusterrole",
            &role,
        ];
        let _ = plane
            .run_kubectl(&["delete", "clusterrolebinding", &role], None)
            .await;
        plane
            .run_kubectl(
                &[&binding[..], &["--serviceaccount", &subject]].concat(),
                None,
            )
            .await?;
        let token = plane
            .run_kubectl(&["create", "token", account, "-n", namespace], None)
            .await?;
        let kubeconfig = plane.kubeconfig_for(&role, token.trim())?;
        let client = plane.client_from(&kubeconfig).await?;
        Ok((Identity { role }, client))
    }

    /// Sets the verbs the role grants on Services.
    pub async fn grant_services(&self, plane: &ControlPlane, verbs: &[&str]) -> anyhow::Result<()> {
        let role = plane
            .run_kubectl(&["get", "clusterrole", &self.role, "-o", "json"], None)
            .await?;
        let role: Value = serde_json::from_str(&role)?;
        let index = role["rules"]
            .as_array()
            .context("rules")?
            .iter()
            .position(|rule| rule["resources"] == json!(["services"]))
            .context("the operator's ClusterRole has no rule for services")?;
        let patch =
            json!([{"op": "replace", "path": format!("/rules/{index}/verbs"), "value": verbs}]);
        let patch = patch.to_string();
        let args = [
            "patch",
            "clusterrole",
            &self.role,
            "--type",
            "json",
            "-p",
            &patch,
        ];
        plane.run_kubectl(&args, None).await?;
        Ok(())
    }
}

/// The operator's ClusterRole from `deploy/`, renamed to `name`.
fn cluster_role(name: &str) -> anyhow::Result<String> {
    let rbac = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/manager/rbac.yaml");
    let rbac =
        std::fs::read_to_string(&rbac).with_context(|| format!("reading {}", rbac.display()))?;
    let role = rbac
        .split("\n---\n")
        .find(|doc| doc.contains("\nkind: ClusterRole\n"))
        .context("deploy/manager/rbac.yaml has no ClusterRole")?;
    Ok(role.replacen("  name: wasmop\n", &format!("  name: {name}\n"), 1))
}
