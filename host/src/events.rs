//! Kubernetes Events recorded on behalf of one plugin (events.k8s.io/v1, through kube's recorder,
//! which aggregates repeats into series). Recording never blocks a guest and never makes the host
//! keep more than a small backlog: events wait in a bounded queue for the plugin's one publishing
//! task, an event that finds the queue full is dropped (and counted by the runtime), and a failure
//! to publish is logged, not returned. The task ends when the plugin's services are dropped.
//!
//! Imports: the contract only (the event a guest records); never the runtime: the runtime reaches
//! events through the contract's `EventRecorder`.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};
use tokio::sync::mpsc;

use wasmop_contract::imports::{Event, EventRecorder, EventType};

/// Events that may wait to be published, per plugin.
const BACKLOG: usize = 64;

/// Publishes one plugin's events as `wasmop/<plugin>`.
pub struct Events {
    queue: mpsc::Sender<Event>,
}

impl Events {
    /// A recorder for `plugin` publishing through `client`; starts its publishing task.
    pub fn new(client: kube::Client, plugin: &str) -> Self {
        let reporter = Reporter {
            controller: format!("wasmop/{plugin}"),
            instance: None,
        };
        let recorder = Recorder::new(client, reporter);
        let (queue, events) = mpsc::channel(BACKLOG);
        tokio::spawn(publish(recorder, plugin.to_owned(), events));
        Events { queue }
    }
}

impl EventRecorder for Events {
    fn record(&self, _plugin: &str, event: Event) -> bool {
        self.queue.try_send(event).is_ok()
    }
}

async fn publish(recorder: Recorder, plugin: String, mut events: mpsc::Receiver<Event>) {
    while let Some(event) = events.recv().await {
        let (published, reference) = kube_event(event);
        if let Err(error) = recorder.publish(&published, &reference).await {
            tracing::warn!(plugin, "recording an event failed: {error}");
        }
    }
}

fn kube_event(event: Event) -> (KubeEvent, ObjectReference) {
    let kind = &event.regarding.kind;
    let reference = ObjectReference {
        api_version: Some(kind.api_version()),
        kind: Some(kind.kind.clone()),
        namespace: Some(event.regarding.key.namespace.clone()).filter(|ns| !ns.is_empty()),
        name: Some(event.regarding.key.name.clone()),
        uid: Some(event.uid.clone()).filter(|uid| !uid.is_empty()),
        ..ObjectReference::default()
    };
    let published = KubeEvent {
        type_: match event.event_type {
            EventType::Normal => KubeEventType::Normal,
            EventType::Warning => KubeEventType::Warning,
        },
        action: event.reason.clone(),
        reason: event.reason,
        note: Some(event.message),
        secondary: None,
    };
    (published, reference)
}
