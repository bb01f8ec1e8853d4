//! A WebApp's life: created, its Deployment becoming ready, scaled, its owned objects deleted or
//! edited by someone else, and deleted through its finalizer.

use anyhow::Context;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{condition, converged, webapp};
use crate::subject::{Subject, eventually};

const NAME: &str = "shop";
const FINALIZER: &str = "example.wasmop.dev/cleanup";

/// A new WebApp gets a Deployment and Service it controls, a marker ConfigMap, its finalizer, a
/// `Created` event and a status saying it is progressing.
pub async fn create(subject: &Subject) -> anyhow::Result<()> {
    subject
        .webapps
        .create(&PostParams::default(), &webapp(NAME, 2)?)
        .await?;
    let app = converged(subject, NAME).await?;
    let uid = app.uid().context("uid")?;
    anyhow::ensure!(
        app.finalizers().iter().any(|f| f == FINALIZER),
        "finalizers: {:?}",
        app.finalizers()
    );
    let ready = condition(&app, "Ready");
    anyhow::ensure!(
        (
            ready["status"].as_str(),
            ready["reason"].as_str(),
            ready["message"].as_str()
        ) == (
            Some("False"),
            Some("Progressing"),
            Some("0/2 replicas ready")
        ),
        "Ready condition: {ready}"
    );
    anyhow::ensure!(
        app.data["status"]["readyReplicas"] == 0,
        "status: {}",
        app.data["status"]
    );

    let deployment = subject.deployments.get(NAME).await?;
    let owned = |meta: &kube::api::ObjectMeta| -> anyhow::Result<()> {
        let owner = meta.owner_references.as_deref().unwrap_or_default();
        anyhow::ensure!(
            owner.len() == 1
                && owner[0].uid == uid
                && owner[0].controller == Some(true)
                && owner[0].kind == "WebApp",
            "owner references: {owner:?}"
        );
        let labels = meta.labels.clone().unwrap_or_default();
        anyhow::ensure!(
            labels.get("app.kubernetes.io/name").map(String::as_str) == Some(NAME),
            "labels: {labels:?}"
        );
        anyhow::ensure!(
            labels
                .get("app.kubernetes.io/managed-by")
                .map(String::as_str)
                == Some("wasmop"),
            "labels: {labels:?}"
        );
        let annotations = meta.annotations.clone().unwrap_or_default();
        anyhow::ensure!(
            annotations
                .get("example.wasmop.dev/applied-by")
                .map(String::as_str)
                == Some("webapp/0.1.0"),
            "annotations: {annotations:?}"
        );
        let managers: Vec<_> = meta
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|f| f.manager.as_deref())
            .collect();
        let manager = subject.field_manager;
        anyhow::ensure!(
            managers.contains(&manager),
            "applied by server-side apply as {manager}: {managers:?}"
        );
        Ok(())
    };
    owned(&deployment.metadata)?;
    let spec = deployment.spec;
    anyhow::ensure!(spec.replicas == Some(2), "replicas: {:?}", spec.replicas);
    let selector = spec.selector.match_labels.unwrap_or_default();
    anyhow::ensure!(
        selector.get("app.kubernetes.io/name").map(String::as_str) == Some(NAME),
        "selector: {selector:?}"
    );
    let pod = spec.template.spec.context("pod template")?;
    let web = pod
        .containers
        .iter()
        .find(|c| c.name == "web")
        .context("container web")?;
    anyhow::ensure!(
        web.image.as_deref() == Some("nginx:1.27"),
        "image: {:?}",
        web.image
    );
    let port = web
        .ports
        .as_deref()
        .unwrap_or_default()
        .first()
        .context("container port")?;
    anyhow::ensure!(
        (port.container_port, port.name.as_deref()) == (8080, Some("http")),
        "port: {port:?}"
    );

    let service = subject.services.get(NAME).await?;
    owned(&service.metadata)?;
    let spec = service.spec.context("Service spec")?;
    anyhow::ensure!(
        spec.type_.as_deref() == Some("ClusterIP"),
        "type: {:?}",
        spec.type_
    );
    let port = spec
        .ports
        .as_deref()
        .unwrap_or_default()
        .first()
        .context("service port")?;
    let target = serde_json::to_value(&port.target_port)?;
    anyhow::ensure!((port.port, target) == (8080, json!(8080)), "port: {port:?}");

    let marker = subject
        .configmaps
        .get(&format!("webapp-marker-{NAME}"))
        .await?;
    let labels = marker.labels();
    anyhow::ensure!(
        labels.get("example.wasmop.dev/webapp").map(String::as_str) == Some(NAME),
        "marker labels: {labels:?}"
    );
    anyhow::ensure!(
        marker.owner_references().is_empty(),
        "the marker is external state, not owned"
    );

    let events: Api<Event> =
        Api::namespaced(subject.webapps.clone().into_client(), &subject.namespace);
    eventually("a Created event about the WebApp", || async {
        let listed = events.list(&ListParams::default()).await?;
        Ok(listed
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("Created")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(NAME)
            })
            .then_some(()))
    })
    .await
}

