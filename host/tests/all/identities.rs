//! Plugins under their own identities, on the real control plane: `wasmop rbac` prints RBAC that
//! lets a plugin's ServiceAccount do exactly what its `describe()` declared (checked with
//! `kubectl auth can-i`, as a user would), and with `--plugin-identity-namespace` the host writes
//! as that account, so the apiserver itself refuses a plugin whose account was granted nothing,
//! even when the operator's own identity could do it all.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use kube::api::{DynamicObject, PostParams};
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(240);

/// A fresh namespace holding webapp's identity, as `wasmop rbac` describes it.
async fn webapp_identity(plane: &ControlPlane) -> anyhow::Result<String> {
    common::install_webapp_crd(plane).await?;
    let home = plane.create_namespace("identities").await?;
    let manifests = common::rbac(plane, "webapp", &home).await?;
    plane
        .run_kubectl(&["apply", "-f", "-"], Some(&manifests))
        .await?;
    Ok(home)
}

/// Whether `user` may `verb` `resource` (`plural.group[/subresource]`) in `namespace`.
async fn can_i(
    plane: &ControlPlane,
    user: &str,
    verb: &str,
    resource: &str,
    namespace: &str,
) -> anyhow::Result<bool> {
    let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
    let mut kubectl = plane.kubectl();
    kubectl.args([
        "auth", "can-i", verb, resource, "-n", namespace, "--as", user,
    ]);
    if !subresource.is_empty() {
        kubectl.arg(format!("--subresource={subresource}"));
    }
    let output = kubectl.output().await?;
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "yes")
}

#[tokio::test]
async fn a_plugin_identity_may_do_exactly_what_it_declared() -> anyhow::Result<()> {
    within(LIMIT, "wasmop rbac for webapp", async {
        let plane = &shared_by(module_path!()).await?;
        let home = webapp_identity(plane).await?;
        let webapp = format!("system:serviceaccount:{home}:wasmop-plugin-webapp");
        for (verb, resource) in [
            ("watch", "webapps.example.wasmop.dev"),
            ("patch", "webapps.example.wasmop.dev/status"),
            ("update", "webapps.example.wasmop.dev"),
            ("create", "deployments.apps"),
            ("delete", "services"),
            ("list", "services"),
            ("get", "configmaps"),
            ("create", "events.events.k8s.io"),
        ] {
            assert!(
                can_i(plane, &webapp, verb, resource, "shop").await?,
                "webapp's account cannot {verb} {resource}, which it declared"
            );
        }
        for (verb, resource) in [
            ("delete", "webapps.example.wasmop.dev"),
            ("create", "webapps.example.wasmop.dev"),
            ("update", "configmaps"),
            ("get", "secrets"),
            ("create", "pods"),
        ] {
            assert!(
                !can_i(plane, &webapp, verb, resource, "shop").await?,
                "webapp's account may {verb} {resource}, which it did not declare"
            );
        }
        let operator = format!("system:serviceaccount:{home}:wasmop");
        for (account, allowed) in [("wasmop-plugin-webapp", true), ("other", false)] {
            let resource = format!("serviceaccounts/{account}");
            let args = ["auth", "can-i", "impersonate", &resource];
            let output = plane
                .kubectl()
                .args(args)
                .args(["-n", &home, "--as", &operator])
                .output()
                .await?;
            let answer = String::from_utf8_lossy(&output.stdout).trim() == "yes";
            assert_eq!(answer, allowed, "may the operator impersonate {account}?");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn with_plugin_identities_the_apiserver_checks_each_plugin() -> anyhow::Result<()> {
    within(LIMIT, "plugins writing as themselves", async {
        let plane = &shared_by(module_path!()).await?;
        let home = webapp_identity(plane).await?;

        // The admin identity may do anything, so only the plugin's own account can refuse.
        let refused = common::host(plane)
            .arg("--plugin")
            .arg(common::component("guest-good"))
            .args(["--plugin-identity-namespace", &home])
            .args(common::NO_PORTS)
            .stderr(Stdio::piped())
            .output()
            .await?;
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            !refused.status.success(),
            "guest-good ran with no grants: {stderr}"
        );
        assert!(
            stderr.contains("guest-good") && stderr.contains("not allowed"),
            "{stderr}"
        );

        let namespace = plane.create_namespace("identities-apps").await?;
        let mut host = common::host(plane)
            .arg("--plugin")
            .arg(common::component("webapp"))
            .args([
                "--plugin-identity-namespace",
                &home,
                "--namespaces",
                &namespace,
            ])
            .args(common::NO_PORTS)
            .spawn()?;
        let webapps = common::webapps(plane.client().await?, &namespace);
        let app: DynamicObject = common::webapp("as-itself");
        webapps.create(&PostParams::default(), &app).await?;
        common::converged(&webapps, "as-itself").await?;
        assert!(host.try_wait()?.is_none(), "the host exited");
        Ok(())
    })
    .await
}
