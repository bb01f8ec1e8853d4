//! Kubernetes Events about an object, for `kubectl describe` to show. Recording is best effort:
//! the host logs a failure and never returns it to the guest.

use crate::kind::Object;
use crate::raw::wasmop::reconciler::events as raw;
pub use crate::raw::wasmop::reconciler::events::EventType;

/// The host's event recorder; get one with [`events()`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Events {
    _private: (),
}

/// The host's event recorder.
pub fn events() -> Events {
    Events::default()
}

impl Events {
    /// Records an event about `obj`; `reason` is a short CamelCase word, `message` a sentence.
    pub fn record<K: Object>(&self, obj: &K, event_type: EventType, reason: &str, message: &str) {
        let meta = obj.metadata();
        let about = raw::Regarding {
            kind: K::gvk(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
        };
        raw::record(&about, event_type, reason, message);
    }

    /// Records a `Normal` event about `obj`.
    pub fn normal<K: Object>(&self, obj: &K, reason: &str, message: &str) {
        self.record(obj, EventType::Normal, reason, message);
    }

    /// Records a `Warning` event about `obj`.
    pub fn warning<K: Object>(&self, obj: &K, reason: &str, message: &str) {
        self.record(obj, EventType::Warning, reason, message);
    }
}