/// When the Deployment reports its replicas ready, the WebApp becomes Ready.
pub async fn ready(subject: &Subject) -> anyhow::Result<()> {
    let status = json!({"status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2}});
    subject
        .deployments
        .patch_status(NAME, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    eventually("WebApp Ready with 2/2 replicas", || async {
        let app = subject.webapps.get(NAME).await?;
        let ready = condition(&app, "Ready");
        Ok((ready["status"] == "True"
            && ready["reason"] == "Available"
            && ready["message"] == "2/2 replicas ready"
            && app.data["status"]["readyReplicas"] == 2)
            .then_some(()))
    })
    .await
}

/// Raising spec.replicas scales the Deployment and the status follows the new generation.
pub async fn scale(subject: &Subject) -> anyhow::Result<()> {
    let scale = json!({"spec": {"replicas": 3}});
    subject
        .webapps
        .patch(NAME, &PatchParams::default(), &Patch::Merge(&scale))
        .await?;
    let app = converged(subject, NAME).await?;
    anyhow::ensure!(
        app.metadata.generation == Some(2),
        "generation: {:?}",
        app.metadata.generation
    );
    let ready = condition(&app, "Ready");
    anyhow::ensure!(
        ready["message"] == "2/3 replicas ready" && ready["status"] == "False",
        "Ready condition: {ready}"
    );
    let replicas = subject.deployments.get(NAME).await?.spec.replicas;
    anyhow::ensure!(replicas == Some(3), "Deployment replicas: {replicas:?}");
    Ok(())
}

/// A deleted Deployment or Service comes back; an image changed by someone else is put back.
pub async fn owned_restored(subject: &Subject) -> anyhow::Result<()> {
    let old_deployment = subject.deployments.get(NAME).await?.uid();
    let old_service = subject.services.get(NAME).await?.uid();
    subject
        .deployments
        .delete(NAME, &DeleteParams::default())
        .await?;
    subject
        .services
        .delete(NAME, &DeleteParams::default())
        .await?;
    eventually("the Deployment and Service recreated", || async {
        let deployment = subject.deployments.get_opt(NAME).await?;
        let service = subject.services.get_opt(NAME).await?;
        Ok((deployment.is_some_and(|d| d.uid() != old_deployment)
            && service.is_some_and(|s| s.uid() != old_service))
        .then_some(()))
    })
    .await?;

    let edit = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:edited"}]}}}});
    let someone = PatchParams {
        field_manager: Some("someone-else".into()),
        ..PatchParams::default()
    };
    subject
        .deployments
        .patch(NAME, &someone, &Patch::Merge(&edit))
        .await?;
    eventually("the edited image put back", || async {
        let deployment = subject.deployments.get(NAME).await?;
        let image = deployment
            .spec
            .template
            .spec
            .and_then(|p| p.containers.into_iter().next())
            .and_then(|c| c.image);
        Ok((image.as_deref() == Some("nginx:1.27")).then_some(()))
    })
    .await
}

/// Deleting the WebApp deletes its marker, then releases the WebApp.
pub async fn finalizer(subject: &Subject) -> anyhow::Result<()> {
    subject
        .webapps
        .delete(NAME, &DeleteParams::default())
        .await?;
    let marker = format!("webapp-marker-{NAME}");
    eventually("the marker deleted and the WebApp released", || async {
        let app_gone = subject.webapps.get_opt(NAME).await?.is_none();
        let marker_gone = subject.configmaps.get_opt(&marker).await?.is_none();
        Ok((app_gone && marker_gone).then_some(()))
    })
    .await
}
