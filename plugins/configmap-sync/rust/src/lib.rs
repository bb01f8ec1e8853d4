//! The `configmap-sync` plugin: every ConfigMap labelled `configmap-sync.wasmop.dev/source=true`
//! is copied, with the same name and data, into every namespace labelled
//! `configmap-sync.wasmop.dev/target=true` other than its own. Copies carry two labels naming
//! their source; they are updated when they drift and deleted when their source or their
//! namespace stops taking part. A converged cluster is reconciled without a single write.
//!
//! Every ConfigMap event reconciles that ConfigMap: a source syncs all its copies, a copy syncs
//! itself from its source, and anything else (or nothing) deletes copies made from that key and
//! restores a deleted copy. Namespace events map to every source.

mod copies;

use wasmop_guest::k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use wasmop_guest::{
    Error, Gvk, ListOptions, Mapping, ObjectKey, OptionalExt, Outcome, ReconcileError, Reconciler,
    Registration, Request, Verb, cache, client,
};

use copies::{SOURCE_SELECTOR, copy, copy_selector, data_matches, is_source, is_target, source_of};

/// The `configmap-sync` reconciler.
pub struct ConfigMapSync;

wasmop_guest::export_reconciler!(ConfigMapSync);

impl Reconciler for ConfigMapSync {
    fn describe() -> Registration {
        use Verb::{Create, Delete, Get, List, Update};
        Registration::new::<ConfigMap>("configmap-sync", env!("CARGO_PKG_VERSION"))
            .watches::<Namespace>(Mapping::Guest)
            .permit::<ConfigMap>(&[Get, List, Create, Update, Delete])
            .permit::<Namespace>(&[Get, List])
    }

    fn reconcile(req: Request) -> Result<Outcome, ReconcileError> {
        let configmap = cache()
            .get::<ConfigMap>(&req.namespace, &req.name)
            .optional()?;
        match configmap {
            Some(source) if is_source(&source) => sync_source(&source)?,
            Some(copy) if source_of(&copy).is_some() => sync_copy(copy)?,
            configmap => {
                delete_copies(&req, |_| true)?;
                if configmap.is_none() {
                    restore_copy(&req)?;
                }
            }
        }
        Ok(Outcome::Done)
    }

    fn map(kind: &Gvk, _object: &str) -> Vec<ObjectKey> {
        if !kind.is::<Namespace>() {
            return Vec::new();
        }
        match sources() {
            Ok(sources) => sources.iter().map(ObjectKey::of).collect(),
            Err(e) => {
                wasmop_guest::error!("cannot list source ConfigMaps: {e}");
                Vec::new()
            }
        }
    }
}

fn sources() -> Result<Vec<ConfigMap>, Error> {
    cache().list(ListOptions::default().labels(SOURCE_SELECTOR))
}

/// The namespaces a copy of a source in `source_namespace` belongs in.
fn target_namespaces(source_namespace: &str) -> Result<Vec<String>, Error> {
    let namespaces = cache().list::<Namespace>(ListOptions::default())?;
    Ok(namespaces
        .iter()
        .filter(|ns| is_target(ns))
        .filter_map(|ns| ns.metadata.name.clone())
        .filter(|name| name != source_namespace)
        .collect())
}

fn is_target_namespace(namespace: &str) -> Result<bool, Error> {
    Ok(cache()
        .get::<Namespace>("", namespace)
        .optional()?
        .is_some_and(|ns| is_target(&ns)))
}

/// Creates or updates the copies of `source` in every target namespace; deletes the others.
fn sync_source(source: &ConfigMap) -> Result<(), Error> {
    let key = ObjectKey::of(source);
    let targets = target_namespaces(&key.namespace)?;
    for namespace in &targets {
        let existing = cache().get::<ConfigMap>(namespace, &key.name).optional()?;
        match existing {
            None => create_copy(source, namespace)?,
            Some(existing) if source_of(&existing).as_ref() == Some(&key) => {
                update_copy(existing, source)?;
            }
            Some(_) => wasmop_guest::warn!(
                "not copying {key} into {namespace}: a ConfigMap of that name is not its copy"
            ),
        }
    }
    delete_copies(&key, |namespace| !targets.iter().any(|t| t == namespace))
}

/// Keeps a copy in line with its source, or deletes it when it no longer belongs.
fn sync_copy(copy: ConfigMap) -> Result<(), Error> {
    let key = ObjectKey::of(&copy);
    let Some(source_key) = source_of(&copy) else {
        return Ok(());
    };
    let source = cache()
        .get::<ConfigMap>(&source_key.namespace, &source_key.name)
        .optional()?
        .filter(is_source);
    let belongs = source_key.namespace != key.namespace && is_target_namespace(&key.namespace)?;
    match source {
        Some(source) if belongs => update_copy(copy, &source),
        _ => delete(&key),
    }
}

/// Recreates a deleted copy at `key` from the source of that name that targets its namespace.
fn restore_copy(key: &ObjectKey) -> Result<(), Error> {
    if !is_target_namespace(&key.namespace)? {
        return Ok(());
    }
    let source = sources()?.into_iter().find(|s| {
        s.metadata.name.as_ref() == Some(&key.name)
            && s.metadata.namespace.as_ref() != Some(&key.namespace)
    });
    match source {
        Some(source) => create_copy(&source, &key.namespace),
        None => Ok(()),
    }
}

/// Deletes the copies of the source `source` whose namespace `doomed` picks.
fn delete_copies(source: &ObjectKey, doomed: impl Fn(&str) -> bool) -> Result<(), Error> {
    let copies = cache().list::<ConfigMap>(ListOptions::default().labels(copy_selector(source)))?;
    for copy in &copies {
        let key = ObjectKey::of(copy);
        if doomed(&key.namespace) {
            delete(&key)?;
        }
    }
    Ok(())
}

fn create_copy(source: &ConfigMap, namespace: &str) -> Result<(), Error> {
    match client().create(&copy(source, namespace)) {
        Ok(_) => {
            wasmop_guest::info!("copied {} into {namespace}", ObjectKey::of(source));
            Ok(())
        }
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}

fn update_copy(mut copy: ConfigMap, source: &ConfigMap) -> Result<(), Error> {
    if data_matches(&copy, source) {
        return Ok(());
    }
    copy.data.clone_from(&source.data);
    copy.binary_data.clone_from(&source.binary_data);
    client().update(&copy)?;
    wasmop_guest::info!("updated copy {}", ObjectKey::of(&copy));
    Ok(())
}

fn delete(key: &ObjectKey) -> Result<(), Error> {
    client()
        .delete::<ConfigMap>(&key.namespace, &key.name)
        .optional()?;
    wasmop_guest::info!("deleted copy {key}");
    Ok(())
}
