//! Typed reads from the host's informer cache. Reads never reach the apiserver, and return this
//! plugin's own writes or newer.

use serde::de::DeserializeOwned;

use crate::error::Error;
use crate::kind::{Kind, from_json};
use crate::raw::wasmop::reconciler::cache as raw;

/// The host's informer cache; get one with [`cache()`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Cache {
    _private: (),
}

/// The host's informer cache.
pub fn cache() -> Cache {
    Cache::default()
}

/// Filters for [`Cache::list`]; they combine with AND.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Only objects in this namespace; all namespaces when `None`.
    pub namespace: Option<String>,
    /// A label selector in Kubernetes syntax, e.g. `app=web,tier!=db`.
    pub label_selector: Option<String>,
    /// A field selector, e.g. `metadata.name=foo`.
    pub field_selector: Option<String>,
}

impl ListOptions {
    /// Only objects in `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only objects matching the label selector.
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects matching the field selector.
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }
}

impl Cache {
    /// Gets one object; `namespace` is empty for cluster-scoped kinds. Missing: [`Error::NotFound`]
    /// (see [`OptionalExt::optional`](crate::OptionalExt::optional)).
    pub fn get<K: Kind + DeserializeOwned>(&self, namespace: &str, name: &str) -> Result<K, Error> {
        from_json(&raw::get(&K::gvk(), namespace, name)?)
    }

    /// Lists the objects of kind `K` that match `options`.
    pub fn list<K: Kind + DeserializeOwned>(&self, options: ListOptions) -> Result<Vec<K>, Error> {
        let options = raw::ListOptions {
            namespace: options.namespace,
            label_selector: options.label_selector,
            field_selector: options.field_selector,
        };
        parse_all(raw::list(&K::gvk(), &options)?)
    }

    /// Lists the objects of kind `K` whose value for the declared field index `index` is `value`.
    pub fn list_by_index<K: Kind + DeserializeOwned>(
        &self,
        index: &str,
        value: &str,
    ) -> Result<Vec<K>, Error> {
        parse_all(raw::list_by_index(&K::gvk(), index, value)?)
    }
}

fn parse_all<K: Kind + DeserializeOwned>(texts: Vec<String>) -> Result<Vec<K>, Error> {
    texts.iter().map(|text| from_json(text)).collect()
}
