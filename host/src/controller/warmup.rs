//! Warm standby (controller-runtime's `EnableWarmup`): a replica whose controllers do not run yet
//! — it waits to lead, or for its member Lease — starts and syncs the informers every loaded
//! plugin's controller will read, in the views it will read them, so that a takeover reconciles
//! from a warm cache instead of listing everything first.
//!
//! The informers follow the loaded plugins: a plugin loaded later is warmed too, one unloaded lets
//! its informers go. Controllers that start share the same informers through the cache.

use std::collections::HashMap;
use std::sync::Arc;

use crate::cache::{Cache, Informer, View};
use crate::controller::sources::{informed_kinds, view_of};
use crate::runtime::Live;
use wasmop_contract::object::GroupVersionKind;

/// Keeps the informers of every plugin in `live` running in `cache` until dropped.
pub async fn warm(cache: Arc<Cache>, mut live: Live) {
    let mut held: HashMap<(GroupVersionKind, View), Arc<Informer>> = HashMap::new();
    loop {
        let plugins = live.borrow_and_update().clone();
        let wanted: Vec<(GroupVersionKind, View)> = plugins
            .values()
            .flat_map(|plugin| {
                let registration = plugin.registration();
                informed_kinds(plugin).filter_map(|kind| match kind {
                    Ok(kind) => {
                        let view = view_of(registration, &kind);
                        Some((kind, view))
                    }
                    Err(error) => {
                        tracing::warn!(
                            "warm standby leaves out a kind of {}: {error}",
                            plugin.name()
                        );
                        None
                    }
                })
            })
            .collect();
        held.retain(|key, _| wanted.contains(key));
        for (kind, view) in wanted {
            if held.contains_key(&(kind.clone(), view)) {
                continue;
            }
            match cache.informer_in(&kind, view).await {
                Ok(informer) => {
                    tracing::info!(kind = %kind.kind, ?view, "warm standby: informing");
                    held.insert((kind, view), informer);
                }
                Err(error) => tracing::warn!("warm standby cannot inform {}: {error}", kind.kind),
            }
        }
        if live.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
