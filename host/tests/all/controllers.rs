//! Plugins reconciling real objects on the real control plane through the whole host: informers,
//! queue, workers, the Wasm runtime and the cache-backed client. A write the apiserver refuses is
//! named in the reconcile's error in the `wasmop` binary's log (a status write to a CRD without
//! the subresource says so), and the log says once that the plugin was installed. (The `webapp`
//! plugin has its own suite, run for every language: `tests/conformance`.)

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, GroupVersionKind, Patch, PatchParams};
use serde_json::json;
use tokio::time::Instant;
use wasmop::contract::object::ObjectKey;
use wasmop::controller::Controller;
use wasmop::manager::{Manager, ManagerOptions};
use wasmop::runtime::PluginOptions;
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(180);

/// Polls `probe` until it returns `Some`, for at most 60 s.
async fn eventually<T, F: Future<Output = Option<T>>>(
    what: &str,
    mut probe: impl FnMut() -> F,
) -> T {
    within(Duration::from_secs(60), what, async {
        loop {
            if let Some(value) = probe().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

/// How long `key` waited between its consecutive retries, from its retry `from` to its retry
/// `to`, by polling; a step two retries overtook between polls is left out.
async fn retry_gaps(
    failing: &Controller,
    key: &ObjectKey,
    from: u32,
    to: u32,
) -> Vec<(u32, Duration)> {
    let mut reached = BTreeMap::new();
    let mut retries = failing.retries(key);
    while retries < to {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let now = failing.retries(key);
        if now != retries {
            reached.insert(now, Instant::now());
            retries = now;
        }
    }
    (from..to)
        .filter_map(|retry| Some((retry, *reached.get(&(retry + 1))? - *reached.get(&retry)?)))
        .collect()
}

fn labelled(namespace: &str, name: &str, labels: serde_json::Value) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "metadata": {"namespace": namespace, "name": name, "labels": labels},
        "data": {"greeting": "hello"},
    }))?)
}

