//! Kubernetes Events recorded on behalf of plugins (events.k8s.io/v1, through kube's recorder,
//! which aggregates repeats into series). Recording never blocks a guest: each event is published
//! on its own task, and a failure is logged, not returned.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};

use crate::runtime::imports::{Event, EventRecorder, EventType};

/// Publishes plugin events as `wasmop/<plugin>`.
pub struct Events {
    client: kube::Client,
}

impl Events {
    /// A recorder publishing through `client`.
    pub fn new(client: kube::Client) -> Self {
        Events { client }
    }
}

impl EventRecorder for Events {
    fn record(&self, plugin: &str, event: Event) {
        let reporter = Reporter {
            controller: format!("wasmop/{plugin}"),
            instance: None,
        };
        let recorder = Recorder::new(self.client.clone(), reporter);
        let kind = &event.regarding.kind;
        let api_version = if kind.group.is_empty() {
            kind.version.clone()
        } else {
            format!("{}/{}", kind.group, kind.version)
        };
        let reference = ObjectReference {
            api_version: Some(api_version),
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
        let plugin = plugin.to_owned();
        tokio::spawn(async move {
            if let Err(error) = recorder.publish(&published, &reference).await {
                tracing::warn!(plugin, "recording an event failed: {error}");
            }
        });
    }
}
