//! The Helm chart on the test control plane's node, as a platform team installs and upgrades
//! it: installed with a policy, webhooks serving a provided certificate, the PodDisruptionBudget
//! and the NetworkPolicy, its pods get Ready, a WasmReconciler loads, the webhooks refuse an
//! invalid WebApp and a valid one converges; upgraded from the chart's previous version (0.1.0)
//! while WebApps keep coming, its CRDs change and no WebApp is lost. Needs root, the node's
//! binaries and the image: run with `make test-cluster`.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::pods::{
    NAMESPACE, WAIT, apply_module_reconciler, apply_module_reconciler_of, converge, converged,
    eventually, invalid_webapp_refused, namespace_with_webhook_secret, node_with_image, ready_pods,
    repo, seen_by_good,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::DynamicObject;
use serde_json::Value;
use wasmop_envtest::{APISERVER_PORT, ControlPlane, NODE_IP};

/// The commit holding the chart's previous version, 0.1.0, rendered from deploy/ before the
/// chart became its source.
const PREVIOUS_CHART: &str = "20c1abc";

/// The chart's values for the test node: the image from its registry, the apiserver at its
/// address (no kube-proxy), modules from its private address, and `extra` (YAML lines).
fn values(extra: &str) -> tempfile::NamedTempFile {
    let values = format!(
        "image: {{repository: 10.213.0.1:5000/wasmop, tag: dev}}\n\
         extraEnv:\n\
         - {{name: KUBERNETES_SERVICE_HOST, value: \"{NODE_IP}\"}}\n\
         - {{name: KUBERNETES_SERVICE_PORT, value: \"{APISERVER_PORT}\"}}\n\
         - {{name: WASMOP_REGISTRY_PLAIN_HTTP, value: \"10.213.0.1:5000\"}}\n\
         {extra}"
    );
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, values.as_bytes()).unwrap();
    file
}

/// Runs `helm args…` against `plane`; returns what it printed, or fails with its output.
fn helm(plane: &ControlPlane, args: &[&str]) -> String {
    let helm = plane.binaries().helm();
    let (ok, printed) = common::helm(&helm, Some(plane.kubeconfig_path()), args);
    assert!(ok, "helm {}: {printed}", args.join(" "));
    printed
}

/// `helm verb` (install or upgrade) of release `wasmop` from `chart` into [`NAMESPACE`] with
/// the values in `values`, waiting for its objects; returns what helm printed.
fn release(plane: &ControlPlane, verb: &str, chart: &Path, values: &Path) -> String {
    let (chart, values) = (chart.to_string_lossy(), values.to_string_lossy());
    let args = [
        verb,
        "wasmop",
        &chart,
        "--namespace",
        NAMESPACE,
        "--create-namespace",
        "--values",
        &values,
        "--wait",
        "--timeout",
        "5m",
    ];
    helm(plane, &args)
}

