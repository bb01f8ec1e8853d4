//! A plugin's webhooks in the runtime: what it declares, the answers of `webapp`'s validate,
//! default and convert, a guest that loops in `validate` stopped at the webhook timeout, and
//! plugins without webhooks — built with the SDK, or against the WIT before webhooks — loading
//! and reconciling as before, and one built against the WIT before handlers serving its own;
//! then the reviews the apiserver sends, answered as it expects.

use crate::common;

use std::time::{Duration, Instant};

use common::{LIMIT, configmap, load, runtime};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use wasmop::contract::object::{GroupVersionKind, ObjectKey};
use wasmop::contract::{AdmissionRequest, Operation, Verdict};
use wasmop::runtime::{DispatchError, Outcome, PluginOptions, TrapKind};

use tokio::sync::watch;
use wasmop::http::{ConnectionLimits, SecureServing, Tls, listen};
use wasmop::metrics::Metrics;
use wasmop::webhook::{FailurePolicy, Hook, ReviewError, WebhookServer, admission, conversion};
use wasmop_envtest::within;

const GROUP: &str = "example.wasmop.dev";

fn webapp(version: &str, spec: Value) -> AdmissionRequest {
    let object = json!({
        "apiVersion": format!("{GROUP}/{version}"),
        "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": spec,
    });
    common::admission_create(
        GroupVersionKind::gvk(GROUP, version, "WebApp"),
        ObjectKey::new("default", "shop"),
        object,
    )
}

#[tokio::test]
async fn webapp_declares_its_webhooks_and_answers_them() {
    webapp_webhooks("webapp").await
}

#[tokio::test]
async fn the_python_webapp_answers_its_webhooks_as_the_rust_one_does() {
    webapp_webhooks("webapp-python").await
}

#[tokio::test]
async fn the_go_webapp_answers_its_webhooks_as_the_rust_one_does() {
    webapp_webhooks("webapp-go").await
}

#[tokio::test]
async fn the_typescript_webapp_answers_its_webhooks_as_the_rust_one_does() {
    webapp_webhooks("webapp-js").await
}

/// The controller-runtime webapp's validator, defaulter and hub-and-spoke conversion, built with
/// ctrl.NewWebhookManagedBy as its users write them.
#[tokio::test]
async fn the_controller_runtime_webapp_answers_its_webhooks_as_the_rust_one_does() {
    webapp_webhooks("webapp-controller-runtime-go").await
}

