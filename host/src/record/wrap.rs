//! The recorder installed at the runtime's seam ([`crate::runtime::Wrap`]) by `wasmop run
//! --record`: each reconcile runs inside a recording, and the plugin's services are wrapped so
//! that what the cache returns, the writes the apiserver answers and the events the plugin
//! records are noted in the recording of the reconcile under way in that task (outside one —
//! a webhook call — nothing is noted). The raw requests of a plugin's own client (the
//! `transport` import) pass through unrecorded: a replay answers the cache and client imports.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::record::{self, Recorder};
use crate::runtime::{Reconciled, Wrap};
use wasmop_contract::imports::{
    ApiError, ApiWriter, CacheReader, Event, EventRecorder, Json, ListOptions, Services, Write,
};
use wasmop_contract::object::{GroupVersionKind, ObjectKey, ObjectRef};

impl Wrap for Recorder {
    fn services(&self, _plugin: &str, services: Services) -> Services {
        Services {
            cache: Arc::new(Reads(services.cache)),
            writer: Arc::new(Writes(services.writer)),
            events: Arc::new(Events(services.events)),
            ..services
        }
    }

    fn reconcile<'a>(
        &'a self,
        plugin: &'a str,
        key: &'a ObjectKey,
        call: BoxFuture<'a, Reconciled>,
    ) -> BoxFuture<'a, Reconciled> {
        Box::pin(async move {
            let (result, recording) = record::recording(call).await;
            self.save(plugin, key, recording, &result).await;
            result
        })
    }
}

/// Cache reads, noting every object returned.
struct Reads(Arc<dyn CacheReader>);

impl Reads {
    fn noted(kind: &GroupVersionKind, objects: Vec<Json>) -> Vec<Json> {
        objects.iter().for_each(|json| record::read(kind, json));
        objects
    }
}

impl CacheReader for Reads {
    fn get(&self, kind: &GroupVersionKind, namespace: &str, name: &str) -> Result<Json, ApiError> {
        let json = self.0.get(kind, namespace, name)?;
        record::read(kind, &json);
        Ok(json)
    }

    fn list(&self, kind: &GroupVersionKind, options: &ListOptions) -> Result<Vec<Json>, ApiError> {
        Ok(Reads::noted(kind, self.0.list(kind, options)?))
    }

    fn list_by_index(
        &self,
        kind: &GroupVersionKind,
        index: &str,
        value: &str,
    ) -> Result<Vec<Json>, ApiError> {
        Ok(Reads::noted(
            kind,
            self.0.list_by_index(kind, index, value)?,
        ))
    }
}

/// Apiserver writes, noting each with its answer.
struct Writes(Arc<dyn ApiWriter>);

#[async_trait::async_trait]
impl ApiWriter for Writes {
    async fn write(&self, target: &ObjectRef, write: Write) -> Result<Option<Json>, ApiError> {
        let noted = record::copy(&write);
        let answer = self.0.write(target, write).await;
        record::wrote(target, noted, answer.as_ref().err());
        answer
    }
}

/// Events, noting each.
struct Events(Arc<dyn EventRecorder>);

impl EventRecorder for Events {
    fn record(&self, plugin: &str, event: Event) -> bool {
        record::event(&event);
        self.0.record(plugin, event)
    }
}
