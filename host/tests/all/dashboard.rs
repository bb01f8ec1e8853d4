//! The chart's Grafana dashboard (`deploy/helm/wasmop/monitoring/dashboard.json`) against a
//! running host: every metric its queries name is in a scrape of a host doing the work each panel
//! shows — reconciles that succeed, fail, panic and time out, a write the sandbox refuses, a
//! module that fails to load, webhook calls, leader election, a guest memory budget — and every
//! label a query selects or groups by is on one of the metrics it names.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::scrape::{free_address, get, wait_ready};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::Value;
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(240);
const DASHBOARD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/helm/wasmop/monitoring/dashboard.json"
);
/// Labels the scrape target gives every series (the ServiceMonitor's), not the host.
const TARGET_LABELS: [&str; 4] = ["job", "namespace", "pod", "instance"];

/// What one query names: metrics with the labels its selectors match on, and the labels it
/// groups by.
#[derive(Debug, Default)]
struct Names {
    metrics: BTreeMap<String, BTreeSet<String>>,
    grouped: BTreeSet<String>,
}

/// An identifier of PromQL (a metric, label or function name) at the start of `text`.
fn identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The label names matched inside one selector's braces (`text` starts after the `{`), and the
/// rest after its `}`.
fn matchers(mut text: &str) -> (BTreeSet<String>, &str) {
    let mut labels = BTreeSet::new();
    loop {
        text = text.trim_start_matches([' ', ',']);
        if let Some(rest) = text.strip_prefix('}') {
            return (labels, rest);
        }
        let label = identifier(text);
        assert!(
            !label.is_empty(),
            "a selector this test cannot read: {text}"
        );
        labels.insert(label.to_owned());
        let open = text.find('"').expect("a quoted value");
        let close = open + 1 + text[open + 1..].find('"').expect("a closing quote");
        text = &text[close + 1..];
    }
}

/// The metrics, matched labels and grouping labels of one query.
fn names(query: &str) -> Names {
    let mut found = Names::default();
    let mut text = query;
    while !text.is_empty() {
        let word = identifier(text);
        if word.is_empty() {
            text = &text[text.chars().next().map_or(1, char::len_utf8)..];
            continue;
        }
        let rest = text[word.len()..].trim_start();
        if let Some(inside) = rest.strip_prefix('{') {
            let (labels, after) = matchers(inside);
            found
                .metrics
                .entry(word.to_owned())
                .or_default()
                .extend(labels);
            text = after;
        } else if word == "by" && rest.starts_with('(') {
            let close = rest.find(')').expect("a closing parenthesis");
            let grouped = rest[1..close].split(',').map(|l| l.trim().to_owned());
            found.grouped.extend(grouped);
            text = &rest[close + 1..];
        } else {
            text = rest;
        }
    }
    found
}

/// Every query of the dashboard: its panels' targets and its variables' definitions.
fn queries() -> Vec<String> {
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    let targets = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| t["expr"].as_str().unwrap().to_owned());
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let definitions = variables
        .iter()
        .filter_map(|v| v["definition"].as_str())
        .map(label_values_query);
    targets.chain(definitions).collect()
}

/// Grafana's `label_values(selector, label)` as the query it runs, `group by (label) (selector)`.
fn label_values_query(definition: &str) -> String {
    let inner = definition
        .strip_prefix("label_values(")
        .and_then(|d| d.strip_suffix(')'))
        .expect("a label_values variable");
    let (selector, label) = inner.rsplit_once(", ").expect("a selector and a label");
    format!("group by ({label}) ({selector})")
}

/// Each metric of a scrape's text with every label any of its series carries.
fn exported(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = identifier(line);
        let labels = found.entry(name.to_owned()).or_default();
        if let Some(inside) = line[name.len()..].strip_prefix('{') {
            labels.extend(matchers(inside).0);
        }
    }
    found
}

