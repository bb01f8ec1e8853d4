//! The `wasmop` binary configured by a `--config` file on the real control plane: it watches only
//! the namespaces listed, applies a plugin's own limits, starts a plugin with its own arguments
//! and environment, runs each controller of a module of several as a plugin of its own, and
//! refuses invalid settings at start naming the setting.

use crate::common;

use common::scrape::{free_address, get, parse, value};

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use wasmop_envtest::{shared_by, within};

/// The annotation guest-good writes what it started with under.
const STARTED_WITH: &str = "guest-good.wasmop.dev/started-with";

const LIMIT: Duration = Duration::from_secs(180);

#[tokio::test]
async fn a_config_file_scopes_the_host_to_its_namespaces_and_limits_a_plugin() -> anyhow::Result<()>
{
    within(LIMIT, "a host configured by file", async {
        let plane = &shared_by(module_path!()).await?;
        common::install_webapp_crd(plane).await?;
        let inside = plane.create_namespace("watched").await?;
        let outside = plane.create_namespace("unwatched").await?;
        let client = plane.client().await?;
        let (apps_in, apps_out) = (
            common::webapps(client.clone(), &inside),
            common::webapps(client.clone(), &outside),
        );
        apps_out
            .create(&PostParams::default(), &common::webapp("ignored"))
            .await?;

        let metrics = free_address();
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("wasmop.yaml");
        let yaml = format!(
            "namespaces: [{inside}]\n\
             metrics-bind-address: {metrics}\n\
             health-probe-bind-address: '0'\n\
             plugins:\n\
             - file: {}\n\
             \x20 max-concurrent-reconciles: 3\n\
             - file: {}\n\
             \x20 args: [--mark=file, -v]\n\
             \x20 env: [{{name: GUEST_GOOD_MARK, value: from-file}}]\n",
            common::component("webapp").display(),
            common::component("guest-good").display()
        );
        std::fs::write(&config, yaml)?;
        let _host = common::host(plane).arg("--config").arg(&config).spawn()?;

        apps_in
            .create(&PostParams::default(), &common::webapp("served"))
            .await?;
        common::converged(&apps_in, "served").await?;

        let text = loop {
            if let Ok((200, text)) = get(&metrics, "/metrics").await {
                let counted = [("controller", "webapp"), ("result", "success")];
                if value(
                    &parse(&text),
                    "controller_runtime_reconcile_total",
                    &counted,
                )
                .is_some_and(|n| n > 0.0)
                {
                    break text;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let samples = parse(&text);
        let workers = [("controller", "webapp")];
        assert_eq!(
            value(
                &samples,
                "controller_runtime_max_concurrent_reconciles",
                &workers
            ),
            Some(3.0),
            "the plugin's own limit from the file"
        );
        let webapps = [("kind", "WebApp")];
        assert_eq!(
            value(&samples, "wasmop_cache_objects", &webapps),
            Some(1.0),
            "only the watched namespace's WebApp is cached"
        );
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &inside);
        common::seen_by_good(&configmaps, "configured").await?;
        let annotations = configmaps.get("configured").await?.metadata.annotations;
        let started_with = annotations.unwrap_or_default().remove(STARTED_WITH);
        assert_eq!(
            started_with.as_deref(),
            Some("args=--mark=file -v;mark=from-file"),
            "guest-good's args and env from its `plugins` entry"
        );
        let deployments: Api<Deployment> = Api::namespaced(client, &outside);
        assert!(deployments.get_opt("ignored").await?.is_none());
        let ignored = apps_out.get("ignored").await?;
        assert!(ignored.data.get("status").is_none(), "{:?}", ignored.data);
        Ok(())
    })
    .await
}

/// One module of two controllers (tests/guests/pair, set up as an operator's main sets them up)
/// runs as two plugins from one `plugins` entry listing both: both mark a new ConfigMap with the
/// mark the entry's args gave their setup (which `wasmop build` ran once without them), each
/// named after its controller and its source after the file and the controller. A host given
/// the module with none selected does not start, and says why, naming both.
#[tokio::test]
async fn a_module_of_two_controllers_runs_each_as_a_plugin_of_its_own() -> anyhow::Result<()> {
    within(LIMIT, "two controllers of one module", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("pair").await?;
        let dir = tempfile::tempdir()?;
        let pair = dir.path().join("pair.wasm");
        std::fs::copy(common::component("pair-go"), &pair)?;
        let metrics = free_address();
        let config = dir.path().join("wasmop.yaml");
        let yaml = format!(
            "namespaces: [{namespace}]\nmetrics-bind-address: {metrics}\n\
             health-probe-bind-address: '0'\nplugins:\n\
             - file: {}\n\x20 controllers: [first, second]\n\x20 args: [--mark=configured]\n",
            pair.display()
        );
        std::fs::write(&config, yaml)?;
        let _host = common::host(plane).arg("--config").arg(&config).spawn()?;

        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, &namespace);
        let object = serde_json::from_value(serde_json::json!({"metadata": {"name": "both"}}))?;
        configmaps.create(&PostParams::default(), &object).await?;
        let marks = ["pair.wasmop.dev/first", "pair.wasmop.dev/second"];
        loop {
            let annotations = configmaps.get("both").await?.metadata.annotations;
            let annotations = annotations.unwrap_or_default();
            if marks
                .iter()
                .all(|m| annotations.get(*m).map(String::as_str) == Some("configured"))
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let sources = ["pair.wasm#first", "pair.wasm#second"];
        let listed = |body: &str| sources.iter().all(|s| body.contains(s));
        let plugins = common::scrape::plugins_until(&metrics, listed).await?;
        for name in ["pair-first", "pair-second"] {
            assert!(plugins.contains(name), "{name} in {plugins}");
        }

        let unselected = common::host(plane)
            .args(common::NO_PORTS)
            .args(["--namespaces", &namespace, "--plugin"])
            .arg(&pair)
            .output()
            .await?;
        let said = String::from_utf8_lossy(&unselected.stderr);
        assert!(!unselected.status.success(), "{said}");
        let why = "the setup completed 2 controllers (first, second) and a plugin runs one";
        assert!(
            said.contains(why) && said.contains("WASMOP_CONTROLLER=<name>"),
            "{said}"
        );
        println!("PAIR: one entry ran the module's two controllers as pair-first and pair-second");
        Ok(())
    })
    .await
}

#[test]
fn invalid_settings_stop_the_host_before_it_starts() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("wasmop.yaml");
    std::fs::write(
        &config,
        "plugins: [webapp.wasm]\nleader-election-lease-duration: 5s\n",
    )?;
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .args(["run", "--config"])
        .arg(&config)
        .args(["--leader-election-renew-deadline", "8s"])
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`leader-election-renew-deadline`: 8s must be shorter than leader-election-lease-duration (5s)"),
        "{stderr}"
    );
    Ok(())
}
