//! A subject's own operator identity: a ServiceAccount bound to a copy of the operator's
//! ClusterRole from `deploy/manager/rbac.yaml`, a kubeconfig speaking as it, and narrowing that
//! copy.

use std::path::PathBuf;

use anyhow::Context;
use serde_json::{Value, json};
use wasmop_envtest::ControlPlane;

/// The operator's ServiceAccount and ClusterRole copy for one subject.
pub struct Identity {
    /// The ClusterRole's name.
    role: String,
    /// The account's user name, as the apiserver's audit log records it.
    pub user: String,
    /// A kubeconfig authenticating as the account.
    pub kubeconfig: PathBuf,
}

impl Identity {
    /// Creates the account in `namespace` with a copy of the operator's ClusterRole named after
    /// `subject`, and a kubeconfig speaking as it.
    pub async fn create(
        plane: &ControlPlane,
        subject: &str,
        namespace: &str,
    ) -> anyhow::Result<Identity> {
        let role = format!("wasmop-conformance-{subject}");
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
        let account_ref = format!("{namespace}:{account}");
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
                &[&binding[..], &["--serviceaccount", &account_ref]].concat(),
                None,
            )
            .await?;
        let token = plane
            .run_kubectl(&["create", "token", account, "-n", namespace], None)
            .await?;
        let kubeconfig = plane.kubeconfig_for(&role, token.trim())?;
        Ok(Identity {
            role,
            user: format!("system:serviceaccount:{account_ref}"),
            kubeconfig,
        })
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
    let rbac = crate::repo_file("deploy/manager/rbac.yaml");
    let rbac =
        std::fs::read_to_string(&rbac).with_context(|| format!("reading {}", rbac.display()))?;
    let role = rbac
        .split("\n---\n")
        .find(|doc| doc.contains("\nkind: ClusterRole\n"))
        .context("deploy/manager/rbac.yaml has no ClusterRole")?;
    Ok(role.replacen("  name: wasmop\n", &format!("  name: {name}\n"), 1))
}