/// `kubectl get args… -o json`, parsed.
async fn get_json(plane: &ControlPlane, args: &[&str]) -> Value {
    let args = [&["get"], args, &["-o", "json"]].concat();
    let printed = plane.run_kubectl(&args, None).await.unwrap();
    serde_json::from_str(&printed).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_installs_with_policy_webhooks_disruption_budget_and_network_policy() {
    let plane = node_with_image().await;
    namespace_with_webhook_secret(&plane).await;
    let values = values(
        "webhooks: {enabled: true, certManager: {enabled: false}}\n\
         networkPolicy: {enabled: true}\n\
         policy:\n\
         \x20 max-memory-limit: 256Mi\n\
         \x20 allow:\n\
         \x20 - {kinds: [example.wasmop.dev/WebApp], verbs: [get, list, watch, update, patch, status]}\n\
         \x20 - {kinds: [apps/Deployment, core/Service, core/ConfigMap], verbs: [get, list, watch, create, update, patch, delete]}\n\
         \x20 - {kinds: [core/Namespace], verbs: [get, list, watch]}\n\
         \x20 conversions: {example.wasmop.dev/WebApp: webapp}\n\
         \x20 modules: {private-addresses: true}\n",
    );
    let chart = repo().join("deploy/helm/wasmop");
    let started = Instant::now();
    let printed = release(&plane, "install", &chart, values.path());
    let returned = started.elapsed();
    assert!(printed.contains("Check it works:"), "NOTES.txt: {printed}");
    let client = plane.client().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    ready_pods(&pods, 2).await;
    eprintln!(
        "[chart] helm install returned after {:.1} s; both pods Ready after {:.1} s",
        returned.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );

    // The disruption budget counts both replicas healthy and allows one eviction.
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NAMESPACE);
    eventually(
        "the PodDisruptionBudget observing two healthy pods",
        WAIT,
        || async {
            let status = budgets.get("wasmop").await.ok()?.status?;
            (status.current_healthy == Some(2) && status.disruptions_allowed == Some(1))
                .then_some(())
        },
    )
    .await;

    // The NetworkPolicy is stored as the chart wrote it (this node's bridge CNI enforces none).
    let manifest = helm(
        &plane,
        &["get", "manifest", "wasmop", "--namespace", NAMESPACE],
    );
    let written = manifest
        .split("\n---")
        .filter_map(|doc| serde_saphyr::from_str::<Value>(doc).ok())
        .find(|doc| doc["kind"] == "NetworkPolicy")
        .expect("the chart wrote a NetworkPolicy");
    let stored = get_json(&plane, &["networkpolicy", "wasmop", "-n", NAMESPACE]).await;
    assert_eq!(stored["spec"], written["spec"]);
    let ports: Vec<&Value> = stored["spec"]["ingress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| &rule["ports"][0]["port"])
        .collect();
    assert_eq!(ports, ["probes", "metrics", "webhooks"]);

    // A WasmReconciler loads, within the policy.
    apply_module_reconciler(&plane, "guest-good").await;
    let namespace = plane.create_namespace("chart").await.unwrap();
    seen_by_good(&plane, &namespace, "hot").await;

    // The webhooks, served with the provided certificate, refuse an invalid WebApp.
    let apps = common::webapps(client.clone(), &namespace);
    invalid_webapp_refused(&apps).await;
    converge(&plane, &namespace, "from-the-chart").await;
}

/// Creates WebApps `churn-0`, `churn-1`, … in `namespace` every 200 ms until `stop`; returns the
/// names the apiserver took and the errors it answered.
async fn churn(
    apps: Api<DynamicObject>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> (Vec<String>, Vec<String>) {
    let (mut created, mut errors) = (Vec::new(), Vec::new());
    for i in 0.. {
        if *stop.borrow() {
            break;
        }
        let name = format!("churn-{i}");
        match apps
            .create(&Default::default(), &common::webapp(&name))
            .await
        {
            Ok(_) => created.push(name),
            Err(error) => errors.push(format!("{name}: {error}")),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (created, errors)
}

/// The chart at [`PREVIOUS_CHART`], unpacked under `dir`.
fn previous_chart(dir: &std::path::Path) -> std::path::PathBuf {
    let archive = std::process::Command::new("git")
        .current_dir(repo())
        .args(["archive", PREVIOUS_CHART, "deploy/helm/wasmop"])
        .output()
        .unwrap();
    assert!(archive.status.success(), "git archive: {archive:?}");
    let mut tar = std::process::Command::new("tar")
        .args(["-x", "-C"])
        .arg(dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(tar.stdin.as_mut().unwrap(), &archive.stdout).unwrap();
    assert!(tar.wait().unwrap().success());
    dir.join("deploy/helm/wasmop")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_upgrade_under_churn_loses_no_webapp() {
    let plane = node_with_image().await;
    let scratch = tempfile::tempdir().unwrap();
    let previous = previous_chart(scratch.path());
    let chart = repo().join("deploy/helm/wasmop");
    let values = values("");
    release(&plane, "install", &previous, values.path());
    let client = plane.client().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    ready_pods(&pods, 2).await;
    // Before the split, WasmReconciler was cluster-scoped.
    apply_module_reconciler_of(&plane, "WasmReconciler", "guest-good").await;
    let namespace = plane.create_namespace("upgrade").await.unwrap();
    for i in 0..10 {
        converge(&plane, &namespace, &format!("before-{i}")).await;
    }

    // 0.1.0 installed its CRDs from crds/, which Helm never upgrades; the chart now owns them as
    // templates, so they are handed to the release first (the book: "Upgrading the chart").
    let crds = ["webapps.example.wasmop.dev", "wasmreconcilers.wasmop.dev"];
    for crd in crds {
        let label = ["label", "crd", crd, "app.kubernetes.io/managed-by=Helm"];
        plane.run_kubectl(&label, None).await.unwrap();
        let annotate = [
            "annotate",
            "crd",
            crd,
            "meta.helm.sh/release-name=wasmop",
            &format!("meta.helm.sh/release-namespace={NAMESPACE}"),
        ];
        plane.run_kubectl(&annotate, None).await.unwrap();
    }
    // WasmReconciler became namespaced: `wasmop migrate` moves the objects to
    // ClusterWasmReconcilers first, and the new CRDs keep the release's metadata (the book:
    // "Upgrading the chart").
    let migrated = common::migrate(&plane).await.unwrap();
    assert!(migrated.contains("guest-good: copied"), "{migrated}");
    let crds = [crds[0], crds[1], "clusterwasmreconcilers.wasmop.dev"];

    let apps = common::webapps(client.clone(), &namespace);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let load = tokio::spawn(churn(apps.clone(), stopped));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let started = Instant::now();
    release(&plane, "upgrade", &chart, values.path());
    let upgraded = started.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.send(true).unwrap();
    let (created, errors) = load.await.unwrap();
    assert!(
        errors.is_empty(),
        "the apiserver refused WebApps: {errors:?}"
    );
    ready_pods(&pods, 2).await;

    // Every WebApp created before and during the upgrade is there and converges.
    let started = Instant::now();
    let before = (0..10).map(|i| format!("before-{i}"));
    let all: Vec<String> = before.chain(created.iter().cloned()).collect();
    for name in &all {
        converged(&plane, &namespace, name).await;
    }
    let listed = apps.list(&Default::default()).await.unwrap().items.len();
    eprintln!(
        "[chart] upgrade took {:.1} s; {} WebApps created during it; all {} converged {:.1} s \
         after the upgrade; {listed} listed",
        upgraded.as_secs_f64(),
        created.len(),
        all.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(listed, all.len(), "WebApps lost or made up");
    assert!(
        created.len() >= 10,
        "the churn ran through the upgrade: {}",
        created.len()
    );

    // The CRD changes were applied: the chart now keeps them on uninstall.
    for crd in crds {
        let stored = get_json(&plane, &["crd", crd]).await;
        assert_eq!(
            stored["metadata"]["annotations"]["helm.sh/resource-policy"], "keep",
            "{crd}"
        );
    }
    // The WasmReconciler is still loaded by the new pods.
    seen_by_good(&plane, &namespace, "after").await;
}