/// Component `name`, a build of `webapp`, declares and answers webapp's webhooks.
async fn webapp_webhooks(name: &str) {
    within(LIMIT, "webapp's webhooks", async {
        let runtime = runtime();
        let (plugin, _host) = load(&runtime, name, PluginOptions::default()).await;
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

/// A ConfigMap create named `name`, as guest-hostile's webhooks see it.
fn configmap_request(name: &str) -> AdmissionRequest {
    AdmissionRequest {
        kind: GroupVersionKind::gvk("", "v1", "ConfigMap"),
        key: ObjectKey::new("default", name),
        object: Some(configmap("default", name).to_string()),
        ..webapp("v1alpha1", json!({}))
    }
}

#[tokio::test]
async fn garbage_and_floods_from_a_hostile_plugin_are_refused_naming_it() {
    within(LIMIT, "hostile webhooks", async {
        let runtime = runtime();
        let (plugin, _host) = load(&runtime, "guest-hostile", PluginOptions::default()).await;
        fn failure<T>(result: Result<T, DispatchError>) -> String {
            let Err(error) = result else {
                panic!("garbage was accepted");
            };
            let message = error.to_string();
            assert!(message.contains("guest-hostile"), "{message}");
            message
        }
        let flood = failure(plugin.validate(&configmap_request("any")).await);
        assert!(
            flood.contains("too much data"),
            "a million aliased warnings: {flood}"
        );
        let expectations = [
            ("not-an-object", "not an object"),
            ("huge", "over the limit"),
            ("invalid", "invalid JSON"),
        ];
        for (name, expected) in expectations {
            let message = failure(plugin.default(&configmap_request(name)).await);
            assert!(message.contains(expected), "{name}: {message}");
        }
        let object = configmap("default", "x").to_string();
        let key = ObjectKey::new("default", "x");
        let undeclared = failure(plugin.convert(&key, &object, "example.wasmop.dev/v2").await);
        assert!(
            undeclared.contains("declared no conversion"),
            "a conversion it did not declare is not even asked for: {undeclared}"
        );
        let fine = plugin.default(&configmap_request("fine")).await;
        assert!(
            matches!(fine, Ok(Ok(_))),
            "the plugin still answers: {fine:?}"
        );
    })
    .await
}

/// A tenant who may create WasmReconcilers sets its plugin's `webhookTimeout` and
/// `webhookFailurePolicy`; the operator's ceiling bounds both, for plugins that serve webhooks.
#[tokio::test]
async fn webhook_settings_over_the_operators_ceiling_do_not_load() {
    within(LIMIT, "the webhook ceiling", async {
        let config = wasmop::runtime::RuntimeConfig {
            ceiling: wasmop::contract::Ceiling {
                max_webhook_timeout: Duration::from_secs(5),
                webhook_failure_policies: vec![FailurePolicy::Ignore],
                ..Default::default()
            },
            ..Default::default()
        };
        let runtime = wasmop::runtime::Runtime::new(config).unwrap();
        let host = wasmop::testing::MemoryHost::new();
        let load = |options: PluginOptions| {
            let runtime = &runtime;
            let host = host.clone();
            async move {
                let file = common::component("webapp");
                let loaded = runtime.load(&file, options, |_| host.services()).await;
                loaded.map_err(|error| error.to_string())
            }
        };
        let closed = load(PluginOptions::default()).await.err().unwrap();
        assert!(
            closed.contains("webapp") && closed.contains("failure policy Fail"),
            "{closed}"
        );
        let slow = PluginOptions {
            failure_policy: FailurePolicy::Ignore,
            webhook_timeout: Duration::from_secs(20),
            ..PluginOptions::default()
        };
        let slow = load(slow).await.err().unwrap();
        assert!(slow.contains("webhook timeout of 20s"), "{slow}");
        let fair = PluginOptions {
            failure_policy: FailurePolicy::Ignore,
            webhook_timeout: Duration::from_secs(5),
            ..PluginOptions::default()
        };
        let plugin = load(fair).await.expect("within the ceiling");
        assert_eq!(plugin.failure_policy(), FailurePolicy::Ignore);
        let file = common::component("guest-good");
        let quiet = runtime.load(&file, PluginOptions::default(), |_| host.services());
        quiet
            .await
            .expect("a plugin without webhooks is not held to them");
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

/// A component of the WIT before handlers (0.1.1) exports `webhooks@0.1.1`: today's host
/// finds and calls it, and maps its changes itself.
#[tokio::test]
async fn a_plugin_built_against_wit_0_1_1_serves_its_webhooks_as_before() {
    within(LIMIT, "a 0.1.1 plugin's webhooks", async {
        let (old, _host) = load(&runtime(), "guest-wit011", PluginOptions::default()).await;
        assert!(old.registration().handled.is_empty());
        let configmaps = GroupVersionKind::gvk("", "v1", "ConfigMap");
        let declared = old.webhooks().expect("its webhooks@0.1.1 export is found");
        assert_eq!(declared.validate[0].kind, configmaps);
        let create = |name: &str| {
            let key = ObjectKey::new("default", name);
            common::admission_create(configmaps.clone(), key, configmap("default", name))
        };
        let kept = old.validate(&create("kept")).await.unwrap();
        assert_eq!(kept, Verdict::Allowed(vec![]));
        let Verdict::Denied(denial) = old.validate(&create("refused")).await.unwrap() else {
            panic!("a create named refused is refused");
        };
        assert_eq!(denial.message, "refused by guest-wit011");
    })
    .await
}

/// An AdmissionReview as the apiserver posts it for a create of `object`.
fn review(kind: (&str, &str, &str), object: Value) -> Vec<u8> {
    let (group, version, kind) = kind;
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0df28fbd-5f5f-11e8-bc74-36e6bb280816",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": "webapps"},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": group, "version": version, "resource": "webapps"},
            "name": "shop",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "alice", "uid": "1", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    })
    .to_string()
    .into_bytes()
}

fn webapp_object(spec: Value) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1alpha1"),
        "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": spec,
    })
}

fn response(answer: &[u8]) -> Value {
    let review: Value = serde_json::from_slice(answer).unwrap();
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(
        review["response"]["uid"],
        "0df28fbd-5f5f-11e8-bc74-36e6bb280816"
    );
    review["response"].clone()
}

