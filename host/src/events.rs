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
//! returned. The task ends when the plugin's services are dropped. What it remembers of a series
//! is its Event's name and count, for at most [`MAX_SERIES`] series, each forgotten once its
//! window has passed, also while the plugin records nothing.
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

/// The most series one plugin's publisher remembers; past it, the least recent is forgotten
/// (its next repeat starts a new Event), so a plugin recording ever new events cannot make the
/// host hold more.
const MAX_SERIES: usize = 512;

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
            recent: Recent::default(),
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
    loop {
        let event = match tokio::time::timeout(SERIES_WINDOW.unsigned_abs(), events.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => return,
            Err(_) => {
                publisher.recent.expire(Timestamp::now());
                continue;
            }
        };
        let reconcile_id = event.reconcile_id.clone().unwrap_or_default();
        if let Err(error) = publisher.publish(event).await {
            tracing::warn!(plugin, reconcile_id, "recording an event failed: {error}");
        }
    }
}

/// What makes two events repeats of one: type, reason, and the object with its uid.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Repeat {
    warning: bool,
    reason: String,
    regarding: ObjectRef,
    uid: String,
}

/// The Event a repeat joins (in its object's [`home`]): its name and the occurrences counted.
struct Series {
    name: String,
    count: i32,
    last: Timestamp,
}

/// The series of one plugin's recent events: those within the window, at most [`MAX_SERIES`].
#[derive(Default)]
struct Recent(HashMap<Repeat, Series>);

impl Recent {
    /// Forgets the series whose window has passed at `now`, and the room they took.
    fn expire(&mut self, now: Timestamp) {
        self.0.retain(|_, series| series.last + SERIES_WINDOW > now);
        self.0.shrink_to(self.0.len() * 2);
    }

    /// Counts one more occurrence of `repeat` at `now` in its series, if it has one.
    fn repeat(&mut self, repeat: &Repeat, now: Timestamp) -> Option<&Series> {
        let series = self.0.get_mut(repeat)?;
        series.count += 1;
        series.last = now;
        Some(series)
    }

    /// Starts the series of `repeat`, making room by forgetting the least recent one when full.
    fn start(&mut self, repeat: Repeat, series: Series) {
        if self.0.len() >= MAX_SERIES {
            let oldest = self.0.iter().min_by_key(|(_, s)| s.last).map(|(r, _)| r);
            if let Some(oldest) = oldest.cloned() {
                self.0.remove(&oldest);
            }
        }
        self.0.insert(repeat, series);
    }
}

/// One plugin's publisher and the series of its recent events.
struct Publisher {
    client: kube::Client,
    controller: String,
    recent: Recent,
}

impl Publisher {
    /// Creates `event`, or patches the series of its last occurrence.
    async fn publish(&mut self, event: Event) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        self.recent.expire(now);
        let repeat = Repeat {
            warning: event.event_type == EventType::Warning,
            reason: event.reason.clone(),
            regarding: event.regarding.clone(),
            uid: event.uid.clone(),
        };
        let namespace = home(&repeat.regarding);
        if let Some(series) = self.recent.repeat(&repeat, now) {
            let events: Api<KubeEvent> = Api::namespaced(self.client.clone(), namespace);
            let patch = series_patch(series, event.reconcile_id);
            events
                .patch(&series.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            return Ok(());
        }
        let created = kube_event(&self.controller, event, namespace, now);
        let events: Api<KubeEvent> = Api::namespaced(self.client.clone(), namespace);
        events.create(&PostParams::default(), &created).await?;
        let name = created.metadata.name.unwrap_or_default();
        let series = Series {
            name,
            count: 1,
            last: now,
        };
        self.recent.start(repeat, series);
        Ok(())
    }
}

/// The namespace an event about `regarding` is published in: the object's own, or `default` for
/// a cluster-scoped one.
fn home(regarding: &ObjectRef) -> &str {
    match regarding.key.namespace.as_str() {
        "" => "default",
        namespace => namespace,
    }
}

/// The merge patch that brings an Event's series to `series`, naming reconcile `id` if any.
fn series_patch(series: &Series, id: Option<String>) -> KubeEvent {
    let mut patch = KubeEvent {
        series: Some(EventSeries {
            count: series.count,
            last_observed_time: MicroTime(series.last),
        }),
        ..KubeEvent::default()
    };
    annotate(&mut patch.metadata, id);
    patch
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

    fn series(last: Timestamp) -> Series {
        Series {
            name: "web.1".into(),
            count: 1,
            last,
        }
    }

    fn repeat(reason: &str) -> Repeat {
        let event = event(None);
        Repeat {
            warning: false,
            reason: reason.into(),
            regarding: event.regarding,
            uid: event.uid,
        }
    }

    #[test]
    fn a_repeat_within_the_window_counts_on_its_series_and_one_after_it_starts_anew() {
        let start = Timestamp::now();
        let mut recent = Recent::default();
        recent.start(repeat("Created"), series(start));
        let later = start + SignedDuration::from_mins(5);
        let counted = recent.repeat(&repeat("Created"), later).map(|s| s.count);
        assert_eq!(counted, Some(2));
        assert!(recent.repeat(&repeat("Deleted"), later).is_none());

        recent.expire(later + SERIES_WINDOW);
        assert!(
            recent
                .repeat(&repeat("Created"), later + SERIES_WINDOW)
                .is_none()
        );
        assert!(recent.0.is_empty() && recent.0.capacity() < 4);
    }

    #[test]
    fn a_plugin_recording_ever_new_events_is_remembered_up_to_the_bound_most_recent_first() {
        let start = Timestamp::now();
        let mut recent = Recent::default();
        for i in 0..MAX_SERIES + 10 {
            let at = start + SignedDuration::from_millis(i as i64);
            recent.start(repeat(&format!("Reason{i}")), series(at));
        }
        assert_eq!(recent.0.len(), MAX_SERIES);
        let now = start + SignedDuration::from_secs(1);
        assert!(recent.repeat(&repeat("Reason9"), now).is_none());
        assert!(recent.repeat(&repeat("Reason10"), now).is_some());
        assert!(
            recent
                .repeat(&repeat(&format!("Reason{}", MAX_SERIES + 9)), now)
                .is_some()
        );
    }

    #[test]
    fn a_series_patch_carries_the_count_the_time_and_the_reconcile_only() {
        let now = Timestamp::now();
        let mut counted = series(now);
        counted.count = 3;
        let patch = serde_json::to_value(series_patch(&counted, Some("0123456789abcdef".into())));
        let patch = patch.unwrap();
        assert_eq!(patch["series"]["count"], 3);
        assert_eq!(
            patch["metadata"]["annotations"][RECONCILE_ID],
            "0123456789abcdef"
        );
        let members: Vec<&String> = patch.as_object().unwrap().keys().collect();
        assert_eq!(members, ["apiVersion", "kind", "metadata", "series"]);
    }
}
