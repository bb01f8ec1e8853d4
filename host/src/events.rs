//! Kubernetes Events recorded on behalf of plugins (events.k8s.io/v1, through kube's recorder,
//! which aggregates repeats into series). Recording never blocks a guest: each event is published
//! on its own task, and a failure is logged, not returned.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};

use crate::runtime::imports::{Event, EventRecorder, EventType};

/// Publishes plugin events as `wasmop/<plugin>`, one recorder (and series cache) per plugin.
pub struct Events {
    client: kube::Client,
    recorders: Mutex<HashMap<String, Recorder>>,
}

impl Events {
    /// A recorder publishing through `client`.
    pub fn new(client: kube::Client) -> Self {
        Events {
            client,
            recorders: Mutex::default(),
        }
    }

    fn recorder(&self, plugin: &str) -> Recorder {
        let mut recorders = self.recorders.lock().unwrap_or_else(|e| e.into_inner());
        let recorder = recorders.entry(plugin.to_owned()).or_insert_with(|| {
            let reporter = Reporter {
                controller: format!("wasmop/{plugin}"),
                instance: None,
            };
            Recorder::new(self.client.clone(), reporter)
        });
        recorder.clone()
    }
}

impl EventRecorder for Events {
    fn record(&self, plugin: &str, event: Event) {
        let recorder = self.recorder(plugin);
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
