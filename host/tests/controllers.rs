//! Plugins reconciling real objects on the real control plane through the whole host: informers,
//! queue, workers, the Wasm runtime and the cache-backed client.

mod common;

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::core::ApiResource;
use serde_json::json;
use wasmop::manager::Manager;
use wasmop::runtime::{PluginOptions, RuntimeConfig};
use wasmop_envtest::{ControlPlane, shared, within};

const LIMIT: Duration = Duration::from_secs(180);

/// Polls `probe` until it returns `Some`, for at most 60 s.
async fn eventually<T, F: Future<Output = Option<T>>>(
    what: &str,
    mut probe: impl FnMut() -> F,
) -> T {
    within(Duration::from_secs(60), what, async {
        loop {
            if let Some(value) = probe().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

async fn kubectl(plane: &ControlPlane, args: &[&str], stdin: Option<String>) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut child = plane
        .kubectl()
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let mut input = child.stdin.take().context("stdin")?;
    input
        .write_all(stdin.unwrap_or_default().as_bytes())
        .await?;
    drop(input);
    let output = child.wait_with_output().await?;
    anyhow::ensure!(
        output.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

#[tokio::test]
async fn webapp_owns_its_deployment_and_service_and_cleans_up_with_its_finalizer()
-> anyhow::Result<()> {
    within(LIMIT, "webapp on the real control plane", async {
        let plane = shared().await?;
        plane
            .install_crds(&[
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/webapp.yaml")
            ])
            .await?;
        let namespace = plane.create_namespace("webapp").await?;
        let client = plane.client().await?;
        let mut manager = Manager::new(client.clone(), RuntimeConfig::default())?;
        manager
            .add_plugin(&common::component("webapp"), PluginOptions::default())
            .await?;

        let manifest = json!({
            "apiVersion": "example.wasmop.dev/v1alpha1", "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": namespace},
            "spec": {"image": "nginx:1.27", "replicas": 2, "port": 8080},
        });
        kubectl(plane, &["apply", "-f", "-"], Some(manifest.to_string())).await?;

        let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
        let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
        let deployment = eventually("the Deployment", || async {
            deployments.get_opt("shop").await.ok().flatten()
        })
        .await;
        let owner = &deployment
            .metadata
            .owner_references
            .as_ref()
            .context("owner references")?[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("WebApp", Some(true))
        );
        assert_eq!(deployment.spec.replicas, Some(2));
        let service = eventually("the Service", || async {
            services.get_opt("shop").await.ok().flatten()
        })
        .await;

        let webapps: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            &namespace,
            &ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp"),
                "webapps",
            ),
        );
        eventually("status.observedGeneration 1", || async {
            let app = webapps.get("shop").await.ok()?;
            (app.data["status"]["observedGeneration"] == 1).then_some(())
        })
        .await;

        let scale = json!({"spec": {"replicas": 3}});
        webapps
            .patch("shop", &PatchParams::default(), &Patch::Merge(&scale))
            .await?;
        eventually("the Deployment scaled to 3", || async {
            let d = deployments.get("shop").await.ok()?;
            (d.spec.replicas == Some(3)).then_some(())
        })
        .await;
        eventually("status.observedGeneration 2", || async {
            let app = webapps.get("shop").await.ok()?;
            (app.data["status"]["observedGeneration"] == 2).then_some(())
        })
        .await;

        services.delete("shop", &DeleteParams::default()).await?;
        let old_uid = service.metadata.uid.clone();
        eventually("the deleted Service recreated", || async {
            let s = services.get_opt("shop").await.ok().flatten()?;
            (s.metadata.uid != old_uid).then_some(())
        })
        .await;

        let markers: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        assert!(
            markers.get_opt("webapp-marker-shop").await?.is_some(),
            "no external marker"
        );
        webapps.delete("shop", &DeleteParams::default()).await?;
        eventually(
            "the finalizer to clean up and release the WebApp",
            || async {
                let gone = webapps.get_opt("shop").await.ok()?.is_none();
                let marker_gone = markers.get_opt("webapp-marker-shop").await.ok()?.is_none();
                (gone && marker_gone).then_some(())
            },
        )
        .await;

        let stats = manager.controllers()[0].stats();
        assert!(
            stats.success.load(std::sync::atomic::Ordering::Relaxed) >= 4,
            "reconciles: {stats:?}"
        );
        manager.stop().await;
        Ok(())
    })
    .await
}
