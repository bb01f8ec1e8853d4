//! A plugin's own event handlers (the `handlers` export of WIT 0.1.2) in the runtime: the kinds
//! it declares, the requests `handle` answers for an added, an updated and a deleted object, and
//! its floods and crafted keys refused with its name while it goes on answering. The guest is
//! built against a frozen WIT 0.1.2, so these tests also hold a plugin of that contract to today's
//! host. (On the real control plane:
//! `controllers::changes_a_plugin_handles_itself_reach_the_queue_as_it_says`.)

use crate::common;

use std::sync::Arc;

use common::{LIMIT, configmap, load, runtime};
use serde_json::{Value, json};
use wasmop::contract::object::{GroupVersionKind, ObjectKey};
use wasmop::runtime::{DispatchError, ObjectChange, PluginOptions};
use wasmop_envtest::within;

fn with_mode(name: &str, mode: &str, annotation: &str) -> Arc<str> {
    let mut object: Value = configmap("default", name);
    object["data"] = json!({"mode": mode});
    object["metadata"]["annotations"] = json!({"note": annotation});
    object.to_string().into()
}

fn keys(names: &[&str]) -> Vec<ObjectKey> {
    names
        .iter()
        .map(|name| ObjectKey::new("default", *name))
        .collect()
}

#[tokio::test]
async fn a_plugin_maps_each_change_of_a_kind_it_handles_as_its_handler_says() {
    within(LIMIT, "guest-handler's handle", async {
        let (plugin, _host) = load(&runtime(), "guest-handler", PluginOptions::default()).await;
        let configmaps = GroupVersionKind::gvk("", "v1", "ConfigMap");
        assert_eq!(
            plugin.registration().handled,
            std::slice::from_ref(&configmaps)
        );
        let handle = |change: ObjectChange| {
            let (plugin, kind) = (&plugin, &configmaps);
            async move {
                let key = ObjectKey::new("default", "any");
                plugin.handle(kind, &change, &key).await.expect("handled")
            }
        };
        let added = |name: &str| ObjectChange::Added(with_mode(name, "1", "a"));
        assert_eq!(handle(added("handled-a")).await, keys(&["handled-a"]));
        assert_eq!(
            handle(added("plain")).await,
            keys(&[]),
            "a create it filters out"
        );
        let (before, noted) = (
            with_mode("handled-a", "1", "a"),
            with_mode("handled-a", "1", "b"),
        );
        let annotated = ObjectChange::Updated(before.clone(), noted);
        assert_eq!(
            handle(annotated).await,
            keys(&[]),
            "an update that kept data.mode"
        );
        let switched = ObjectChange::Updated(before.clone(), with_mode("handled-a", "2", "a"));
        assert_eq!(handle(switched).await, keys(&["handled-a"]));
        let deleted = ObjectChange::Deleted(before);
        assert_eq!(
            handle(deleted).await,
            keys(&["ledger"]),
            "a deletion it maps elsewhere"
        );
    })
    .await
}

#[tokio::test]
async fn a_handlers_flood_or_crafted_keys_are_refused_with_the_plugins_name() {
    within(LIMIT, "guest-handler's attacks", async {
        let options = PluginOptions {
            home: Some("default".to_owned()),
            ..PluginOptions::default()
        };
        let (plugin, _host) = load(&runtime(), "guest-handler", options).await;
        let kind = GroupVersionKind::gvk("", "v1", "ConfigMap");
        for (name, refusal) in [
            (
                "flood",
                "handle returned 100000 keys, over the limit of 10000",
            ),
            ("crafted", "handle returned an invalid key"),
            ("stranger", "its WasmReconciler confines it to default"),
        ] {
            let change = ObjectChange::Added(with_mode(name, "1", "a"));
            let key = ObjectKey::new("default", name);
            let error = plugin.handle(&kind, &change, &key).await.unwrap_err();
            assert!(matches!(error, DispatchError::Trapped { .. }), "{error}");
            let message = error.to_string();
            assert!(
                message.contains("guest-handler") && message.contains(refusal),
                "{message}"
            );
        }
        let change = ObjectChange::Added(with_mode("handled-b", "1", "a"));
        let key = ObjectKey::new("default", "handled-b");
        let still = plugin
            .handle(&kind, &change, &key)
            .await
            .expect("it goes on answering");
        assert_eq!(still, keys(&["handled-b"]));
    })
    .await
}