#[tokio::test]
async fn admission_reviews_are_answered_with_the_verdict_and_the_defaults_as_a_patch() {
    within(LIMIT, "admission reviews", async {
        let runtime = runtime();
        let (plugin, _host) = load(&runtime, "webapp", PluginOptions::default()).await;
        let kind = (GROUP, "v1alpha1", "WebApp");

        let crowded = review(
            kind,
            webapp_object(json!({"image": "nginx", "replicas": 99})),
        );
        let answer = admission(&plugin, Hook::Validate, FailurePolicy::Fail, &crowded).await;
        let answer = response(&answer.unwrap().json);
        assert_eq!(answer["allowed"], false);
        let message = answer["status"]["message"].as_str().unwrap();
        assert!(
            message.contains("spec.replicas must be between 0 and 50"),
            "{message}"
        );

        let portless = review(kind, webapp_object(json!({"image": "nginx"})));
        let answer = admission(&plugin, Hook::Validate, FailurePolicy::Fail, &portless).await;
        assert_eq!(response(&answer.unwrap().json)["allowed"], true);
        let answer = admission(&plugin, Hook::Default, FailurePolicy::Fail, &portless).await;
        let answer = response(&answer.unwrap().json);
        assert_eq!(answer["allowed"], true);
        assert_eq!(answer["patchType"], "JSONPatch");
        let patch: Vec<u8> = serde_json::from_value(answer["patch"].clone()).unwrap();
        let patch: Value = serde_json::from_slice(&patch).unwrap();
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/spec/port", "value": 8080}])
        );

        let ported = review(kind, webapp_object(json!({"image": "nginx", "port": 9090})));
        let answer = admission(&plugin, Hook::Default, FailurePolicy::Fail, &ported).await;
        let answer = response(&answer.unwrap().json);
        assert!(
            answer.get("patch").is_none(),
            "nothing to default: {answer}"
        );
    })
    .await
}

#[tokio::test]
async fn a_failing_plugin_gets_the_answer_of_its_failure_policy() {
    within(LIMIT, "failure policies", async {
        let runtime = runtime();
        let options = PluginOptions {
            webhook_timeout: Duration::from_millis(300),
            ..PluginOptions::default()
        };
        let (plugin, _host) = load(&runtime, "guest-spin", options).await;
        let body = review(("", "v1", "ConfigMap"), configmap("default", "shop"));

        let answer = admission(&plugin, Hook::Validate, FailurePolicy::Fail, &body).await;
        let answer = answer.unwrap();
        assert!(
            answer.outcome.plugin_failed,
            "the timeout is the plugin's failure"
        );
        let answer = response(&answer.json);
        assert_eq!(answer["allowed"], false);
        let message = answer["status"]["message"].as_str().unwrap();
        assert!(
            message.contains("guest-spin") && message.contains("timeout"),
            "{message}"
        );

        let answer = admission(&plugin, Hook::Validate, FailurePolicy::Ignore, &body).await;
        let answer = response(&answer.unwrap().json);
        assert_eq!(answer["allowed"], true);
        let warning = answer["warnings"][0].as_str().unwrap();
        assert!(
            warning.contains("failurePolicy Ignore") && warning.contains("guest-spin"),
            "{warning}"
        );

        let garbage = admission(
            &plugin,
            Hook::Validate,
            FailurePolicy::Fail,
            b"{\"kind\": 7}",
        )
        .await;
        assert!(
            matches!(garbage, Err(ReviewError::Malformed { .. })),
            "{garbage:?}"
        );
        let huge = vec![b' '; wasmop::webhook::review::MAX_BODY + 1];
        let huge = admission(&plugin, Hook::Validate, FailurePolicy::Fail, &huge).await;
        assert!(matches!(huge, Err(ReviewError::TooLarge(_))), "{huge:?}");
    })
    .await
}