#[tokio::test]
async fn configmap_sync_follows_its_source_and_namespaces_labelled_later() -> anyhow::Result<()> {
    within(LIMIT, "configmap-sync on the real control plane", async {
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let (source_ns, early, late) = (
            plane.create_namespace("sync-source").await?,
            plane.create_namespace("sync-early").await?,
            plane.create_namespace("sync-late").await?,
        );
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let target = json!({"metadata": {"labels": {"configmap-sync.wasmop.dev/target": "true"}}});
        namespaces
            .patch(&early, &PatchParams::default(), &Patch::Merge(&target))
            .await?;

        let mut manager = Manager::new(client.clone(), ManagerOptions::default())?;
        manager
            .add_plugin(
                &common::component("configmap-sync"),
                PluginOptions::default(),
            )
            .await?;
        let source = labelled(
            &source_ns,
            "shared-settings",
            json!({"configmap-sync.wasmop.dev/source": "true"}),
        )?;
        Api::<ConfigMap>::namespaced(client.clone(), &source_ns)
            .create(&Default::default(), &source)
            .await?;

        let copy_in = |namespace: &str| Api::<ConfigMap>::namespaced(client.clone(), namespace);
        let (early_copies, late_copies) = (copy_in(&early), copy_in(&late));
        eventually("the copy in the labelled namespace", || async {
            early_copies.get_opt("shared-settings").await.ok().flatten()
        })
        .await;
        namespaces
            .patch(&late, &PatchParams::default(), &Patch::Merge(&target))
            .await?;
        eventually("the copy in the namespace labelled later", || async {
            late_copies.get_opt("shared-settings").await.ok().flatten()
        })
        .await;

        let unlabel = json!({"metadata": {"labels": {"configmap-sync.wasmop.dev/source": null}}});
        copy_in(&source_ns)
            .patch(
                "shared-settings",
                &PatchParams::default(),
                &Patch::Merge(&unlabel),
            )
            .await?;
        eventually("the copies removed with the source label", || async {
            let early_gone = early_copies
                .get_opt("shared-settings")
                .await
                .ok()?
                .is_none();
            let late_gone = late_copies.get_opt("shared-settings").await.ok()?.is_none();
            (early_gone && late_gone).then_some(())
        })
        .await;
        manager.stop().await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn undeclared_writes_never_reach_the_apiserver_and_plugins_share_watches()
-> anyhow::Result<()> {
    within(LIMIT, "permissions and shared watches", async {
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("undeclared").await?;
        let mut manager = Manager::new(client.clone(), ManagerOptions::default())?;
        manager
            .add_plugin(
                &common::component("guest-undeclared-write"),
                PluginOptions::default(),
            )
            .await?;
        manager
            .add_plugin(&common::component("guest-good"), PluginOptions::default())
            .await?;
        let configmaps = GroupVersionKind::gvk("", "v1", "ConfigMap");
        assert_eq!(
            manager.cache().kinds(),
            [configmaps],
            "two ConfigMap plugins, one watch"
        );

        let victim = labelled(&namespace, "victim", json!({}))?;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        api.create(&Default::default(), &victim).await?;
        eventually("guest-good to annotate the ConfigMap", || async {
            let cm = api.get("victim").await.ok()?;
            cm.metadata
                .annotations?
                .contains_key("guest-good.wasmop.dev/seen")
                .then_some(())
        })
        .await;
        let sneaky = manager
            .controller("guest-undeclared-write")
            .unwrap()
            .stats();
        eventually("the forbidden reconcile to be reported", || async {
            (sneaky.terminal.load(std::sync::atomic::Ordering::Relaxed) > 0).then_some(())
        })
        .await;
        let secrets: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(client.clone(), &namespace);
        assert!(
            secrets.get_opt("victim").await?.is_none(),
            "an undeclared Secret was created"
        );
        manager.stop().await?;
        Ok(())
    })
    .await
}

/// How many times guest-handler reconciled ConfigMap `name` (its annotation), if it did.
async fn handled_reconciles(api: &Api<ConfigMap>, name: &str) -> Option<String> {
    let annotations = api.get(name).await.ok()?.metadata.annotations?;
    annotations
        .get("guest-handler.wasmop.dev/reconciles")
        .cloned()
}

/// Waits until guest-handler reconciled ConfigMap `name` `count` times.
async fn reconciled_times(api: &Api<ConfigMap>, name: &str, count: &str) {
    eventually(&format!("{name} reconciled {count} times"), || async {
        (handled_reconciles(api, name).await? == count).then_some(())
    })
    .await
}

/// guest-handler's own handler filters creates by name and updates by comparing the old and the
/// new object, and maps deletions to another object. One worker and one handler task take changes
/// in the order the watch delivered them, so once a later object is reconciled, an earlier one's
/// change was handled: what it left unreconciled, it refused.
#[tokio::test]
async fn changes_a_plugin_handles_itself_reach_the_queue_as_it_says() -> anyhow::Result<()> {
    within(LIMIT, "guest-handler on the real control plane", async {
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("handled").await?;
        let mut manager = Manager::new(client.clone(), ManagerOptions::default())?;
        let component = common::component("guest-handler");
        manager
            .add_plugin(&component, PluginOptions::default())
            .await?;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        for name in ["ledger", "plain", "handled-a", "handled-b"] {
            let object = json!({"metadata": {"name": name}, "data": {"mode": "1"}});
            let object: ConfigMap = serde_json::from_value(object)?;
            api.create(&Default::default(), &object).await?;
        }
        for name in ["ledger", "handled-a", "handled-b"] {
            reconciled_times(&api, name, "1").await;
        }
        assert_eq!(
            handled_reconciles(&api, "plain").await,
            None,
            "a create it filtered out"
        );

        let patch = |data: serde_json::Value| Patch::Merge(json!({"data": data}));
        let params = PatchParams::default();
        api.patch("handled-b", &params, &patch(json!({"other": "x"})))
            .await?;
        api.patch("handled-a", &params, &patch(json!({"mode": "2"})))
            .await?;
        reconciled_times(&api, "handled-a", "2").await;
        let kept = handled_reconciles(&api, "handled-b").await;
        assert_eq!(kept.as_deref(), Some("1"), "an update that kept data.mode");

        api.delete("handled-b", &Default::default()).await?;
        reconciled_times(&api, "ledger", "2").await;
        assert_eq!(
            handled_reconciles(&api, "handled-a").await.as_deref(),
            Some("2")
        );
        manager.stop().await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_event_storm_is_deduplicated_into_few_reconciles() -> anyhow::Result<()> {
    within(LIMIT, "an event storm", async {
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("storm").await?;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        api.create(&Default::default(), &labelled(&namespace, "stormy", json!({}))?).await?;
        let mut manager = Manager::new(client.clone(), ManagerOptions::default())?;
        manager.add_plugin(&common::component("guest-slow"), PluginOptions::default()).await?;
        manager.add_plugin(&common::component("guest-good"), PluginOptions::default()).await?;
        let (slow, good) = (
            manager.controller("guest-slow").unwrap(),
            manager.controller("guest-good").unwrap(),
        );
        let settled = |what| {
            eventually(what, || async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                (slow.queue_depth() == 0 && good.queue_depth() == 0).then_some(())
            })
        };
        settled("the initial reconciles").await;

        let before = slow.stats().total();
        let updates: u64 = 200;
        let patches = (0..updates).map(|i| {
            let api = api.clone();
            async move {
                let data = json!({"data": {"counter": i.to_string()}});
                api.patch("stormy", &PatchParams::default(), &Patch::Merge(&data)).await
            }
        });
        use futures::{StreamExt, TryStreamExt};
        futures::stream::iter(patches).buffer_unordered(50).try_collect::<Vec<_>>().await?;
        settled("the storm to be worked off").await;
        let reconciles = slow.stats().total() - before;
        println!("{updates} updates of one ConfigMap led to {reconciles} reconciles of a 50 ms reconciler");
        // Without deduplication each update is a reconcile; how many merge depends on how fast the
        // apiserver delivers them against the 50 ms reconciles (45-49 of 200 on a quiet machine,
        // 104 with four integration tests at once on a cold clean-clone run).
        assert!(reconciles < updates * 3 / 4, "{reconciles} reconciles for {updates} updates: no deduplication");
        assert!(reconciles >= 1, "the storm was never reconciled");
        let final_state = api.get("stormy").await?;
        assert_eq!(final_state.data.unwrap_or_default().len(), 2, "the last update is there");
        assert!(final_state.metadata.annotations.unwrap_or_default().contains_key("guest-good.wasmop.dev/seen"));
        manager.stop().await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_failing_plugin_backs_off_exponentially_while_another_keeps_working() -> anyhow::Result<()>
{
    within(LIMIT, "backoff of a failing plugin", async {
        // Its own control plane: the failing plugin fails for every ConfigMap in the cluster, and
        // on the shared one other tests' ConfigMaps would spend the global retry budget.
        let plane = ControlPlane::start().await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("backoff").await?;
        let mut manager = Manager::new(client.clone(), ManagerOptions::default())?;
        manager
            .add_plugin(&common::component("guest-panic"), PluginOptions::default())
            .await?;
        manager
            .add_plugin(&common::component("guest-good"), PluginOptions::default())
            .await?;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        api.create(
            &Default::default(),
            &labelled(&namespace, "doomed", json!({}))?,
        )
        .await?;

        // guest-good's write is a watch event that wakes the failing key out of its backoff at
        // once (as in controller-runtime); once the cache holds it, nothing else touches the object.
        let key = ObjectKey::new(&namespace, "doomed");
        let configmaps = manager
            .cache()
            .running(&GroupVersionKind::gvk("", "v1", "ConfigMap"))
            .expect("both plugins watch ConfigMaps");
        eventually("guest-good to keep reconciling", || async {
            configmaps
                .get(&key)?
                .annotations
                .get("guest-good.wasmop.dev/seen")
                .map(drop)
        })
        .await;
        let failing = manager.controller("guest-panic").unwrap();
        // From the sixth retry on, the backoff (160 ms and up) outweighs the reconcile itself.
        let from = (failing.retries(&key) + 1).max(6);
        let gaps = retry_gaps(failing, &key, from, from + 6).await;
        println!("gaps between retries from retry {from}: {gaps:?}");
        let (Some(&(early, early_gap)), Some(&(late, late_gap))) = (gaps.first(), gaps.last())
        else {
            panic!("no two consecutive retries were seen");
        };
        assert!(
            late - early >= 4,
            "too few retries timed to judge: {gaps:?}"
        );
        // Nominally `late - early` doublings; two of them are slack for the reconcile's own time,
        // which still tells doubling apart from a linear or constant backoff.
        assert!(
            late_gap >= early_gap * 2u32.pow(late - early - 2),
            "retry gaps {gaps:?} do not grow exponentially"
        );
        assert!(
            gaps.windows(2).all(|w| w[1].1 * 2 >= w[0].1),
            "a retry gap shrank: {gaps:?}"
        );
        manager.stop().await?;
        Ok(())
    })
    .await
}

/// The WebApp CRD written without a status subresource, as a newcomer's first CRD may be.
fn webapp_crd_without_status(dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    let crd = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/webapp.yaml");
    let text = std::fs::read_to_string(crd)?;
    let without = text.replace("      subresources:\n        status: {}\n", "");
    anyhow::ensure!(
        without != text && !without.contains("status: {}"),
        "the CRD's subresources moved"
    );
    let path = dir.join("webapp-without-status.yaml");
    std::fs::write(&path, without)?;
    Ok(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_is_named_and_a_missing_status_subresource_suggested() -> anyhow::Result<()>
{
    within(LIMIT, "a status write to a CRD without the subresource", async {
        let plane = &shared_by(module_path!()).await?;
        let dir = tempfile::tempdir()?;
        plane.install_crds(&[webapp_crd_without_status(dir.path())?]).await?;
        let namespace = plane.create_namespace("no-status").await?;
        let mut command = common::host(plane);
        command
            .arg("--plugin")
            .arg(common::component("webapp"))
            .args(["--namespaces", &namespace])
            .args(["--metrics-bind-address", "0", "--health-probe-bind-address", "0"]);
        let host = common::logged::Logged::spawn("no-status", command)?;
        let webapp = "apiVersion: example.wasmop.dev/v1alpha1\nkind: WebApp\nmetadata: {name: web}\n\
                      spec: {image: nginx:1.27, replicas: 1, port: 8080}\n";
        plane.run_kubectl(&["apply", "-n", &namespace, "-f", "-"], Some(webapp)).await?;

        let failed = format!("reconcile of {namespace}/web failed");
        let line = eventually("the failed reconcile in the log", || async {
            host.log().into_iter().find(|line| line.contains(&failed))
        })
        .await;
        println!("the host said: {line}");
        let write = format!("merge-patch (status) WebApp.example.wasmop.dev/v1alpha1 {namespace}/web failed");
        assert!(line.contains(&write), "the write is not named: {line}");
        assert!(line.contains("spec.versions[].subresources.status"), "no hint: {line}");
        // Loaded once, before its controller started: one line says so.
        assert_eq!(host.count("plugin installed"), 1, "{:#?}", host.log());
        common::terminate(host.child).await
    })
    .await
}
