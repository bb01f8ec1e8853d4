//! Kubernetes Events recorded on behalf of one plugin (events.k8s.io/v1, reported by
//! `wasmop/<plugin>`). As kube's and client-go's recorders do, a repeat of an event (same type,
//! reason and object) within 6 minutes of its last occurrence is not a new Event but a series on
//! the first one. An event recorded during a reconcile carries that reconcile's id in the
//! annotation [`RECONCILE_ID`] (a series: the latest reconcile that recorded it), the id its
//! log lines carry.
//!
//! Recording never blocks a guest and never makes the host keep more than a small backlog:
//! events wait in a bounded queue for the plugin's one publishing task, an event that finds the
//! queue full is dropped (and counted by the runtime), and a failure to publish is logged, not
//! returned. The task ends when the plugin's services are dropped.
//!
//! Imports: the contract only (the event a guest records); never the runtime: the runtime reaches
//! events through the contract's `EventRecorder`.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as KubeEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::mpsc;

use wasmop_contract::imports::{Event, EventRecorder, EventType};
use wasmop_contract::object::ObjectRef;

/// The annotation naming the reconcile that recorded an event.
pub const RECONCILE_ID: &str = "wasmop.dev/reconcile-id";

/// Events that may wait to be published, per plugin.
const BACKLOG: usize = 64;

/// How long after its last occurrence a repeat of an event joins its series.
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// Publishes one plugin's events as `wasmop/<plugin>`.
pub struct Events {
    queue: mpsc::Sender<Event>,
}

impl Events {
    /// A recorder for `plugin` publishing through `client`; starts its publishing task.
    pub fn new(client: kube::Client, plugin: &str) -> Self {
        let publisher = Publisher {
            client,
            controller: format!("wasmop/{plugin}"),
            recent: HashMap::new(),
        };
        let (queue, events) = mpsc::channel(BACKLOG);
        tokio::spawn(publish(publisher, plugin.to_owned(), events));
        Events { queue }
    }
}

impl EventRecorder for Events {
    fn record(&self, _plugin: &str, event: Event) -> bool {
        self.queue.try_send(event).is_ok()
    }
}

async fn publish(mut publisher: Publisher, plugin: String, mut events: mpsc::Receiver<Event>) {
    while let Some(event) = events.recv().await {
        let reconcile_id = event.reconcile_id.clone().unwrap_or_default();
        if let Err(error) = publisher.publish(event).await {
            tracing::warn!(plugin, reconcile_id, "recording an event failed: {error}");
        }
    }
}

/// What makes two events repeats of one: type, reason, and the object with its uid.
#[derive(PartialEq, Eq, Hash)]
struct Repeat {
    warning: bool,
    reason: String,
    regarding: ObjectRef,
    uid: String,
}

/// One plugin's events as they were last published, within the series window.
struct Publisher {
    client: kube::Client,
    controller: String,
    recent: HashMap<Repeat, (KubeEvent, Timestamp)>,
}

impl Publisher {
    /// Creates `event`, or patches the series of its last occurrence.
    async fn publish(&mut self, event: Event) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        self.recent
            .retain(|_, (_, last)| *last + SERIES_WINDOW > now);
        let repeat = Repeat {
            warning: event.event_type == EventType::Warning,
            reason: event.reason.clone(),
            regarding: event.regarding.clone(),
            uid: event.uid.clone(),
        };
        let namespace = match event.regarding.key.namespace.as_str() {
            "" => "default".to_owned(),
            namespace => namespace.to_owned(),
        };
        let events: Api<KubeEvent> = Api::namespaced(self.client.clone(), &namespace);
        let published = match self.recent.get(&repeat) {
            Some((first, _)) => {
                let mut series = first.clone();
                let count = series.series.as_ref().map_or(2, |s| s.count + 1);
                series.series = Some(EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                });
                annotate(&mut series.metadata, event.reconcile_id);
                let name = series.metadata.name.clone().unwrap_or_default();
                let params = PatchParams::default();
                events.patch(&name, &params, &Patch::Merge(&series)).await?;
                series
            }
            None => {
                let created = kube_event(&self.controller, event, &namespace, now);
                events.create(&PostParams::default(), &created).await?;
                created
            }
        };
        self.recent.insert(repeat, (published, now));
        Ok(())
    }
}

/// The first occurrence of `event`, reported by `controller`, in `namespace`.
fn kube_event(controller: &str, event: Event, namespace: &str, now: Timestamp) -> KubeEvent {
    let kind = &event.regarding.kind;
    let name = &event.regarding.key.name;
    let regarding = ObjectReference {
        api_version: Some(kind.api_version()),
        kind: Some(kind.kind.clone()),
        namespace: Some(event.regarding.key.namespace.clone()).filter(|ns| !ns.is_empty()),
        name: Some(name.clone()),
        uid: Some(event.uid.clone()).filter(|uid| !uid.is_empty()),
        ..ObjectReference::default()
    };
    let mut metadata = ObjectMeta {
        namespace: Some(namespace.to_owned()),
        name: Some(format!("{name}.{:x}", now.as_nanosecond())),
        ..ObjectMeta::default()
    };
    annotate(&mut metadata, event.reconcile_id);
    KubeEvent {
        metadata,
        event_time: Some(MicroTime(now)),
        type_: Some(match event.event_type {
            EventType::Normal => "Normal".to_owned(),
            EventType::Warning => "Warning".to_owned(),
        }),
        action: Some(event.reason.clone()),
        reason: Some(event.reason),
        note: Some(event.message),
        regarding: Some(regarding),
        reporting_controller: Some(controller.to_owned()),
        reporting_instance: Some(controller.to_owned()),
        ..KubeEvent::default()
    }
}

/// Names the reconcile `id` in `metadata`'s annotations, when there is one.
fn annotate(metadata: &mut ObjectMeta, id: Option<String>) {
    if let Some(id) = id {
        let annotations = metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(RECONCILE_ID.to_owned(), id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmop_contract::object::GroupVersionKind;

    fn event(reconcile_id: Option<&str>) -> Event {
        let kind = GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp");
        Event {
            regarding: ObjectRef::new(&kind, "shop", "web"),
            uid: "u-1".into(),
            event_type: EventType::Normal,
            reason: "Created".into(),
            message: "Created Deployment shop/web".into(),
            reconcile_id: reconcile_id.map(str::to_owned),
        }
    }

    #[test]
    fn an_event_a_reconcile_recorded_names_it_in_an_annotation() {
        let now = Timestamp::now();
        let published = kube_event(
            "wasmop/webapp",
            event(Some("0123456789abcdef")),
            "shop",
            now,
        );
        let annotations = published.metadata.annotations.unwrap_or_default();
        assert_eq!(
            annotations.get(RECONCILE_ID).map(String::as_str),
            Some("0123456789abcdef")
        );
        assert_eq!(
            published.reporting_controller.as_deref(),
            Some("wasmop/webapp")
        );
        assert_eq!(
            published.regarding.and_then(|r| r.uid).as_deref(),
            Some("u-1")
        );
    }

    #[test]
    fn an_event_recorded_outside_a_reconcile_has_no_annotations() {
        let published = kube_event("wasmop/webapp", event(None), "shop", Timestamp::now());
        assert_eq!(published.metadata.annotations, None);
    }
}