#[tokio::test]
async fn conversion_reviews_convert_every_object_or_fail_as_a_whole() {
    within(LIMIT, "conversion reviews", async {
        let runtime = runtime();
        let (plugin, _host) = load(&runtime, "webapp", PluginOptions::default()).await;
        let body = |desired: &str| {
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "ConversionReview",
                "request": {
                    "uid": "c0ffee",
                    "desiredAPIVersion": desired,
                    "objects": [
                        webapp_object(json!({"image": "nginx", "replicas": 2})),
                        webapp_object(json!({"image": "httpd", "replicas": 5})),
                    ]
                }
            })
            .to_string()
            .into_bytes()
        };
        let answer = conversion(&plugin, &body(&format!("{GROUP}/v1beta1")))
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&answer.json).unwrap();
        let response = &answer["response"];
        assert_eq!(response["uid"], "c0ffee");
        assert_eq!(response["result"]["status"], "Success");
        let converted = response["convertedObjects"].as_array().unwrap();
        assert_eq!(converted.len(), 2);
        assert_eq!(converted[1]["apiVersion"], format!("{GROUP}/v1beta1"));
        assert_eq!(converted[1]["spec"]["instances"], 5);

        let answer = conversion(&plugin, &body(&format!("{GROUP}/v7")))
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&answer.json).unwrap();
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        assert!(
            answer["response"]["convertedObjects"]
                .as_array()
                .is_none_or(Vec::is_empty)
        );
    })
    .await
}

/// `POST path` with `body` over HTTPS to `address`, trusting only `tls`'s certificate: the
/// status and body.
async fn post(
    address: std::net::SocketAddr,
    tls: &Tls,
    path: &str,
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    use http_body_util::{BodyExt, Full};
    use tokio_rustls::rustls::pki_types::ServerName;
    use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::ring};

    let mut roots = RootCertStore::empty();
    roots.add(tls.certificate()).unwrap();
    let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await
        .unwrap();
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::post(path)
        .header(hyper::header::HOST, "localhost")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(hyper::body::Bytes::from(body)))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    (
        status,
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
}

#[tokio::test]
async fn the_webhook_listener_answers_over_https_with_the_plugin_loaded_now() {
    within(LIMIT, "the webhook listener", async {
        let runtime = runtime();
        let (webapp, _host) = load(&runtime, "webapp", PluginOptions::default()).await;
        let (good, _good_host) = load(&runtime, "guest-good", PluginOptions::default()).await;
        let loaded = BTreeMap::from([
            ("webapp".to_owned(), Arc::new(webapp)),
            ("guest-good".to_owned(), Arc::new(good)),
        ]);
        let (publish, plugins) = watch::channel(Arc::new(loaded));
        let tls = Tls::load(&SecureServing::default()).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let metrics = Arc::new(Metrics::new());
        let server = Arc::new(WebhookServer::new(plugins, metrics.clone(), None));
        let served = tokio::spawn(listen(
            listener,
            server,
            Some(tls.clone()),
            ConnectionLimits::default(),
        ));

        let kind = (GROUP, "v1alpha1", "WebApp");
        let crowded = review(
            kind,
            webapp_object(json!({"image": "nginx", "replicas": 99})),
        );
        let (status, body) = post(address, &tls, "/validate/webapp", crowded.clone()).await;
        assert_eq!(status, 200);
        assert_eq!(response(&body)["allowed"], false);

        let (status, _) = post(address, &tls, "/validate/guest-good", crowded.clone()).await;
        assert_eq!(status, 404, "guest-good serves no webhooks");
        let (status, _) = post(address, &tls, "/validate/nobody", crowded.clone()).await;
        assert_eq!(status, 404);
        let (status, _) = post(address, &tls, "/mutate/webapp", crowded.clone()).await;
        assert_eq!(status, 404);
        let (status, _) = post(address, &tls, "/validate/webapp", b"[]".to_vec()).await;
        assert_eq!(status, 400);
        let huge = vec![b' '; wasmop::webhook::review::MAX_BODY + 1];
        let (status, _) = post(address, &tls, "/validate/webapp", huge).await;
        assert_eq!(status, 413);
        let counted = metrics.gather();
        for code in [200, 400, 413] {
            let line = format!(
                "controller_runtime_webhook_requests_total{{code=\"{code}\",webhook=\"/validate/webapp\"}} 1"
            );
            assert!(counted.contains(&line), "{line} in\n{counted}");
        }
        assert!(
            counted.contains(
                "controller_runtime_webhook_requests_in_flight{webhook=\"/validate/webapp\"} 0"
            ),
            "{counted}"
        );
        assert!(
            !counted.contains("webhook=\"/validate/guest-good\""),
            "a route no plugin serves is not counted"
        );

        publish.send_modify(|loaded| {
            let mut now = (**loaded).clone();
            now.remove("webapp");
            *loaded = Arc::new(now);
        });
        let (status, _) = post(address, &tls, "/validate/webapp", crowded).await;
        assert_eq!(status, 404, "an unloaded plugin answers no more");
        served.abort();
    })
    .await
}
