//! A kind whose list never completes holds up nothing but the plugin that needs it.
//!
//! The WebApp CRD here serves `v1alpha1` but stores `v1alpha2` and converts through a webhook
//! that accepts connections and never answers, so listing the `webapp` plugin's kind never
//! succeeds. While its informer waits, `guest-good` keeps reconciling, `/plugins` answers
//! (showing webapp as starting), guest-good is swapped to a new module, and shutdown ends the
//! manager at once; with a short cache sync timeout, webapp's load fails with the reason.

use crate::common;

use std::time::Duration;

use common::scrape::{free_address, get};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use wasmop::cache::Namespaces;
use wasmop::manager::{Manager, ManagerOptions};
use wasmop::plugins::{PluginHandle, PluginState, PluginStatus};
use wasmop::runtime::PluginOptions;
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(300);

/// Long enough that webapp is still starting whenever the first part looks.
const PATIENT: Duration = Duration::from_secs(600);

/// A listener that accepts connections and never answers; the address of its URL.
async fn silent_server() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = listener.accept().await {
            held.push(connection);
        }
    });
    Ok(format!("https://{address}/convert"))
}

/// The WebApp CRD storing `v1alpha2` and converting to `v1alpha1` through `webhook`.
async fn install_unconvertible_crd(plane: &ControlPlane, webhook: &str) -> anyhow::Result<()> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/webapp.yaml");
    let mut crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(path)?)?;
    let mut stored = crd["spec"]["versions"][0].clone();
    crd["spec"]["versions"][0]["storage"] = json!(false);
    stored["name"] = json!("v1alpha2");
    crd["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
        .push(stored);
    crd["spec"]["conversion"] = json!({
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": webhook}},
    });
    let file = plane.dir().join("unconvertible-webapp.json");
    std::fs::write(&file, serde_json::to_vec(&crd)?)?;
    plane.install_crds(&[file]).await?;
    Ok(())
}

fn status<'a>(statuses: &'a [PluginStatus], name: &str) -> &'a PluginStatus {
    statuses
        .iter()
        .find(|s| s.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no plugin {name} in {statuses:?}"))
}

/// A manager over `namespace` with webapp and guest-good loaded and `sync_timeout`.
async fn start_manager(
    client: kube::Client,
    namespace: &str,
    sync_timeout: Duration,
    metrics: Option<&str>,
) -> anyhow::Result<Manager> {
    let options = ManagerOptions {
        namespaces: Namespaces::Only(vec![namespace.to_owned()]),
        metrics_address: metrics.map(str::parse).transpose()?,
        sync_timeout,
        ..ManagerOptions::default()
    };
    let mut manager = Manager::new(client, options)?;
    manager.serve().await?;
    for plugin in ["webapp", "guest-good"] {
        manager
            .load_plugin(&common::component(plugin), PluginOptions::default())
            .await?;
    }
    Ok(manager)
}

/// Waits until plugin `name`'s state is `state`.
async fn state_until(plugins: &PluginHandle, name: &str, state: PluginState) -> PluginStatus {
    loop {
        let statuses = plugins.statuses();
        if let Some(status) = statuses.iter().find(|s| s.name.as_deref() == Some(name))
            && status.state == state
        {
            return status.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_kind_that_never_syncs_holds_up_only_its_own_plugin() -> anyhow::Result<()> {
    within(LIMIT, "a kind that never syncs", async {
        let plane = &shared_by(module_path!()).await?;
        install_unconvertible_crd(plane, &silent_server().await?).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("stuck").await?;
        let kind = kube::api::GroupVersionKind::gvk("example.wasmop.dev", "v1alpha2", "WebApp");
        let stored = kube::core::ApiResource::from_gvk_with_plural(&kind, "webapps");
        let app: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "example.wasmop.dev/v1alpha2", "kind": "WebApp",
            "metadata": {"name": "unconvertible"},
            "spec": {"image": "nginx:1.27", "replicas": 1, "port": 8080},
        }))?;
        Api::<DynamicObject>::namespaced_with(client.clone(), &namespace, &stored)
            .create(&PostParams::default(), &app)
            .await?;
        let listed = tokio::time::timeout(
            Duration::from_secs(5),
            common::webapps(client.clone(), &namespace).list(&Default::default()),
        )
        .await;
        assert!(
            !matches!(listed, Ok(Ok(_))),
            "v1alpha1 WebApps must not list"
        );
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);

        let metrics = free_address();
        let manager = start_manager(client.clone(), &namespace, PATIENT, Some(&metrics)).await?;
        let plugins = manager.handle();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(manager.run(async {
            let _ = stopped.await;
        }));
        common::seen_by_good(&configmaps, "while-stuck").await?;
        let (code, body) = get(&metrics, "/plugins").await?;
        assert_eq!(code, 200, "{body}");
        let statuses: Vec<PluginStatus> = serde_json::from_str(&body)?;
        assert_eq!(status(&statuses, "webapp").state, PluginState::Starting);
        assert_eq!(status(&statuses, "guest-good").state, PluginState::Running);

        let good = common::component("guest-good");
        let swapped = plugins
            .install(
                &good.display().to_string(),
                &good,
                std::fs::read(&good)?,
                PluginOptions::default(),
            )
            .await?;
        println!("guest-good swapped in while webapp starts: {swapped:?}");
        common::seen_by_good(&configmaps, "after-swap").await?;
        let statuses = plugins.statuses();
        assert_eq!(status(&statuses, "webapp").state, PluginState::Starting);

        let stopping = std::time::Instant::now();
        let _ = stop.send(());
        running.await??;
        let stopped_in = stopping.elapsed();
        println!("stopped in {stopped_in:?} with webapp still starting");
        assert!(stopped_in < PATIENT, "shutdown waited for the sync timeout");

        let allowed = Duration::from_secs(3);
        let manager = start_manager(client.clone(), &namespace, allowed, None).await?;
        let plugins = manager.handle();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(manager.run(async {
            let _ = stopped.await;
        }));
        let failed = state_until(&plugins, "webapp", PluginState::Failed).await;
        let reason = failed.last_error.unwrap_or_default();
        println!("webapp failed: {reason}");
        assert!(
            reason.contains("WebApp in example.wasmop.dev/v1alpha1 did not sync within 3s"),
            "{reason}"
        );
        common::seen_by_good(&configmaps, "after-failure").await?;
        assert_eq!(
            status(&plugins.statuses(), "guest-good").state,
            PluginState::Running
        );
        let _ = stop.send(());
        running.await??;
        Ok(())
    })
    .await
}
