//! What a `WebApp` should own — its Deployment, Service, marker ConfigMap and status — and
//! whether what exists already matches, so that a converged WebApp causes no writes.

use std::collections::BTreeMap;

use wasmop_guest::conditions::{condition, set_condition};
use wasmop_guest::k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use wasmop_guest::k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, PodSpec, PodTemplateSpec, Service, ServicePort,
    ServiceSpec,
};
use wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Condition, LabelSelector, ObjectMeta, OwnerReference,
};
use wasmop_guest::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use wasmop_guest::meta::controller_of;

use super::resource::{WebApp, WebAppStatus};

/// The label naming the WebApp; the Deployment selects its pods by it.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";
/// The label saying who manages the owned objects.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The label on the marker ConfigMap naming its WebApp.
pub const MARKER_LABEL: &str = "example.wasmop.dev/webapp";
/// The name of the web container.
pub const CONTAINER: &str = "web";
/// The annotation naming the plugin version that last applied an owned object.
pub const APPLIED_BY_ANNOTATION: &str = "example.wasmop.dev/applied-by";

/// The name of the external marker ConfigMap of the WebApp `name`.
pub fn marker_name(name: &str) -> String {
    format!("webapp-marker-{name}")
}

/// The marker ConfigMap: external state the finalizer cleans up, so it has no owner reference.
pub fn marker(app: &WebApp) -> ConfigMap {
    let name = app.metadata.name.clone().unwrap_or_default();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(marker_name(&name)),
            namespace: app.metadata.namespace.clone(),
            labels: Some(BTreeMap::from([(MARKER_LABEL.to_owned(), name)])),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

fn selector(app: &WebApp) -> BTreeMap<String, String> {
    BTreeMap::from([(
        NAME_LABEL.to_owned(),
        app.metadata.name.clone().unwrap_or_default(),
    )])
}

fn owned_metadata(app: &WebApp, owner: &OwnerReference) -> ObjectMeta {
    let mut labels = selector(app);
    labels.insert(MANAGED_BY_LABEL.to_owned(), "wasmop".to_owned());
    ObjectMeta {
        name: app.metadata.name.clone(),
        namespace: app.metadata.namespace.clone(),
        labels: Some(labels),
        annotations: Some(BTreeMap::from([(
            APPLIED_BY_ANNOTATION.to_owned(),
            format!("webapp/{}", env!("CARGO_PKG_VERSION")),
        )])),
        owner_references: Some(vec![owner.clone()]),
        ..ObjectMeta::default()
    }
}

/// The Deployment the WebApp asks for, controlled by it through `owner`.
pub fn deployment(app: &WebApp, owner: &OwnerReference) -> Deployment {
    Deployment {
        metadata: owned_metadata(app, owner),
        spec: DeploymentSpec {
            replicas: Some(app.spec.replicas),
            selector: LabelSelector {
                match_labels: Some(selector(app)),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(selector(app)),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: CONTAINER.to_owned(),
                        image: Some(app.spec.image.clone()),
                        ports: Some(vec![ContainerPort {
                            name: Some("http".to_owned()),
                            container_port: app.spec.port(),
                            protocol: Some("TCP".to_owned()),
                            ..ContainerPort::default()
                        }]),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}

/// The ClusterIP Service the WebApp asks for, controlled by it through `owner`.
pub fn service(app: &WebApp, owner: &OwnerReference) -> Service {
    Service {
        metadata: owned_metadata(app, owner),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            selector: Some(selector(app)),
            ports: Some(vec![ServicePort {
                name: Some("http".to_owned()),
                port: app.spec.port(),
                target_port: Some(IntOrString::Int(app.spec.port())),
                protocol: Some("TCP".to_owned()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// Whether `actual` has every label and annotation `desired` sets.
fn has_metadata(actual: &ObjectMeta, desired: &ObjectMeta) -> bool {
    contains(actual.labels.as_ref(), desired.labels.as_ref())
        && contains(actual.annotations.as_ref(), desired.annotations.as_ref())
}

fn contains(
    actual: Option<&BTreeMap<String, String>>,
    desired: Option<&BTreeMap<String, String>>,
) -> bool {
    desired
        .into_iter()
        .flatten()
        .all(|(k, v)| actual.and_then(|a| a.get(k)) == Some(v))
}

fn same_controller(actual: &ObjectMeta, desired: &ObjectMeta) -> bool {
    controller_of(actual).map(|r| &r.uid) == controller_of(desired).map(|r| &r.uid)
}

fn web_container(spec: &DeploymentSpec) -> Option<&Container> {
    let pod = spec.template.spec.as_ref()?;
    pod.containers.iter().find(|c| c.name == CONTAINER)
}

/// Whether the existing Deployment has every field the desired one sets.
pub fn deployment_matches(actual: &Deployment, desired: &Deployment) -> bool {
    let (a, d) = (&actual.spec, &desired.spec);
    let template_labels = |s: &DeploymentSpec| s.template.metadata.clone().unwrap_or_default();
    let containers_match = match (web_container(a), web_container(d)) {
        (Some(a), Some(d)) => a.image == d.image && a.ports == d.ports,
        _ => false,
    };
    has_metadata(&actual.metadata, &desired.metadata)
        && same_controller(&actual.metadata, &desired.metadata)
        && a.replicas == d.replicas
        && a.selector == d.selector
        && has_metadata(&template_labels(a), &template_labels(d))
        && containers_match
}

/// Whether the existing Service has every field the desired one sets.
pub fn service_matches(actual: &Service, desired: &Service) -> bool {
    let (Some(a), Some(d)) = (&actual.spec, &desired.spec) else {
        return false;
    };
    let ports = |s: &ServiceSpec| {
        s.ports
            .iter()
            .flatten()
            .map(|p| {
                (
                    p.name.clone(),
                    p.port,
                    p.target_port.clone(),
                    p.protocol.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    has_metadata(&actual.metadata, &desired.metadata)
        && same_controller(&actual.metadata, &desired.metadata)
        && a.type_ == d.type_
        && a.selector == d.selector
        && ports(a) == ports(d)
}

/// The status the WebApp should have given its Deployment's ready replicas; conditions keep their
/// lastTransitionTime while their status holds.
pub fn status(app: &WebApp, ready_replicas: i32) -> WebAppStatus {
    let mut status = app.status.clone().unwrap_or_default();
    status.observed_generation = app.metadata.generation;
    status.ready_replicas = ready_replicas;
    let available = ready_replicas >= app.spec.replicas;
    let reason = if available {
        "Available"
    } else {
        "Progressing"
    };
    let message = format!("{ready_replicas}/{} replicas ready", app.spec.replicas);
    set_condition(
        &mut status.conditions,
        Condition {
            observed_generation: app.metadata.generation,
            ..condition("Ready", available, reason, &message)
        },
    );
    status
}

#[cfg(test)]
mod tests {
    use wasmop_guest::meta::controller_owner_ref;

    use super::super::resource::WebAppSpec;
    use super::*;

    fn app() -> WebApp {
        WebApp {
            metadata: ObjectMeta {
                name: Some("shop".into()),
                namespace: Some("prod".into()),
                uid: Some("uid-1".into()),
                generation: Some(3),
                ..ObjectMeta::default()
            },
            spec: WebAppSpec {
                image: "nginx:1.27".into(),
                replicas: 2,
                port: Some(8080),
            },
            status: None,
        }
    }

    /// A Deployment as the apiserver returns it: the desired fields plus defaults and status.
    fn stored(desired: &Deployment) -> Deployment {
        let mut stored = desired.clone();
        stored.metadata.uid = Some("uid-d".into());
        stored
            .metadata
            .labels
            .get_or_insert_default()
            .insert("extra".into(), "x".into());
        let spec = &mut stored.spec;
        spec.revision_history_limit = Some(10);
        let pod = spec.template.spec.as_mut().unwrap();
        pod.restart_policy = Some("Always".into());
        pod.containers[0].image_pull_policy = Some("IfNotPresent".into());
        stored
    }

    #[test]
    fn a_stored_deployment_with_defaults_matches() {
        let app = app();
        let owner = controller_owner_ref(&app).unwrap();
        let desired = deployment(&app, &owner);
        assert!(deployment_matches(&stored(&desired), &desired));
    }

    #[test]
    fn deployment_drift_is_detected() {
        let app = app();
        let owner = controller_owner_ref(&app).unwrap();
        let desired = deployment(&app, &owner);
        let drifts: [fn(&mut Deployment); 4] = [
            |d| d.spec.replicas = Some(5),
            |d| {
                let pod = d.spec.template.spec.as_mut().unwrap();
                pod.containers[0].image = Some("nginx:old".into());
            },
            |d| d.metadata.owner_references = None,
            |d| {
                d.metadata.labels.as_mut().unwrap().remove(MANAGED_BY_LABEL);
            },
        ];
        for drift in drifts {
            let mut actual = stored(&desired);
            drift(&mut actual);
            assert!(!deployment_matches(&actual, &desired));
        }
    }

    #[test]
    fn service_port_changes_are_detected() {
        let app = app();
        let owner = controller_owner_ref(&app).unwrap();
        let desired = service(&app, &owner);
        let mut actual = desired.clone();
        actual.spec.as_mut().unwrap().cluster_ip = Some("10.0.0.7".into());
        assert!(service_matches(&actual, &desired));
        actual.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].port = 80;
        assert!(!service_matches(&actual, &desired));
    }

    #[test]
    fn status_is_ready_when_all_replicas_are() {
        let app = app();
        let progressing = status(&app, 1);
        assert_eq!(progressing.observed_generation, Some(3));
        assert_eq!(progressing.conditions[0].status, "False");
        assert_eq!(progressing.conditions[0].reason, "Progressing");
        assert_eq!(status(&app, 2).conditions[0].reason, "Available");
    }

    #[test]
    fn a_converged_status_is_unchanged() {
        let mut app = app();
        app.status = Some(status(&app, 2));
        assert_eq!(Some(status(&app, 2)), app.status);
    }
}
