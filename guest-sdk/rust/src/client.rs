//! Typed writes to the apiserver. The host checks every call against the plugin's declared
//! permissions; successful writes return the object as the apiserver stored it.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;
use crate::kind::{Kind, Object, ObjectKey, from_json, to_json};
use crate::raw::wasmop::reconciler::client as raw;
pub use crate::raw::wasmop::reconciler::client::Propagation;

/// The apiserver, through the host; get one with [`client()`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Client {
    _private: (),
}

/// The apiserver, through the host.
pub fn client() -> Client {
    Client::default()
}

/// Options of [`Client::delete_with`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Only delete the object with this UID.
    pub uid: Option<String>,
    /// Only delete the object at this resourceVersion.
    pub resource_version: Option<String>,
    /// What happens to the object's dependents.
    pub propagation: Option<Propagation>,
}

impl Client {
    /// Creates an object; its namespace and kind come from the object itself.
    pub fn create<K: Kind + Serialize + DeserializeOwned>(&self, obj: &K) -> Result<K, Error> {
        from_json(&raw::create(&to_json(obj)?)?)
    }

    /// Replaces an object; its resourceVersion guards against lost updates ([`Error::Conflict`]).
    pub fn update<K: Kind + Serialize + DeserializeOwned>(&self, obj: &K) -> Result<K, Error> {
        from_json(&raw::update(&to_json(obj)?)?)
    }

    /// Replaces the status subresource of an object.
    pub fn update_status<K: Kind + Serialize + DeserializeOwned>(
        &self,
        obj: &K,
    ) -> Result<K, Error> {
        from_json(&raw::update_status(&to_json(obj)?)?)
    }

    /// Server-side applies `obj` (the fields this plugin owns) under the field manager
    /// `wasmop/<plugin>`; `force` takes fields other managers own instead of conflicting.
    pub fn apply<K: Object>(&self, obj: &K, force: bool) -> Result<K, Error> {
        let key = ObjectKey::of(obj);
        let body = raw::PatchBody::Apply(raw::ApplyPatch {
            object: to_json(obj)?,
            force,
        });
        from_json(&raw::patch(&K::gvk(), &key.namespace, &key.name, &body)?)
    }

    /// Applies a JSON merge patch (RFC 7386) to the object `namespace/name`.
    pub fn patch_merge<K: Kind + DeserializeOwned>(
        &self,
        namespace: &str,
        name: &str,
        patch: &impl Serialize,
    ) -> Result<K, Error> {
        let body = raw::PatchBody::Merge(patch_text::<K>(patch)?);
        from_json(&raw::patch(&K::gvk(), namespace, name, &body)?)
    }

    /// Applies a JSON patch (RFC 6902, an array of operations) to the object `namespace/name`.
    pub fn patch_json<K: Kind + DeserializeOwned>(
        &self,
        namespace: &str,
        name: &str,
        operations: &impl Serialize,
    ) -> Result<K, Error> {
        let body = raw::PatchBody::Json(patch_text::<K>(operations)?);
        from_json(&raw::patch(&K::gvk(), namespace, name, &body)?)
    }

    /// Applies a JSON merge patch to the status subresource of the object `namespace/name`.
    pub fn patch_status_merge<K: Kind + DeserializeOwned>(
        &self,
        namespace: &str,
        name: &str,
        patch: &impl Serialize,
    ) -> Result<K, Error> {
        let body = raw::PatchBody::Merge(patch_text::<K>(patch)?);
        from_json(&raw::patch_status(&K::gvk(), namespace, name, &body)?)
    }

    /// Server-side applies the status of `obj` (the status fields this plugin owns).
    pub fn apply_status<K: Object>(&self, obj: &K, force: bool) -> Result<K, Error> {
        let key = ObjectKey::of(obj);
        let body = raw::PatchBody::Apply(raw::ApplyPatch {
            object: to_json(obj)?,
            force,
        });
        from_json(&raw::patch_status(
            &K::gvk(),
            &key.namespace,
            &key.name,
            &body,
        )?)
    }

    /// Deletes the object `namespace/name` with background propagation. Already gone:
    /// [`Error::NotFound`].
    pub fn delete<K: Kind>(&self, namespace: &str, name: &str) -> Result<(), Error> {
        self.delete_with::<K>(namespace, name, DeleteOptions::default())
    }

    /// Deletes the object `namespace/name` with preconditions and a propagation policy.
    pub fn delete_with<K: Kind>(
        &self,
        namespace: &str,
        name: &str,
        options: DeleteOptions,
    ) -> Result<(), Error> {
        let preconditions = (options.uid.is_some() || options.resource_version.is_some())
            .then_some(raw::Preconditions {
                uid: options.uid,
                resource_version: options.resource_version,
            });
        let options = raw::DeleteOptions {
            preconditions,
            propagation: options.propagation,
        };
        Ok(raw::delete(&K::gvk(), namespace, name, &options)?)
    }
}

fn patch_text<K: Kind>(patch: &impl Serialize) -> Result<String, Error> {
    serde_json::to_string(patch).map_err(|source| Error::Serialize {
        kind: K::gvk(),
        source,
    })
}
