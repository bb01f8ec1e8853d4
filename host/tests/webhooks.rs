//! A plugin's webhooks in the runtime: what it declares, the answers of `webapp`'s validate,
//! default and convert, a guest that loops in `validate` stopped at the webhook timeout, and
//! plugins without webhooks — built with the SDK, or against the WIT before webhooks — loading
//! and reconciling as before.

mod common;

use std::time::{Duration, Instant};

use common::{LIMIT, configmap, load, runtime};
use serde_json::{Value, json};
use wasmop::object::{GroupVersionKind, ObjectKey};
use wasmop::runtime::{
    AdmissionRequest, DispatchError, Operation, Outcome, PluginOptions, TrapKind, UserInfo, Verdict,
};
use wasmop_envtest::within;

const GROUP: &str = "example.wasmop.dev";

fn webapp(version: &str, spec: Value) -> AdmissionRequest {
    let object = json!({
        "apiVersion": format!("{GROUP}/{version}"),
        "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": spec,
    });
    AdmissionRequest {
        uid: "705ab4f5-6393-11e8-b7cc-42010a800002".into(),
        kind: GroupVersionKind::gvk(GROUP, version, "WebApp"),
        key: ObjectKey::new("default", "shop"),
        operation: Operation::Create,
        object: Some(object.to_string()),
        old_object: None,
        user: UserInfo {
            username: "alice".into(),
            uid: "1".into(),
            groups: vec!["system:authenticated".into()],
        },
        dry_run: false,
    }
}

#[tokio::test]
async fn webapp_declares_its_webhooks_and_answers_them() {
    within(LIMIT, "webapp's webhooks", async {
        let runtime = runtime();
        let (plugin, _host) = load(&runtime, "webapp", PluginOptions::default()).await;
        let declared = plugin.webhooks().expect("webapp serves webhooks");
        let webapp_kind = GroupVersionKind::gvk(GROUP, "v1alpha1", "WebApp");
        assert_eq!(declared.validate[0].kind, webapp_kind);
        assert_eq!(
            declared.validate[0].operations,
            [Operation::Create, Operation::Update]
        );
        assert_eq!(declared.default[0].kind, webapp_kind);
        assert_eq!(declared.convert, [webapp_kind]);

        let fine = webapp("v1alpha1", json!({"image": "nginx:1.27", "replicas": 3}));
        assert_eq!(
            plugin.validate(&fine).await.unwrap(),
            Verdict::Allowed(vec![])
        );
        let crowded = webapp("v1alpha1", json!({"image": "nginx", "replicas": 51}));
        let Verdict::Denied(denial) = plugin.validate(&crowded).await.unwrap() else {
            panic!("51 replicas admitted");
        };
        assert!(
            denial
                .message
                .contains("spec.replicas must be between 0 and 50"),
            "{}",
            denial.message
        );

        let defaulted = plugin.default(&fine).await.unwrap().expect("defaulted");
        let defaulted: Value = serde_json::from_str(&defaulted).unwrap();
        assert_eq!(defaulted["spec"]["port"], 8080);

        let beta = plugin
            .convert(
                &fine.key,
                fine.object.as_deref().unwrap(),
                &format!("{GROUP}/v1beta1"),
            )
            .await
            .unwrap()
            .expect("converted");
        let beta: Value = serde_json::from_str(&beta).unwrap();
        assert_eq!(beta["spec"]["instances"], 3);
        let refused = plugin
            .convert(
                &fine.key,
                fine.object.as_deref().unwrap(),
                &format!("{GROUP}/v9"),
            )
            .await
            .unwrap();
        assert!(refused.is_err(), "{refused:?}");
    })
    .await
}

#[tokio::test]
async fn a_validate_that_loops_is_stopped_at_the_webhook_timeout() {
    within(LIMIT, "a looping validate", async {
        let runtime = runtime();
        let options = PluginOptions {
            webhook_timeout: Duration::from_millis(300),
            ..PluginOptions::default()
        };
        let (plugin, _host) = load(&runtime, "guest-spin", options).await;
        assert!(plugin.webhooks().is_some(), "guest-spin declares validate");
        let mut request = webapp("v1alpha1", json!({}));
        request.kind = GroupVersionKind::gvk("", "v1", "ConfigMap");
        for _ in 0..2 {
            let started = Instant::now();
            let error = plugin
                .validate(&request)
                .await
                .expect_err("it never returns");
            let DispatchError::Trapped {
                kind, plugin: name, ..
            } = &error
            else {
                panic!("{error}");
            };
            assert_eq!(*kind, TrapKind::Timeout, "{error}");
            assert_eq!(name, "guest-spin");
            assert!(started.elapsed() < Duration::from_secs(30), "{error}");
        }
    })
    .await
}

#[tokio::test]
async fn plugins_without_webhooks_load_and_reconcile_as_before() {
    within(LIMIT, "plugins without webhooks", async {
        let runtime = runtime();
        let (good, _host) = load(&runtime, "guest-good", PluginOptions::default()).await;
        assert!(
            good.webhooks().is_none(),
            "an SDK plugin that declares none"
        );
        let error = good
            .validate(&webapp("v1alpha1", json!({})))
            .await
            .expect_err("nothing to call");
        assert!(error.to_string().contains("serves no webhooks"), "{error}");

        let (old, host) = load(&runtime, "guest-wit010", PluginOptions::default()).await;
        assert_eq!(old.name(), "guest-wit010");
        assert!(old.webhooks().is_none(), "built before webhooks existed");
        host.insert(configmap("default", "settings"));
        let outcome = old
            .reconcile(&ObjectKey::new("default", "settings"))
            .await
            .expect("a 0.1.0 plugin reconciles");
        assert_eq!(outcome, Outcome::Done);
    })
    .await
}
