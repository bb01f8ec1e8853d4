//! The Helm chart (`deploy/helm/wasmop`) as `helm` reads it: it lints, its schema and its checks
//! refuse wrong values with a message naming them, and with every option on it renders objects
//! the real apiserver accepts (a server-side dry run) — the PodDisruptionBudget, the
//! NetworkPolicy, the webhooks with a provided certificate, per-plugin identities — beside the
//! Prometheus Operator's and cert-manager's objects carrying the alerts and the certificates.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use wasmop_envtest::{Binaries, shared_by, within};

const LIMIT: Duration = Duration::from_secs(180);

fn chart() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/helm/wasmop");
    path.to_string_lossy().into_owned()
}

/// `helm args…`: whether it succeeded, and what it printed.
async fn helm(args: &[&str]) -> (bool, String) {
    let binaries = Binaries::locate_tools().await.expect("helm is built");
    common::helm(&binaries.helm(), None, args)
}

/// The chart rendered into `namespace` with `values` set.
async fn template(namespace: &str, values: &[&str]) -> (bool, String) {
    let chart = chart();
    let mut args = vec!["template", "wasmop", &chart, "--namespace", namespace];
    for value in values {
        args.extend(["--set", value]);
    }
    helm(&args).await
}

/// The rendered documents as JSON values.
fn documents(rendered: &str) -> Vec<Value> {
    rendered
        .split("\n---")
        .filter_map(|doc| serde_saphyr::from_str::<Value>(doc).ok())
        .filter(|doc| doc.get("kind").is_some())
        .collect()
}

/// Every option an operator turns on in a cluster with cert-manager and Prometheus Operator.
const EVERYTHING: &[&str] = &[
    "webhooks.enabled=true",
    "webhooks.certManager.enabled=false",
    "identity.perPlugin=true",
    "networkPolicy.enabled=true",
    "monitoring.serviceMonitor.enabled=true",
    "monitoring.serviceMonitor.scraper.serviceAccount=prometheus",
    "monitoring.alerts.enabled=true",
    "monitoring.dashboard.enabled=true",
    "sharding=true",
    "replicaCount=3",
    "warmStandby=true",
    "resources.limits.memory=512Mi",
    "guestMemoryBudget=384Mi",
    "tenants.operatorReservedInstances=64",
    "tenants.operatorReservedMemory=96Mi",
];

#[tokio::test]
async fn the_chart_lints_with_its_schema_and_with_every_option() {
    let chart = chart();
    let (linted, printed) = helm(&["lint", "--strict", &chart]).await;
    assert!(linted, "{printed}");
    let mut args = vec!["lint", "--strict", &chart];
    for value in EVERYTHING {
        args.extend(["--set", value]);
    }
    let (linted, printed) = helm(&args).await;
    assert!(linted, "{printed}");
}

#[tokio::test]
async fn wrong_values_fail_at_install_naming_the_value() {
    for (value, message) in [
        ("replicaCount=0", "/replicaCount"),
        (
            "shardng=true",
            "additional properties 'shardng' not allowed",
        ),
        ("guestMemoryBudget=lots", "/guestMemoryBudget"),
        ("image.pullPolicy=Sometimes", "/image/pullPolicy"),
        ("webhooks.port=70000", "/webhooks/port"),
        (
            "monitoring.serviceMonitor.interval=often",
            "/monitoring/serviceMonitor/interval",
        ),
        (
            "guestMemoryBudget=200Mi",
            "guestMemoryBudget (200Mi) plus hostMemoryHeadroom (128Mi) is more than resources.limits.memory (256Mi)",
        ),
        (
            "memoryLimit=256Mi",
            "memoryLimit (256Mi) is more than guestMemoryBudget (128Mi)",
        ),
        (
            "resources.limits.memory=1Xi",
            "\"1Xi\" has an unknown unit \"Xi\"",
        ),
        (
            "replicaCount=1,sharding=true",
            "sharding shares the work among replicas",
        ),
        (
            "plugins.files=null,plugins.wasmReconcilers=false",
            "the host needs a plugin to load",
        ),
        ("plugins.directory.enabled=true", "plugins.directory.volume"),
        (
            "cache.pulledLimit=1Gi",
            "cache.compiledLimit (512Mi) plus cache.pulledLimit (1Gi) plus 320Mi for each of tenants.maxConcurrentInstalls (2) is more than cache.sizeLimit (2Gi)",
        ),
        ("tenants.logRate=fast", "/tenants/logRate"),
        (
            "config.memory-limit=64Mi",
            "config.memory-limit: the chart sets memory-limit from memoryLimit; set that instead",
        ),
    ] {
        let (rendered, printed) = template("wasmop-system", &[value]).await;
        assert!(!rendered, "{value} was accepted");
        assert!(printed.contains(message), "{value}: {printed}");
    }
}

