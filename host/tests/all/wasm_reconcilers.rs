//! `WasmReconciler` objects driving the `wasmop` binary on the real control plane: one loads its
//! plugin from a ConfigMap and reports Ready; pointing it at a module for WIT 2.0.0, or at one
//! that does not match its pin, keeps the running version and reports Degraded, and `wasmop
//! plugins` shows why beside that version; a URL whose digest does not match is refused; spec
//! overrides reach the controller; pausing unloads the plugin and unpausing loads it again;
//! deleting the object unloads the plugin and stops the informer only it used.

use crate::common;

use common::scrape::{free_address, get, parse, value};

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use wasmop::distribution::digest;
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(240);

/// The row of plugin `name` in `wasmop plugins`' table, from the host serving `/plugins` at
/// `address`.
async fn plugins_row(address: &str, name: &str) -> anyhow::Result<String> {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .args(["plugins", "--address", address])
        .output()
        .await?;
    let table = String::from_utf8(output.stdout)?;
    let row = table
        .lines()
        .find(|line| line.starts_with(&format!("{name} ")));
    row.map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("no row for {name}:\n{table}"))
}

#[tokio::test]
async fn wasm_reconcilers_load_report_refuse_and_unload() -> anyhow::Result<()> {
    within(LIMIT, "WasmReconcilers", async {
        let plane = &shared_by(module_path!()).await?;
        let crd = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/clusterwasmreconciler.yaml");
        plane.install_crds(&[crd]).await?;
        let client = plane.client().await?;
        let modules = plane.create_namespace("wr-modules").await?;
        let work = plane.create_namespace("wr-work").await?;
        common::reconcilers::store_module(plane, &modules, "guest-good").await?;
        common::reconcilers::store_module(plane, &modules, "guest-wit2").await?;
        let metrics = free_address();
        // Modules come from the test's namespace and from loopback servers, which the host
        // refuses unless its policy names them.
        let policy = plane.dir().join(format!("{modules}-policy.yaml"));
        let allowed = format!("modules: {{namespaces: [{modules}], private-addresses: true}}\n");
        std::fs::write(&policy, allowed)?;
        let _host = common::host(plane)
            .args(["--wasm-reconcilers", "--namespaces", &work])
            .arg("--policy")
            .arg(&policy)
            .args(["--metrics-bind-address", &metrics, "--health-probe-bind-address", "0"])
            .spawn()?;

        let api = common::reconcilers::api(client.clone());
        let pin = |component: &str| -> anyhow::Result<String> {
            let bytes = std::fs::read(common::component(component))?;
            Ok(digest(&bytes).trim_start_matches("sha256:").to_owned())
        };
        let module = |component: &str| json!({"configMap": {"namespace": modules, "name": component, "key": "module.wasm"}, "sha256": pin(component).unwrap()});
        // A server that accepts and never answers: its module's download hangs until its timeout,
        // and must not hold up another WasmReconciler.
        let stalled_server = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let stalled_url = format!("http://{}/module.wasm", stalled_server.local_addr()?);
        let _held = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((connection, _)) = stalled_server.accept().await {
                held.push(connection);
            }
        });
        let stalled: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
            "metadata": {"name": "stalled"}, "spec": {"module": {"url": stalled_url, "sha256": pin("guest-good")?}},
        }))?;
        api.create(&PostParams::default(), &stalled).await?;
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
            "metadata": {"name": "good"}, "spec": {"module": module("guest-good")},
        }))?;
        api.create(&PostParams::default(), &object).await?;
        let status = common::reconcilers::status_until(&api, "good", |s| common::reconcilers::condition(s, "Ready")["status"] == "True").await?;
        println!("loaded: {status}");
        let stalled = api.get("stalled").await?;
        assert!(stalled.data["status"].is_null(), "good waited for the stalled download: {:?}", stalled.data["status"]);
        api.delete("stalled", &Default::default()).await?;
        assert_eq!(status["name"], "guest-good");
        assert_eq!(status["version"], "0.1.0");
        assert_eq!(status["observedGeneration"], 1);
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &work);
        common::seen_by_good(&configmaps, "first").await?;

        let wit2 = json!({"spec": {"module": module("guest-wit2")}});
        api.patch("good", &PatchParams::default(), &Patch::Merge(&wit2)).await?;
        let status = common::reconcilers::status_until(&api, "good", |s| common::reconcilers::condition(s, "Degraded")["status"] == "True").await?;
        println!("refused: {status}");
        let degraded = common::reconcilers::condition(&status, "Degraded");
        assert_eq!(degraded["reason"], "LoadFailed");
        assert!(degraded["message"].as_str().unwrap().contains("wasmop:reconciler@2.0.0"), "{degraded}");
        assert_eq!(common::reconcilers::condition(&status, "Loaded")["status"], "True");
        assert_eq!(status["version"], "0.1.0", "the running version stays");
        common::seen_by_good(&configmaps, "second").await?;

        // A new version whose module does not match its pin: `wasmop plugins` says why beside
        // the version still running.
        let mut mismatched = module("guest-good");
        mismatched["sha256"] = json!(digest(b"another module").trim_start_matches("sha256:"));
        let mismatched = json!({"spec": {"module": mismatched}});
        api.patch("good", &PatchParams::default(), &Patch::Merge(&mismatched)).await?;
        let status = common::reconcilers::status_until(&api, "good", |s| common::reconcilers::condition(s, "Degraded")["reason"] == "DigestMismatch").await?;
        assert_eq!(status["version"], "0.1.0", "the running version stays");
        let row = plugins_row(&metrics, "guest-good").await?;
        println!("wasmop plugins: {row}");
        assert!(row.contains("0.1.0") && row.contains("running"), "{row}");
        assert!(row.contains("DigestMismatch: the module does not match spec.module.sha256"), "{row}");

        let bytes = std::fs::read(common::component("guest-good"))?;
        let wrong = digest(b"not the module").trim_start_matches("sha256:").to_owned();
        assert_ne!(wrong, digest(&bytes));
        let pinned: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
            "metadata": {"name": "pinned"},
            "spec": {"module": {"url": format!("http://{metrics}/metrics"), "sha256": wrong}},
        }))?;
        api.create(&PostParams::default(), &pinned).await?;
        let status = common::reconcilers::status_until(&api, "pinned", |s| common::reconcilers::condition(s, "Degraded")["status"] == "True").await?;
        println!("digest mismatch: {status}");
        assert_eq!(common::reconcilers::condition(&status, "Degraded")["reason"], "DigestMismatch");
        // What the URL served is not described: not even by its digest.
        assert_eq!(common::reconcilers::condition(&status, "Degraded")["message"], "the module does not match spec.module.sha256");
        assert_eq!(common::reconcilers::condition(&status, "Loaded")["status"], "False");

        // Whoever can write a module's ConfigMap cannot swap the code: the pin names the bytes.
        let mut swapped = module("guest-wit2");
        swapped["sha256"] = json!(pin("guest-good")?);
        let swapped: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
            "metadata": {"name": "swapped"}, "spec": {"module": swapped},
        }))?;
        api.create(&PostParams::default(), &swapped).await?;
        let status = common::reconcilers::status_until(&api, "swapped", |s| common::reconcilers::condition(s, "Degraded")["status"] == "True").await?;
        assert_eq!(common::reconcilers::condition(&status, "Degraded")["reason"], "DigestMismatch");
        api.delete("swapped", &Default::default()).await?;


        let overridden = json!({"spec": {"module": module("guest-good"), "maxConcurrentReconciles": 3, "warmInstances": 2,
            "args": ["--mark=spec"], "env": [{"name": "GUEST_GOOD_MARK", "value": "from-spec"}]}});
        api.patch("good", &PatchParams::default(), &Patch::Merge(&overridden)).await?;
        let status = common::reconcilers::status_until(&api, "good", |s| s["observedGeneration"] == 4 && common::reconcilers::condition(s, "Ready")["status"] == "True").await?;
        println!("overridden: {status}");
        let row = plugins_row(&metrics, "guest-good").await?;
        assert!(row.trim_end().ends_with(" -"), "a loaded version clears the last error: {row}");
        let workers = value(&parse(&get(&metrics, "/metrics").await?.1), "controller_runtime_max_concurrent_reconciles", &[("controller", "guest-good")]);
        assert_eq!(workers, Some(3.0));
        common::seen_by_good(&configmaps, "third").await?;
        let started_with = configmaps.get("third").await?.metadata.annotations.unwrap_or_default();
        assert_eq!(started_with.get("guest-good.wasmop.dev/started-with").map(String::as_str), Some("args=--mark=spec;mark=from-spec"));
        let unbounded = json!({"spec": {"args": vec!["x".repeat(4000); 9]}});
        api.patch("good", &PatchParams::default(), &Patch::Merge(&unbounded)).await?;
        let status = common::reconcilers::status_until(&api, "good", |s| common::reconcilers::condition(s, "Degraded")["reason"] == "InvalidSpec").await?;
        let message = common::reconcilers::condition(&status, "Degraded")["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains("36024 bytes of arguments and variables, over the limit of 32768"), "{message}");
        api.patch("good", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"args": ["--mark=spec"]}}))).await?;
        common::reconcilers::status_until(&api, "good", |s| common::reconcilers::condition(s, "Ready")["status"] == "True" && common::reconcilers::condition(s, "Degraded")["status"] != "True").await?;

        let paused = json!({"spec": {"paused": true}});
        api.patch("good", &PatchParams::default(), &Patch::Merge(&paused)).await?;
        let status = common::reconcilers::status_until(&api, "good", |s| common::reconcilers::condition(s, "Ready")["reason"] == "Paused").await?;
        println!("paused: {status}");
        assert_eq!(common::reconcilers::condition(&status, "Loaded")["status"], "False");
        let object = serde_json::from_value(json!({"metadata": {"name": "while-paused"}}))?;
        configmaps.create(&PostParams::default(), &object).await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let annotations = configmaps.get("while-paused").await?.metadata.annotations;
        assert!(annotations.is_none_or(|a| !a.contains_key("guest-good.wasmop.dev/seen")), "a paused plugin reconciles nothing");
        let resumed = json!({"spec": {"paused": false}});
        api.patch("good", &PatchParams::default(), &Patch::Merge(&resumed)).await?;
        common::reconcilers::status_until(&api, "good", |s| common::reconcilers::condition(s, "Ready")["status"] == "True").await?;
        loop {
            let annotations = configmaps.get("while-paused").await?.metadata.annotations;
            if annotations.is_some_and(|a| a.contains_key("guest-good.wasmop.dev/seen")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        let configmap_informer = |text: &str| {
            text.lines()
                .any(|l| l.starts_with("wasmop_cache_objects{") && l.contains("kind=\"ConfigMap\""))
        };
        assert!(configmap_informer(&get(&metrics, "/metrics").await?.1));
        api.delete("good", &Default::default()).await?;
        loop {
            if !configmap_informer(&get(&metrics, "/metrics").await?.1) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // An object's own policy narrows the operator's: guest-good patches ConfigMaps, which
        // this one does not allow.
        let narrowed: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
            "metadata": {"name": "narrowed"},
            "spec": {"module": module("guest-good"), "policy": {
                "max-concurrent-reconciles": 4,
                "allow": [{"kinds": ["core/ConfigMap"], "verbs": ["get", "list", "watch"]}],
            }},
        }))?;
        api.create(&PostParams::default(), &narrowed).await?;
        let status = common::reconcilers::status_until(&api, "narrowed", |s| common::reconcilers::condition(s, "Degraded")["status"] == "True").await?;
        let degraded = common::reconcilers::condition(&status, "Degraded");
        assert_eq!(degraded["reason"], "LoadFailed");
        let message = degraded["message"].as_str().unwrap_or_default();
        assert!(message.contains("Patch ConfigMap.v1") && message.contains("WasmReconciler's policy"), "{message}");
        api.delete("narrowed", &Default::default()).await?;
        api.delete("pinned", &Default::default()).await?;
        Ok(())
    })
    .await
}
