//! The host as a pod runs it: no kubeconfig, only `KUBERNETES_SERVICE_HOST`/`PORT` and the
//! service-account files (a token minted by the apiserver's TokenRequest, the CA, the namespace)
//! at their fixed path, with the RBAC from `deploy/`. It reconciles, and when RBAC is narrowed
//! the apiserver's 403 is reported with the plugin's name and counted as a reconcile error.
//!
//! The files are mounted on a private tmpfs over `/run` in a mount namespace of the host process
//! (`unshare`), so the machine's own `/var/run/secrets` is never touched.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use common::account;
use common::scrape::{free_address, get, parse, value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::PostParams;
use tokio::io::{AsyncBufReadExt, BufReader};
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(180);
const MOUNT: &str = "/run/secrets/kubernetes.io/serviceaccount";

/// Writes what the kubelet projects into a pod: token, CA and namespace.
async fn service_account_files(plane: &ControlPlane, dir: &std::path::Path) -> anyhow::Result<()> {
    let token = account::token(plane).await?;
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("token"), token)?;
    std::fs::copy(plane.dir().join("ca.crt"), dir.join("ca.crt"))?;
    std::fs::write(dir.join("namespace"), account::NAMESPACE)?;
    Ok(())
}

#[tokio::test]
async fn reconciles_with_only_what_a_pod_gets_and_reports_rbac_refusals() -> anyhow::Result<()> {
    within(LIMIT, "wasmop in a simulated pod", async {
        let plane = &shared_by(module_path!()).await?;
        common::install_webapp_crd(plane).await?;
        let files = plane.dir().join("serviceaccount");
        service_account_files(plane, &files).await?;
        let namespace = plane.create_namespace("in-cluster").await?;

        let port = plane.server_url().rsplit(':').next().context("apiserver port")?;
        let metrics = free_address();
        let script = format!(
            "mount -t tmpfs tmpfs /run && mkdir -p {MOUNT} && cp \"$1\"/* {MOUNT}/ && shift && exec \"$@\""
        );
        let mut host = tokio::process::Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script, "sh"])
            .arg(&files)
            .arg(env!("CARGO_BIN_EXE_wasmop"))
            .args(["run", "--plugin"])
            .arg(common::component("webapp"))
            .args(["--metrics-bind-address", &metrics, "--health-probe-bind-address", "0"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
            .env("KUBERNETES_SERVICE_PORT", port)
            .env("WASMOP_COMPILE_CACHE", common::compile_cache())
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("unshare (util-linux) runs the host in its own mount namespace")?;
        let mut log = BufReader::new(host.stderr.take().context("stderr")?).lines();
        let (lines, mut received) = tokio::sync::mpsc::channel(1024);
        tokio::spawn(async move {
            while let Ok(Some(line)) = log.next_line().await {
                eprintln!("{line}");
                if lines.send(line).await.is_err() {
                    break;
                }
            }
        });

        let client = plane.client().await?;
        let apps = common::webapps(client.clone(), &namespace);
        apps.create(&PostParams::default(), &common::webapp("allowed")).await?;
        common::converged(&apps, "allowed").await?;
        let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
        assert!(services.get_opt("allowed").await?.is_some());

        // Narrow the ClusterRole: no more creating Services.
        account::grant_services(plane, &["get", "list", "watch"]).await?;
        apps.create(&PostParams::default(), &common::webapp("refused")).await?;
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
        let refusal = loop {
            let line = received.recv().await.context("the host's log ended")?;
            if line.contains("forbidden by the apiserver") {
                break line;
            }
        };
        println!("reported: {refusal}");
        assert!(refusal.contains("webapp"), "the report names the plugin: {refusal}");
        assert!(refusal.contains("403"), "the report carries the status code: {refusal}");
        assert!(deployments.get_opt("refused").await?.is_some());
        assert!(services.get_opt("refused").await?.is_none());
        // Counted just after it is logged; the bound is the test's.
        loop {
            let (_, text) = get(&metrics, "/metrics").await?;
            let errors = value(&parse(&text), "controller_runtime_reconcile_errors_total", &[("controller", "webapp")]);
            if errors.is_some_and(|e| e > 0.0) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        account::grant_services(plane, account::ALL_VERBS).await?;
        host.kill().await?;
        Ok(())
    })
    .await
}