/// What the dashboard's queries name that `scrape` lacks, one line each.
fn missing(queries: &[String], scrape: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut missing = Vec::new();
    for query in queries {
        let named = names(query);
        let mut carried: BTreeSet<&str> = TARGET_LABELS.into();
        for (metric, labels) in &named.metrics {
            let Some(exported) = scrape.get(metric) else {
                missing.push(format!("{metric} (in {query})"));
                continue;
            };
            carried.extend(exported.iter().map(String::as_str));
            for label in labels
                .iter()
                .filter(|l| !TARGET_LABELS.contains(&l.as_str()))
            {
                if !exported.contains(label) {
                    missing.push(format!("label {label} on {metric} (in {query})"));
                }
            }
        }
        let label_values_of = named
            .grouped
            .iter()
            .filter(|l| !carried.contains(l.as_str()));
        for label in label_values_of {
            missing.push(format!("grouping label {label} (in {query})"));
        }
    }
    missing
}

#[test]
fn the_reader_finds_names_labels_and_groupings_and_misses_what_is_not_exported() {
    let named = names(
        r#"histogram_quantile(0.99, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket{job="wasmop-metrics", name=~"$plugin"}[5m])))"#,
    );
    assert_eq!(
        named.metrics["workqueue_queue_duration_seconds_bucket"],
        ["job".to_owned(), "name".to_owned()].into()
    );
    assert_eq!(named.grouped, ["le".to_owned(), "name".to_owned()].into());
    let scrape = exported("# HELP x y\nx_total{plugin=\"a\",reason=\"b\"} 1\nup 1\n");
    let queries = [
        r#"sum by (plugin) (rate(x_total{plugin=~"$plugin"}[5m]))"#.to_owned(),
        r#"sum by (kind) (x_total{job="j", kind="k"}) + y_total{}"#.to_owned(),
    ];
    assert_eq!(
        missing(&queries, &scrape),
        [
            format!("label kind on x_total (in {})", queries[1]),
            format!("y_total (in {})", queries[1]),
            format!("grouping label kind (in {})", queries[1]),
        ]
    );
}

#[tokio::test]
async fn every_dashboard_query_names_metrics_a_running_host_exports() -> anyhow::Result<()> {
    within(LIMIT, "the dashboard's metrics on a running host", async {
        let queries = queries();
        assert!(
            queries.len() > 30,
            "the dashboard has {} queries",
            queries.len()
        );
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("dashboard").await?;
        let dir = tempfile::tempdir()?;
        for component in [
            "guest-good",
            "guest-undeclared-write",
            "guest-panic",
            "guest-spin",
        ] {
            common::publish(component, dir.path(), &format!("{component}.wasm"))?;
        }
        std::fs::write(dir.path().join("broken.wasm"), b"not a component")?;
        let (metrics, probes, webhooks) = (free_address(), free_address(), free_address());
        let _host = common::host(plane)
            .arg("--plugin-dir")
            .arg(dir.path())
            .args(["--namespaces", &namespace])
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", &probes])
            .args(["--leader-elect", "--leader-election-namespace", &namespace])
            .args(["--guest-memory-budget", "256Mi"])
            // broken.wasm never loads (the failed-load panel's plugin): ready without it.
            .args(["--ready-requires", "none"])
            .args(["--webhook-bind-address", &webhooks])
            .args(["--webhook-url", &format!("https://{webhooks}")])
            .args(["--webhook-configuration-name", &namespace])
            .args([
                "--webhook-failure-policy",
                "Ignore",
                "--webhook-timeout",
                "1s",
            ])
            .spawn()?;
        wait_ready(&probes).await;

        // Every plugin reconciles it (guest-spin's validation times out first, and is ignored).
        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, &namespace);
        let mut left = Vec::new();
        for attempt in 0.. {
            let configmap = serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("scraped-{attempt}")},
                "data": {"a": "b"},
            }))?;
            // Until the webhook configuration is written, creates are not reviewed.
            let _ = configmaps.create(&PostParams::default(), &configmap).await;
            let (_, text) = get(&metrics, "/metrics").await?;
            left = missing(&queries, &exported(&text));
            if left.is_empty() {
                eprintln!(
                    "[dashboard] all {} queries resolve after {} ConfigMaps",
                    queries.len(),
                    attempt + 1
                );
                break;
            }
            if attempt >= 60 {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        assert!(
            left.is_empty(),
            "the dashboard names what the host does not export:\n{}",
            left.join("\n")
        );
        Ok(())
    })
    .await
}
