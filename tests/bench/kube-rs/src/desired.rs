//! What a `WebApp` should own — its Deployment, Service, marker ConfigMap and status — and
//! whether what exists already matches, so that a converged WebApp causes no writes. The same
//! rules as the `webapp` plugin (`plugins/webapp/rust/src/desired.rs`), on k8s-openapi types.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, PodSpec, PodTemplateSpec, Service, ServicePort,
    ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Condition, LabelSelector, ObjectMeta, OwnerReference, Time,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use serde_json::{Value, json};

use crate::resource::{WebApp, WebAppStatus};

/// The finalizer that keeps a WebApp until its marker ConfigMap is gone.
pub const FINALIZER: &str = "example.wasmop.dev/cleanup";
/// The label naming the WebApp; the Deployment selects its pods by it.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";
/// The label saying who manages the owned objects (the plugin's value, so objects are the same).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The label on the marker ConfigMap naming its WebApp.
pub const MARKER_LABEL: &str = "example.wasmop.dev/webapp";
/// The name of the web container.
pub const CONTAINER: &str = "web";
/// The annotation naming the version that last applied an owned object.
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

/// The reference making `app` the controller of an owned object; `None` before it is stored.
pub fn controller_owner_ref(app: &WebApp) -> Option<OwnerReference> {
    Some(OwnerReference {
        block_owner_deletion: Some(true),
        ..app.controller_owner_ref(&())?
    })
}

/// Whether the WebApp carries the finalizer.
pub fn has_finalizer(app: &WebApp) -> bool {
    app.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER)
}

/// A JSON merge patch setting the finalizers to `finalizers`, guarded by the resourceVersion
/// `app` was read at, so that a concurrent change fails with 409 Conflict instead of being lost.
pub fn finalizers_patch(app: &WebApp, finalizers: Vec<String>) -> Value {
    json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": app.metadata.resource_version,
        }
    })
}

/// The finalizers of `app` with [`FINALIZER`] added.
pub fn with_finalizer(app: &WebApp) -> Vec<String> {
    let mut finalizers = app.metadata.finalizers.clone().unwrap_or_default();
    finalizers.push(FINALIZER.to_owned());
    finalizers
}

/// The finalizers of `app` with [`FINALIZER`] removed.
pub fn without_finalizer(app: &WebApp) -> Vec<String> {
    let mut finalizers = app.metadata.finalizers.clone().unwrap_or_default();
    finalizers.retain(|f| f != FINALIZER);
    finalizers
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
                            container_port: app.spec.port,
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
                port: app.spec.port,
                target_port: Some(IntOrString::Int(app.spec.port)),
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

fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
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

/// The wall clock, at the one-second precision the apiserver stores times with.
fn now() -> Time {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Time(Timestamp::from_second(i64::try_from(seconds).unwrap_or(i64::MAX)).unwrap_or_default())
}

/// Sets `condition`, replacing the one of the same type; when the status is unchanged the old
/// lastTransitionTime is kept.
fn set_condition(conditions: &mut Vec<Condition>, mut condition: Condition) {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == condition.type_) else {
        conditions.push(condition);
        return;
    };
    if existing.status == condition.status {
        condition.last_transition_time = existing.last_transition_time.clone();
    }
    *existing = condition;
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
    set_condition(
        &mut status.conditions,
        Condition {
            type_: "Ready".to_owned(),
            status: if available { "True" } else { "False" }.to_owned(),
            reason: reason.to_owned(),
            message: format!("{ready_replicas}/{} replicas ready", app.spec.replicas),
            observed_generation: app.metadata.generation,
            last_transition_time: now(),
        },
    );
    status
}

#[cfg(test)]
mod tests {
    use crate::resource::WebAppSpec;

    use super::*;

    fn app() -> WebApp {
        WebApp {
            metadata: ObjectMeta {
                name: Some("shop".into()),
                namespace: Some("prod".into()),
                uid: Some("uid-1".into()),
                generation: Some(3),
                resource_version: Some("41".into()),
                ..ObjectMeta::default()
            },
            spec: WebAppSpec {
                image: "nginx:1.27".into(),
                replicas: 2,
                port: 8080,
            },
            status: None,
        }
    }

