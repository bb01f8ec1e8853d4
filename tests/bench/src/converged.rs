//! What "converged" means for every operator alike: each WebApp's status observed its
//! generation, and it controls a Deployment and a Service built to its spec — replicas, image
//! and port — as `tests/conformance` checks one WebApp at a time.

use std::collections::HashMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DynamicObject, ListParams};

/// Whether a WebApp's status has observed its current generation.
pub fn observed(app: &DynamicObject) -> bool {
    let observed = app.data["status"]["observedGeneration"].as_i64();
    observed.is_some() && observed == app.metadata.generation
}

/// What a WebApp asks for.
#[derive(Debug, PartialEq)]
struct Wanted {
    uid: String,
    replicas: i64,
    image: String,
    port: i64,
}

/// The WebApps `apps` of `namespace` whose status, Deployment or Service is not yet what they ask
/// for, by name with the first difference found.
pub async fn unconverged(
    apps: &Api<DynamicObject>,
    client: &kube::Client,
    namespace: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    let listed = ListParams::default();
    let apps = apps.list(&listed).await?.items;
    let deployments: HashMap<String, Deployment> = by_name(
        Api::<Deployment>::namespaced(client.clone(), namespace)
            .list(&listed)
            .await?
            .items,
        |d| &d.metadata,
    );
    let services: HashMap<String, Service> = by_name(
        Api::<Service>::namespaced(client.clone(), namespace)
            .list(&listed)
            .await?
            .items,
        |s| &s.metadata,
    );
    Ok(apps
        .iter()
        .filter_map(|app| {
            let name = app.metadata.name.clone().unwrap_or_default();
            let problem = difference(app, deployments.get(&name), services.get(&name))?;
            Some((name, problem))
        })
        .collect())
}

fn by_name<T>(items: Vec<T>, meta: fn(&T) -> &ObjectMeta) -> HashMap<String, T> {
    items
        .into_iter()
        .map(|item| (meta(&item).name.clone().unwrap_or_default(), item))
        .collect()
}

/// The first way `app`'s status or owned objects differ from what it asks for.
fn difference(
    app: &DynamicObject,
    deployment: Option<&Deployment>,
    service: Option<&Service>,
) -> Option<String> {
    if !observed(app) {
        return Some("status has not observed its generation".into());
    }
    let spec = &app.data["spec"];
    let wanted = Wanted {
        uid: app.metadata.uid.clone().unwrap_or_default(),
        replicas: spec["replicas"].as_i64().unwrap_or(1),
        image: spec["image"].as_str().unwrap_or_default().to_owned(),
        port: spec["port"].as_i64().unwrap_or(8080),
    };
    let Some(deployment) = deployment else {
        return Some("no Deployment".into());
    };
    let Some(service) = service else {
        return Some("no Service".into());
    };
    let found = deployment_as_built(deployment);
    if found.as_ref() != Some(&wanted) {
        return Some(format!("Deployment is {found:?}, wants {wanted:?}"));
    }
    let port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|p| p.first())
        .map(|p| i64::from(p.port));
    if controller_uid(&service.metadata) != Some(wanted.uid.as_str()) {
        return Some("Service is not controlled by the WebApp".into());
    }
    (port != Some(wanted.port)).then(|| format!("Service port {port:?}, wants {}", wanted.port))
}

/// The controller owner's UID of an object.
fn controller_uid(meta: &ObjectMeta) -> Option<&str> {
    meta.owner_references
        .as_deref()?
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == "WebApp")
        .map(|o| o.uid.as_str())
}

/// What a Deployment was built from: its controller's UID, replicas, and its `web` container's
/// image and port.
fn deployment_as_built(deployment: &Deployment) -> Option<Wanted> {
    let spec = &deployment.spec;
    let container = spec
        .template
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == "web")?;
    Some(Wanted {
        uid: controller_uid(&deployment.metadata)?.to_owned(),
        replicas: i64::from(spec.replicas?),
        image: container.image.clone()?,
        port: i64::from(container.ports.as_ref()?.first()?.container_port),
    })
}