#[tokio::test]
async fn every_option_renders_objects_the_apiserver_accepts() -> anyhow::Result<()> {
    within(LIMIT, "the chart's objects on the real apiserver", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("chart").await?;
        let (rendered, printed) = template(&namespace, EVERYTHING).await;
        assert!(rendered, "{printed}");
        let docs = documents(&printed);
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        for kind in [
            "PodDisruptionBudget",
            "NetworkPolicy",
            "ServiceMonitor",
            "PrometheusRule",
            "CustomResourceDefinition",
        ] {
            assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
        }
        assert!(
            !kinds.contains(&"Certificate"),
            "a provided certificate needs no cert-manager objects: {kinds:?}"
        );

        // What the apiserver knows (the rest needs the Prometheus Operator's CRDs).
        let known: Vec<&Value> = docs
            .iter()
            .filter(|d| {
                !["ServiceMonitor", "PrometheusRule"].contains(&d["kind"].as_str().unwrap())
            })
            .collect();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": known});
        let applied = plane
            .run_kubectl(
                &["apply", "--dry-run=server", "-n", &namespace, "-f", "-"],
                Some(&list.to_string()),
            )
            .await?;
        for object in [
            "poddisruptionbudget.policy/wasmop",
            "networkpolicy.networking.k8s.io/wasmop",
            "deployment.apps/wasmop",
            "service/wasmop-webhooks",
            "serviceaccount/wasmop-plugin-webapp",
        ] {
            assert!(applied.contains(object), "{object} not applied:\n{applied}");
        }

        let find = |kind: &str, name: &str| {
            docs.iter()
                .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
                .unwrap_or_else(|| panic!("no {kind} {name}"))
        };
        let deployment = find("Deployment", "wasmop");
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let args = container["args"].to_string();
        assert!(
            args.contains(&format!("--webhook-service={namespace}/wasmop-webhooks")),
            "{args}"
        );
        assert_eq!(deployment["spec"]["replicas"], 3);
        let volumes = deployment["spec"]["template"]["spec"]["volumes"].to_string();
        assert!(volumes.contains("wasmop-webhook-cert"), "{volumes}");
        let config = find("ConfigMap", "wasmop-config")["data"]["wasmop.yaml"]
            .as_str()
            .unwrap()
            .to_owned();
        for setting in [
            "sharding: true",
            "warm-standby: true",
            "guest-memory-budget: 384Mi",
            &format!("plugin-identity-namespace: {namespace}"),
        ] {
            assert!(config.contains(setting), "{setting} not in\n{config}");
        }

        // The PrometheusRule carries the alerts promtool tests; the ServiceMonitor scrapes the
        // metrics Service over HTTPS with the scraper's token, which the binding lets read.
        let alerts: Value = serde_saphyr::from_str(&std::fs::read_to_string(format!(
            "{}/monitoring/alerts.yaml",
            chart()
        ))?)?;
        assert_eq!(find("PrometheusRule", "wasmop")["spec"], alerts);
        let endpoint = &find("ServiceMonitor", "wasmop")["spec"]["endpoints"][0];
        assert_eq!(endpoint["scheme"], "https");
        assert_eq!(endpoint["port"], "metrics");
        let binding = find("ClusterRoleBinding", "wasmop-metrics-reader");
        assert_eq!(binding["subjects"][0]["name"], "prometheus");
        let dashboard = find("ConfigMap", "wasmop-dashboard");
        assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
        let json: Value = serde_json::from_str(dashboard["data"]["wasmop.json"].as_str().unwrap())?;
        assert_eq!(json["uid"], "wasmop");

        // CRDs stay when the release goes: deleting one deletes every object of it.
        let crd = find("CustomResourceDefinition", "webapps.example.wasmop.dev");
        assert_eq!(
            crd["metadata"]["annotations"]["helm.sh/resource-policy"],
            "keep"
        );
        Ok(())
    })
    .await
}