    fn owner() -> OwnerReference {
        controller_owner_ref(&app()).unwrap()
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

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    #[test]
    fn the_owner_reference_is_a_blocking_controller_reference() {
        let owner = owner();
        assert_eq!(owner.api_version, "example.wasmop.dev/v1alpha1");
        assert_eq!(owner.kind, "WebApp");
        assert_eq!(owner.name, "shop");
        assert_eq!(owner.uid, "uid-1");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
        assert!(controller_owner_ref(&WebApp::default()).is_none());
    }

    #[test]
    fn the_marker_is_labelled_and_unowned() {
        let marker = marker(&app());
        assert_eq!(marker.metadata.name.as_deref(), Some("webapp-marker-shop"));
        assert_eq!(marker.metadata.namespace.as_deref(), Some("prod"));
        assert_eq!(marker.metadata.labels.unwrap()[MARKER_LABEL], "shop");
        assert_eq!(marker.metadata.owner_references, None);
    }

    #[test]
    fn the_deployment_runs_the_image_on_the_port() {
        let deployment = deployment(&app(), &owner());
        let spec = &deployment.spec;
        assert_eq!(spec.replicas, Some(2));
        let container = web_container(spec).unwrap();
        assert_eq!(container.image.as_deref(), Some("nginx:1.27"));
        assert_eq!(container.ports.as_ref().unwrap()[0].container_port, 8080);
        assert_eq!(
            spec.selector.match_labels.as_ref().unwrap()[NAME_LABEL],
            "shop"
        );
        assert_eq!(deployment.metadata.owner_references, Some(vec![owner()]));
        assert_eq!(
            deployment.metadata.labels.unwrap()[MANAGED_BY_LABEL],
            "wasmop"
        );
    }

    #[test]
    fn the_deployment_serializes_with_its_kind_for_apply() {
        let value = serde_json::to_value(deployment(&app(), &owner())).unwrap();
        assert_eq!(value["apiVersion"], "apps/v1");
        assert_eq!(value["kind"], "Deployment");
    }

    #[test]
    fn the_service_exposes_the_port() {
        let service = service(&app(), &owner());
        let spec = service.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        let port = &spec.ports.unwrap()[0];
        assert_eq!(port.port, 8080);
        assert_eq!(port.target_port, Some(IntOrString::Int(8080)));
    }

    #[test]
    fn a_stored_deployment_with_defaults_matches() {
        let desired = deployment(&app(), &owner());
        assert!(deployment_matches(&stored(&desired), &desired));
    }

    #[test]
    fn deployment_drift_is_detected() {
        let desired = deployment(&app(), &owner());
        let drifts: [fn(&mut Deployment); 5] = [
            |d| d.spec.replicas = Some(5),
            |d| {
                let pod = d.spec.template.spec.as_mut().unwrap();
                pod.containers[0].image = Some("nginx:old".into());
            },
            |d| d.metadata.owner_references = None,
            |d| {
                d.metadata.labels.as_mut().unwrap().remove(MANAGED_BY_LABEL);
            },
            |d| d.spec.template.spec = None,
        ];
        for drift in drifts {
            let mut actual = stored(&desired);
            drift(&mut actual);
            assert!(!deployment_matches(&actual, &desired));
        }
    }

    #[test]
    fn service_port_changes_are_detected() {
        let desired = service(&app(), &owner());
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
        assert_eq!(progressing.ready_replicas, 1);
        assert_eq!(progressing.conditions[0].status, "False");
        assert_eq!(progressing.conditions[0].reason, "Progressing");
        assert_eq!(progressing.conditions[0].message, "1/2 replicas ready");
        assert_eq!(progressing.conditions[0].observed_generation, Some(3));
        assert_eq!(status(&app, 2).conditions[0].reason, "Available");
    }

    #[test]
    fn a_converged_status_is_unchanged() {
        let mut app = app();
        app.status = Some(status(&app, 2));
        app.status.as_mut().unwrap().conditions[0].last_transition_time = at(10);
        assert_eq!(Some(status(&app, 2)), app.status);
    }

    #[test]
    fn the_transition_time_is_kept_while_the_status_holds() {
        let mut app = app();
        app.status = Some(status(&app, 0));
        app.status.as_mut().unwrap().conditions[0].last_transition_time = at(10);
        // Still not ready, with a new message: the condition did not transition.
        let scaling = status(&app, 1);
        assert_eq!(scaling.conditions[0].last_transition_time, at(10));
        assert_eq!(scaling.conditions[0].message, "1/2 replicas ready");
        // Ready now: it did.
        let ready = status(&app, 2);
        assert_eq!(ready.conditions[0].status, "True");
        assert!(ready.conditions[0].last_transition_time.0.as_second() > 1_700_000_000);
    }

    #[test]
    fn a_new_generation_changes_the_status() {
        let mut app = app();
        app.status = Some(status(&app, 2));
        app.metadata.generation = Some(4);
        let next = status(&app, 2);
        assert_ne!(Some(&next), app.status.as_ref());
        assert_eq!(next.observed_generation, Some(4));
    }

    #[test]
    fn other_conditions_are_left_alone() {
        let mut app = app();
        let other = Condition {
            type_: "Degraded".into(),
            status: "False".into(),
            reason: "Fine".into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: at(5),
        };
        app.status = Some(WebAppStatus {
            conditions: vec![other.clone()],
            ..WebAppStatus::default()
        });
        let status = status(&app, 2);
        assert_eq!(status.conditions[0], other);
        assert_eq!(status.conditions[1].type_, "Ready");
    }

    #[test]
    fn finalizer_patches_are_guarded_by_the_resource_version() {
        let mut app = app();
        app.metadata.finalizers = Some(vec!["other".into()]);
        assert!(!has_finalizer(&app));
        assert_eq!(
            finalizers_patch(&app, with_finalizer(&app)),
            json!({ "metadata": {
                "finalizers": ["other", FINALIZER],
                "resourceVersion": "41",
            }})
        );
        app.metadata.finalizers = Some(with_finalizer(&app));
        assert!(has_finalizer(&app));
        assert_eq!(without_finalizer(&app), vec!["other".to_owned()]);
    }
}
