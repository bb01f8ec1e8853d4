//! Every reconcile is traceable: `wasmop run --log-format json`, with three plugins reconciling
//! at once on the real control plane (webapp, configmap-sync, and guest-panic failing every
//! reconcile), writes one JSON object per line, and every line logged inside a reconcile — the
//! worker's, the guest's own log calls and its stderr, the host's error — carries that
//! reconcile's plugin, object and id, the same for all of its lines. The Events a reconcile
//! records name its id in the annotation `wasmop.dev/reconcile-id`, and at the default level
//! that reconcile's line says how it ended and how long it took.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasmop_envtest::{shared_by, within};

use common::logged::Logged;
use common::scrape::{free_address, wait_ready};

const LIMIT: Duration = Duration::from_secs(300);

const WEBAPPS: [&str; 3] = ["shop", "blog", "wiki"];
const SOURCES: [&str; 3] = ["colours", "sizes", "prices"];

/// The fields of the span a line was logged in, if it was logged inside a reconcile.
fn reconcile_span(line: &Value) -> Option<&serde_json::Map<String, Value>> {
    let span = line.get("span")?.as_object()?;
    (span.get("name")? == "reconcile").then_some(span)
}

fn text<'a>(fields: &'a serde_json::Map<String, Value>, name: &str) -> &'a str {
    fields.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// Whether `reason` is one a source or a worker gives.
fn known_reason(reason: &str) -> bool {
    if ["requeue-after", "error retry", "handover retry"].contains(&reason) {
        return true;
    }
    let words: Vec<&str> = reason.split(' ').collect();
    match words[..] {
        ["object", change] => ["listed", "added", "updated", "deleted"].contains(&change),
        ["owned" | "watched", _, change] => {
            ["listed", "added", "updated", "deleted"].contains(&change)
        }
        _ => false,
    }
}

