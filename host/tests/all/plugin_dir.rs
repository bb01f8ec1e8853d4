//! The `wasmop` binary watching a `--plugin-dir` on the real control plane: a file present at
//! start runs, a file renamed into place is loaded, a corrupt one is reported and changes
//! nothing else, a removed one is unloaded — all visible through `wasmop plugins`, which the probe
//! listener serves while metrics are off (and `/metrics` nowhere). A version that declares more
//! than the operator's RBAC grants is refused and the old version keeps running.

use crate::common;

use common::account;
use common::scrape::{free_address, get, parse, value};

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use wasmop::plugins::{PluginState, PluginStatus};
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(180);

/// `wasmop plugins --json` against the host at `address`.
async fn plugins(address: &str) -> anyhow::Result<Vec<PluginStatus>> {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .args(["plugins", "--json", "--address", address])
        .output()
        .await?;
    anyhow::ensure!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}

/// Waits until `check` holds for the plugin list.
async fn until(
    address: &str,
    what: &str,
    check: impl Fn(&[PluginStatus]) -> bool,
) -> anyhow::Result<Vec<PluginStatus>> {
    loop {
        let statuses = plugins(address).await?;
        if check(&statuses) {
            println!("{what}: {statuses:?}");
            return Ok(statuses);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn running(statuses: &[PluginStatus], name: &str) -> bool {
    statuses
        .iter()
        .any(|s| s.name.as_deref() == Some(name) && s.state == PluginState::Running)
}

#[tokio::test]
async fn a_plugin_directory_loads_upgrades_and_unloads_as_files_change() -> anyhow::Result<()> {
    within(LIMIT, "a watched plugin directory", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("plugin-dir").await?;
        let dir = tempfile::tempdir()?;
        common::publish("guest-good", dir.path(), "good.wasm")?;
        let address = free_address();
        let _host = common::host(plane)
            .arg("--plugin-dir")
            .arg(dir.path())
            .args(["--namespaces", &namespace, "--metrics-bind-address", "0"])
            .args(["--health-probe-bind-address", &address])
            .spawn()?;
        while !matches!(get(&address, "/readyz").await, Ok((200, _))) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        until(&address, "at start", |s| running(s, "guest-good")).await?;
        // Metrics are off: the probe listener serves `/plugins` and not `/metrics`.
        assert_eq!(get(&address, "/metrics").await?.0, 404, "metrics are off");

        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, &namespace);
        let object = serde_json::from_value(json!({"metadata": {"name": "watched"}}))?;
        configmaps.create(&PostParams::default(), &object).await?;
        loop {
            let annotations = configmaps.get("watched").await?.metadata.annotations;
            if annotations.is_some_and(|a| a.contains_key("guest-good.wasmop.dev/seen")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        common::publish("guest-slow", dir.path(), "slow.wasm")?;
        until(&address, "a file renamed in", |s| {
            running(s, "guest-slow") && running(s, "guest-good")
        })
        .await?;

        std::fs::write(dir.path().join("broken.wasm"), b"\0asm not really")?;
        let statuses = until(&address, "a corrupt file", |s| {
            s.iter()
                .any(|s| s.source.ends_with("broken.wasm") && s.state == PluginState::Failed)
        })
        .await?;
        let broken = statuses
            .iter()
            .find(|s| s.source.ends_with("broken.wasm"))
            .unwrap();
        let error = broken.last_error.as_deref().unwrap_or_default();
        assert!(error.contains("broken.wasm"), "{error}");
        assert!(running(&statuses, "guest-good") && running(&statuses, "guest-slow"));
        // A file the operator put in the directory that does not load: the host is not ready.
        let (status, reason) = get(&address, "/readyz").await?;
        assert_eq!(status, 503, "{reason}");
        assert!(reason.contains("broken.wasm failed: "), "{reason}");
        std::fs::remove_file(dir.path().join("broken.wasm"))?;
        until(&address, "a corrupt file removed", |s| {
            !s.iter().any(|s| s.source.ends_with("broken.wasm"))
        })
        .await?;
        assert_eq!(get(&address, "/readyz").await?, (200, "ok".to_owned()));

        std::fs::remove_file(dir.path().join("good.wasm"))?;
        until(&address, "a file removed", |s| {
            !s.iter().any(|s| s.name.as_deref() == Some("guest-good")) && running(s, "guest-slow")
        })
        .await?;

        let table = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
            .args(["plugins", "--address", &address])
            .output()
            .await?;
        let table = String::from_utf8(table.stdout)?;
        println!("{table}");
        assert!(table.starts_with("NAME"), "{table}");
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("guest-slow") && l.contains("running")),
            "{table}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_version_asking_for_more_than_the_operators_rbac_is_refused() -> anyhow::Result<()> {
    within(LIMIT, "an upgrade the operator may not run", async {
        let plane = &shared_by(module_path!()).await?;
        common::install_webapp_crd(plane).await?;
        let namespace = plane.create_namespace("plugin-rbac").await?;
        let kubeconfig = account::kubeconfig(plane).await?;
        let dir = tempfile::tempdir()?;
        common::publish("webapp", dir.path(), "webapp.wasm")?;
        let (address, metrics) = (free_address(), free_address());
        let _host = common::host_as(&kubeconfig)
            .arg("--plugin-dir")
            .arg(dir.path())
            .args([
                "--namespaces",
                &namespace,
                "--metrics-bind-address",
                &metrics,
            ])
            .args(["--health-probe-bind-address", &address])
            .spawn()?;
        while !matches!(get(&address, "/readyz").await, Ok((200, _))) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        until(&address, "0.1.0 with the shipped RBAC", |s| {
            running(s, "webapp")
        })
        .await?;

        account::grant_services(plane, &["get", "list", "watch"]).await?;
        common::publish("webapp-v2", dir.path(), "webapp.wasm")?;
        let statuses = until(&address, "0.2.0 once Services may not be written", |s| {
            s.iter().any(|s| s.last_error.is_some())
        })
        .await?;
        account::grant_services(plane, account::ALL_VERBS).await?;
        let webapp = &statuses[0];
        let error = webapp.last_error.as_deref().unwrap_or_default();
        assert_eq!(webapp.version.as_deref(), Some("0.1.0"), "{webapp:?}");
        assert_eq!(webapp.state, PluginState::Running, "{webapp:?}");
        assert!(error.contains("plugin webapp 0.2.0"), "{error}");
        assert!(
            error.contains(&format!("create v1 Service in namespace {namespace}")),
            "{error}"
        );
        assert!(
            !error.contains("Deployment"),
            "only what is denied is named: {error}"
        );
        let (_, text) = get(&metrics, "/metrics").await?;
        let failures = value(
            &parse(&text),
            "wasmop_plugin_load_failures_total",
            &[("source", &webapp.source)],
        );
        assert_eq!(failures, Some(1.0), "{text}");

        let apps = common::webapps(plane.client().await?, &namespace);
        apps.create(&Default::default(), &common::webapp("still-served"))
            .await?;
        common::converged(&apps, "still-served").await?;
        let deployments: Api<Deployment> = Api::namespaced(plane.client().await?, &namespace);
        let deployment = deployments.get("still-served").await?;
        let applied_by = deployment.metadata.annotations.unwrap_or_default();
        assert_eq!(
            applied_by
                .get("example.wasmop.dev/applied-by")
                .map(String::as_str),
            Some("webapp/0.1.0")
        );
        Ok(())
    })
    .await
}
