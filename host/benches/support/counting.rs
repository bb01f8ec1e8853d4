//! Host services that count the JSON bytes they hand to a guest (cache reads and the objects
//! writes return), passing every call through to the services they wrap.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use wasmop::contract::imports::{
    ApiError, ApiWriter, CacheReader, Json, ListOptions, Services, Write,
};
use wasmop::contract::object::{GroupVersionKind, ObjectRef};

/// JSON bytes handed to guests so far.
#[derive(Default)]
pub struct Counter(AtomicUsize);

impl Counter {
    /// The bytes counted since the last call.
    pub fn take(&self) -> usize {
        self.0.swap(0, Ordering::Relaxed)
    }

    fn add<'a>(&self, json: impl IntoIterator<Item = &'a Json>) {
        let bytes: usize = json.into_iter().map(|j| j.len()).sum();
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }
}

struct Cache(Arc<dyn CacheReader>, Arc<Counter>);

impl CacheReader for Cache {
    fn get(&self, kind: &GroupVersionKind, namespace: &str, name: &str) -> Result<Json, ApiError> {
        let json = self.0.get(kind, namespace, name)?;
        self.1.add([&json]);
        Ok(json)
    }

    fn list(&self, kind: &GroupVersionKind, options: &ListOptions) -> Result<Vec<Json>, ApiError> {
        let items = self.0.list(kind, options)?;
        self.1.add(&items);
        Ok(items)
    }

    fn list_by_index(
        &self,
        kind: &GroupVersionKind,
        index: &str,
        value: &str,
    ) -> Result<Vec<Json>, ApiError> {
        let items = self.0.list_by_index(kind, index, value)?;
        self.1.add(&items);
        Ok(items)
    }
}

struct Writer(Arc<dyn ApiWriter>, Arc<Counter>);

#[async_trait::async_trait]
impl ApiWriter for Writer {
    async fn write(&self, target: &ObjectRef, write: Write) -> Result<Option<Json>, ApiError> {
        let stored = self.0.write(target, write).await?;
        self.1.add(&stored);
        Ok(stored)
    }
}

/// `services` with its cache and writer counting into `counter`.
pub fn counted(services: Services, counter: &Arc<Counter>) -> Services {
    Services {
        cache: Arc::new(Cache(services.cache, counter.clone())),
        writer: Arc::new(Writer(services.writer, counter.clone())),
        ..services
    }
}