/// Waits until `ready` holds of the host's log lines so far.
async fn logged(host: &Logged, what: &str, ready: impl Fn(&[String]) -> bool) {
    within(LIMIT, what, async {
        while !ready(&host.log()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

#[tokio::test]
async fn every_line_of_a_reconcile_names_its_plugin_object_and_id() -> anyhow::Result<()> {
    within(LIMIT, "tracing concurrent reconciles", async {
        let plane = &shared_by(module_path!()).await?;
        common::install_webapp_crd(plane).await?;
        let client = plane.client().await?;
        let apps = plane.create_namespace("traced-apps").await?;
        let source = plane.create_namespace("traced-source").await?;
        let target = plane.create_namespace("traced-target").await?;
        let target_label =
            json!({"metadata": {"labels": {"configmap-sync.wasmop.dev/target": "true"}}});
        Api::<Namespace>::all(client.clone())
            .patch(
                &target,
                &PatchParams::default(),
                &Patch::Merge(&target_label),
            )
            .await?;

        let configmaps = Api::<ConfigMap>::namespaced(client.clone(), &source);
        let early = serde_json::from_value(json!({"metadata": {"name": "early"}}))?;
        configmaps.create(&PostParams::default(), &early).await?;

        let probes = free_address();
        let mut command = common::host(plane);
        for plugin in ["webapp", "configmap-sync", "guest-panic"] {
            command.arg("--plugin").arg(common::component(plugin));
        }
        command
            .args(["--log-format", "json"])
            .args(["--namespaces", &format!("{apps},{source},{target}")])
            .args(["--metrics-bind-address", "0"])
            .args(["--health-probe-bind-address", &probes])
            // The default level: what a user sees without asking for more.
            .env("RUST_LOG", "info");
        let host = Logged::spawn("traced", command)?;
        wait_ready(&probes).await;

        let webapps = common::webapps(client.clone(), &apps);
        for (app, name) in WEBAPPS.iter().zip(SOURCES) {
            webapps
                .create(&PostParams::default(), &common::webapp(app))
                .await?;
            let settings: ConfigMap = serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {"configmap-sync.wasmop.dev/source": "true"}},
                "data": {"key": name},
            }))?;
            configmaps.create(&PostParams::default(), &settings).await?;
        }
        for app in WEBAPPS {
            common::converged(&webapps, app).await?;
        }
        webapps.delete(WEBAPPS[0], &DeleteParams::default()).await?;

        let released = format!("released WebApp {apps}/{}", WEBAPPS[0]);
        let copied = SOURCES.map(|name| format!("copied {source}/{name} into {target}"));
        logged(&host, "the guests' log lines", |log| {
            let has = |text: &str| log.iter().any(|line| line.contains(text));
            has(&released) && copied.iter().all(|c| has(c))
        })
        .await;
        logged(&host, "guest-panic's retry", |log| {
            log.iter().any(|line| {
                line.contains(r#""plugin":"guest-panic""#)
                    && line.contains(r#""reason":"error retry""#)
            })
        })
        .await;

        let events = Api::<Event>::namespaced(client.clone(), &apps);
        let created = within(LIMIT, "webapp's Created events", async {
            loop {
                let created: Vec<Event> = events
                    .list(&Default::default())
                    .await?
                    .items
                    .into_iter()
                    .filter(|e| e.reason.as_deref() == Some("Created"))
                    .collect();
                if created.len() >= WEBAPPS.len() {
                    return Ok::<_, kube::Error>(created);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await?;

        let lines = host.log();
        common::terminate(host.child).await?;

        let parsed: Vec<Value> = lines
            .iter()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            })
            .collect();

        // Every reconcile's lines carry its plugin, object and id, the same on all of them.
        let mut reconciles: BTreeMap<&str, (&str, &str, BTreeSet<&str>)> = BTreeMap::new();
        for line in &parsed {
            let Some(span) = reconcile_span(line) else {
                continue;
            };
            let (plugin, object, id) = (
                text(span, "plugin"),
                text(span, "object"),
                text(span, "reconcile_id"),
            );
            assert!(
                !plugin.is_empty() && object.contains('/') && id.len() == 16,
                "a reconcile's line without its plugin, object or id: {line}"
            );
            assert!(
                !text(span, "version").is_empty() && !text(span, "kind").is_empty(),
                "{line}"
            );
            let entry = reconciles
                .entry(id)
                .or_insert((plugin, object, BTreeSet::new()));
            assert_eq!(
                (entry.0, entry.1),
                (plugin, object),
                "reconcile {id} changed plugin or object: {line}"
            );
            entry.2.insert(text(line.as_object().unwrap(), "message"));
        }
        let plugins: BTreeSet<&str> = reconciles.values().map(|r| r.0).collect();
        assert_eq!(
            plugins,
            BTreeSet::from(["configmap-sync", "guest-panic", "webapp"]),
            "every plugin's reconciles are traced"
        );

        // The reason says why each reconcile was queued (configmap-sync's reconcile of `early`,
        // which changes nothing, logs at debug only).
        let reasons: BTreeSet<(&str, &str)> = parsed
            .iter()
            .filter_map(reconcile_span)
            .map(|span| (text(span, "plugin"), text(span, "reason")))
            .collect();
        for (plugin, reason) in &reasons {
            assert!(known_reason(reason), "{plugin} reconciled for {reason:?}");
        }
        for (plugin, reason) in [
            ("webapp", "object updated"),
            ("configmap-sync", "object added"),
            ("guest-panic", "object listed"),
            ("guest-panic", "error retry"),
        ] {
            assert!(
                reasons.contains(&(plugin, reason)),
                "no {plugin} reconcile for {reason:?} among {reasons:?}"
            );
        }

        // The guests' own lines are inside their reconcile, as are the host's errors.
        let inside = |needle: &str, plugin: &str, object: &str| {
            let line = parsed
                .iter()
                .find(|line| text(line.as_object().unwrap(), "message").contains(needle))
                .unwrap_or_else(|| panic!("no line says {needle:?}"));
            let span =
                reconcile_span(line).unwrap_or_else(|| panic!("outside a reconcile: {line}"));
            assert_eq!(
                (text(span, "plugin"), text(span, "object")),
                (plugin, object),
                "{line}"
            );
        };
        inside(&released, "webapp", &format!("{apps}/{}", WEBAPPS[0]));
        for (name, copied) in SOURCES.iter().zip(&copied) {
            inside(copied, "configmap-sync", &format!("{source}/{name}"));
        }
        let panicked: Vec<&Value> = parsed
            .iter()
            .filter(|line| {
                let line = line.as_object().unwrap();
                text(line, "message").contains("retrying with backoff")
                    || text(line, "stream") == "stderr"
            })
            .collect();
        assert!(
            panicked.len() >= 2,
            "guest-panic's stderr and the host's error"
        );
        for line in panicked {
            let span =
                reconcile_span(line).unwrap_or_else(|| panic!("outside a reconcile: {line}"));
            assert_eq!(text(span, "plugin"), "guest-panic", "{line}");
        }

        // A Created event names the reconcile that recorded it, one of its WebApp's.
        for event in &created {
            let id = event
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("wasmop.dev/reconcile-id"))
                .unwrap_or_else(|| panic!("no reconcile id on {:?}", event.metadata));
            let regarding = event
                .regarding
                .as_ref()
                .expect("an event is about an object");
            let about = format!(
                "{}/{}",
                regarding.namespace.as_deref().unwrap_or_default(),
                regarding.name.as_deref().unwrap_or_default()
            );
            assert_eq!(
                reconciles.get(id.as_str()).map(|r| (r.0, r.1)),
                Some(("webapp", about.as_str())),
                "event {:?} names reconcile {id}",
                event.metadata.name
            );
            // That reconcile's own line says how it ended and how long it took.
            let ended = parsed
                .iter()
                .filter(|line| reconcile_span(line).is_some_and(|s| text(s, "reconcile_id") == id))
                .find(|line| line["message"] == "reconciled")
                .unwrap_or_else(|| panic!("no line says how reconcile {id} ended"));
            assert!(
                ended["outcome"].as_str().is_some_and(|o| !o.is_empty())
                    && ended["took_ms"].is_u64()
                    && ended["changes"].as_u64() >= Some(1),
                "{ended}"
            );
        }
        Ok(())
    })
    .await
}
