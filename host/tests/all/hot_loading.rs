//! Upgrading a plugin inside a running manager on the real control plane: under a steady stream
//! of changes to 500 WebApps, `webapp` 0.1.0 is replaced by 0.2.0. Every WebApp ends converged on
//! its last change with its Deployment stamped by 0.2.0, no Deployment is stamped by 0.1.0 after
//! 0.2.0 has stamped it, and `configmap-sync` keeps answering meanwhile.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use wasmop::manager::{Manager, ManagerOptions};
use wasmop::runtime::{PluginOptions, RuntimeConfig};
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(600);
const APPS: usize = 500;
const APPLIED_BY: &str = "example.wasmop.dev/applied-by";

/// Each Deployment's applied-by stamps in the order the watch saw them.
type Stamps = Arc<Mutex<HashMap<String, Vec<String>>>>;

fn record_stamps(deployments: Api<Deployment>) -> (Stamps, tokio::task::JoinHandle<()>) {
    let stamps = Stamps::default();
    let recorder = stamps.clone();
    let task = tokio::spawn(async move {
        let events = watcher(deployments, watcher::Config::default()).applied_objects();
        futures::pin_mut!(events);
        while let Some(Ok(deployment)) = events.next().await {
            let (Some(name), Some(stamp)) = (
                deployment.metadata.name.clone(),
                deployment
                    .metadata
                    .annotations
                    .and_then(|a| a.get(APPLIED_BY).cloned()),
            ) else {
                continue;
            };
            let mut stamps = recorder.lock().unwrap();
            let seen = stamps.entry(name).or_default();
            if seen.last() != Some(&stamp) {
                seen.push(stamp);
            }
        }
    });
    (stamps, task)
}

/// Patches WebApps round-robin until `stop` is set, remembering each one's last replica count.
fn steady_changes(
    apps: Api<DynamicObject>,
    last: Arc<Mutex<HashMap<String, i64>>>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for round in 0.. {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let name = format!("app-{}", round % APPS);
            let replicas = 2 + (round / APPS) as i64 % 3;
            let patch = json!({"spec": {"replicas": replicas}});
            let patched = apps
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            assert!(patched.is_ok(), "patching {name}: {patched:?}");
            last.lock().unwrap().insert(name, replicas);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

/// One change configmap-sync carried: when it was made and how long it took to arrive.
#[derive(Debug, Clone, Copy)]
struct Carried {
    made: Instant,
    took: Duration,
}

impl Carried {
    fn arrived(&self) -> Instant {
        self.made + self.took
    }
}

/// Makes a change to `source` and waits for configmap-sync to carry it into `copies`.
async fn carry(source: &Api<ConfigMap>, copies: &Api<ConfigMap>) -> anyhow::Result<Carried> {
    let made = Instant::now();
    let stamp = format!("{made:?}");
    let patch = json!({"data": {"stamp": stamp}});
    source
        .patch("settings", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    loop {
        let copy = copies.get_opt("settings").await?;
        if copy.and_then(|c| c.data?.get("stamp").cloned()) == Some(stamp.clone()) {
            return Ok(Carried {
                made,
                took: made.elapsed(),
            });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// At least `n` changes carried one after another, and more until `done` is set.
async fn carry_until(
    source: &Api<ConfigMap>,
    copies: &Api<ConfigMap>,
    n: usize,
    done: &AtomicBool,
) -> anyhow::Result<Vec<Carried>> {
    let mut carried = Vec::new();
    while carried.len() < n || !done.load(Ordering::Relaxed) {
        carried.push(carry(source, copies).await?);
    }
    Ok(carried)
}

fn median(carried: &[Carried]) -> Duration {
    let mut took: Vec<Duration> = carried.iter().map(|c| c.took).collect();
    took.sort();
    took[took.len() / 2]
}

/// Whether every WebApp is converged on `replicas` (its last change) and stamped `stamp`.
async fn all_converged(
    apps: &Api<DynamicObject>,
    deployments: &Api<Deployment>,
    last: &HashMap<String, i64>,
    stamp: &str,
) -> anyhow::Result<usize> {
    let deployments: HashMap<String, Deployment> = deployments
        .list(&Default::default())
        .await?
        .into_iter()
        .map(|d| (d.metadata.name.clone().unwrap_or_default(), d))
        .collect();
    let mut pending = 0;
    for app in apps.list(&Default::default()).await? {
        let name = app.metadata.name.clone().unwrap_or_default();
        let observed = app.data["status"]["observedGeneration"].as_i64() == app.metadata.generation;
        let deployment = deployments.get(&name);
        let stamped = deployment
            .and_then(|d| d.metadata.annotations.as_ref()?.get(APPLIED_BY))
            .is_some_and(|s| s == stamp);
        let replicas = deployment.and_then(|d| d.spec.replicas);
        let wanted = last
            .get(&name)
            .copied()
            .or(app.data["spec"]["replicas"].as_i64());
        if !(observed && stamped && replicas.map(i64::from) == wanted) {
            pending += 1;
        }
    }
    Ok(pending)
}

#[tokio::test]
async fn upgrading_webapp_under_load_loses_nothing_and_spares_configmap_sync() -> anyhow::Result<()>
{
    within(LIMIT, "upgrading webapp under load", async {
        let plane = &shared_by(module_path!()).await?;
        common::install_webapp_crd(plane).await?;
        let client = plane.client().await?;
        let (namespace, sync_from, sync_to) = (
            plane.create_namespace("upgrade").await?,
            plane.create_namespace("upgrade-sync-from").await?,
            plane.create_namespace("upgrade-sync-to").await?,
        );
        let target = json!({"metadata": {"labels": {"configmap-sync.wasmop.dev/target": "true"}}});
        Api::<Namespace>::all(client.clone())
            .patch(&sync_to, &PatchParams::default(), &Patch::Merge(&target))
            .await?;
        let source: Api<ConfigMap> = Api::namespaced(client.clone(), &sync_from);
        let copies: Api<ConfigMap> = Api::namespaced(client.clone(), &sync_to);
        source
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "metadata": {"name": "settings", "labels": {"configmap-sync.wasmop.dev/source": "true"}},
                    "data": {"stamp": "first"},
                }))?,
            )
            .await?;

        let webapp = common::component("webapp");
        // A new version is never in the compile cache: start from an empty one.
        let compiled = tempfile::tempdir()?;
        let options = ManagerOptions {
            runtime: RuntimeConfig {
                cache_dir: compiled.path().to_owned(),
                ..RuntimeConfig::default()
            },
            ..ManagerOptions::default()
        };
        let mut manager = Manager::new(client.clone(), options)?;
        manager.load_plugin(&webapp, PluginOptions::default()).await?;
        manager
            .load_plugin(&common::component("configmap-sync"), PluginOptions::default())
            .await?;
        let plugins = manager.handle();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(manager.run(async {
            let _ = stopped.await;
        }));

        let apps = common::webapps(client.clone(), &namespace);
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
        stream::iter(0..APPS)
            .map(|i| {
                let apps = apps.clone();
                async move { apps.create(&PostParams::default(), &common::webapp(&format!("app-{i}"))).await }
            })
            .buffer_unordered(16)
            .try_collect::<Vec<_>>()
            .await?;
        let (stamps, recorder) = record_stamps(deployments.clone());
        let last = Arc::new(Mutex::new(HashMap::new()));
        while all_converged(&apps, &deployments, &HashMap::new(), "webapp/0.1.0").await? > 0 {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let stop_changes = Arc::new(AtomicBool::new(false));
        let changes = steady_changes(apps.clone(), last.clone(), stop_changes.clone());
        let before = carry_until(&source, &copies, 9, &AtomicBool::new(true)).await?;

        let v2 = common::component("webapp-v2");
        let webapp_source = webapp.display().to_string();
        let upgraded = AtomicBool::new(false);
        let upgrade = async {
            let began = Instant::now();
            let installed = plugins
                .install(&webapp_source, &v2, std::fs::read(&v2)?, PluginOptions::default())
                .await;
            upgraded.store(true, Ordering::Relaxed);
            anyhow::Ok((installed?, began..Instant::now()))
        };
        let during = carry_until(&source, &copies, 9, &upgraded);
        let (installed, during) = tokio::join!(upgrade, during);
        let ((installed, upgrading), during) = (installed?, during?);
        println!(
            "upgrade under load: compiled and described in {:?}, swapped in {:?}; \
             configmap-sync median latency {:?} before, {:?} during ({} samples)",
            installed.loaded_in,
            installed.swapped_in,
            median(&before),
            median(&during),
            during.len()
        );

        tokio::time::sleep(Duration::from_secs(3)).await;
        stop_changes.store(true, Ordering::Relaxed);
        changes.await?;
        let converged_from = Instant::now();
        let last = last.lock().unwrap().clone();
        loop {
            let pending = all_converged(&apps, &deployments, &last, "webapp/0.2.0").await?;
            if pending == 0 {
                break;
            }
            println!("{pending} WebApps still to converge on 0.2.0");
            tokio::time::sleep(Duration::from_millis(2000)).await;
        }
        println!("all {APPS} WebApps on 0.2.0 and their last change {:?} after the load stopped", converged_from.elapsed());
        recorder.abort();
        let stamps = stamps.lock().unwrap().clone();
        for (name, seen) in &stamps {
            let upgraded = seen.iter().position(|s| s == "webapp/0.2.0");
            let regressed = upgraded.is_some_and(|at| seen[at..].iter().any(|s| s == "webapp/0.1.0"));
            assert!(!regressed, "{name} went back to 0.1.0 after 0.2.0: {seen:?}");
        }
        let inside = during
            .iter()
            .filter(|c| upgrading.contains(&c.made) && upgrading.contains(&c.arrived()))
            .count();
        assert!(
            inside >= 3,
            "configmap-sync carried {inside} changes while webapp was being upgraded"
        );
        let slowest = during.iter().map(|c| c.took).max().unwrap_or_default();
        assert!(
            slowest < installed.loaded_in / 2,
            "a change waited {slowest:?} for configmap-sync, as if for webapp's {:?} compile",
            installed.loaded_in
        );
        let statuses = plugins.statuses();
        let webapp_status = statuses
            .iter()
            .find(|s| s.name.as_deref() == Some("webapp"))
            .expect("webapp is listed");
        assert_eq!(webapp_status.version.as_deref(), Some("0.2.0"));
        assert_eq!(webapp_status.last_error, None);

        let _ = stop.send(());
        running.await??;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_bad_new_version_leaves_the_old_one_running_and_says_why() -> anyhow::Result<()> {
    within(Duration::from_secs(180), "refused upgrades", async {
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("refused").await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        let good = common::component("guest-good");
        let source = good.display().to_string();
        let mut manager = Manager::new(client, ManagerOptions::default())?;
        manager.load_plugin(&good, PluginOptions::default()).await?;
        let metrics = manager.metrics().clone();
        let plugins = manager.handle();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(manager.run(async {
            let _ = stopped.await;
        }));
        common::seen_by_good(&configmaps, "before").await?;

        let mut truncated = std::fs::read(&good)?;
        truncated.truncate(truncated.len() / 2);
        let bad = [
            ("corrupt", truncated, "corrupt.wasm could not be compiled"),
            (
                "wit2",
                std::fs::read(common::component("guest-wit2"))?,
                "wasmop:reconciler@2.0.0",
            ),
            (
                "describe-trap",
                std::fs::read(common::component("guest-describe-trap"))?,
                "no configuration for",
            ),
        ];
        for (name, bytes, expected) in bad {
            let file = std::path::PathBuf::from(format!("{name}.wasm"));
            let refused = plugins
                .install(&source, &file, bytes, PluginOptions::default())
                .await
                .expect_err(name)
                .to_string();
            println!("{name}: {refused}");
            assert!(refused.contains(expected), "{name}: {refused}");
            let statuses = plugins.statuses();
            let status = statuses
                .iter()
                .find(|s| s.source == source)
                .expect("listed");
            assert_eq!(status.name.as_deref(), Some("guest-good"), "{status:?}");
            assert_eq!(
                status.state,
                wasmop::plugins::PluginState::Running,
                "{status:?}"
            );
            assert_eq!(status.last_error.as_deref(), Some(refused.as_str()));
            common::seen_by_good(&configmaps, &format!("after-{name}")).await?;
        }

        let failures = metrics
            .gather()
            .lines()
            .find(|l| l.starts_with("wasmop_plugin_load_failures_total{") && l.contains(&source))
            .map(str::to_owned);
        assert!(
            failures.as_deref().is_some_and(|l| l.ends_with(" 3")),
            "{failures:?}"
        );
        let kinds = |text: &str| {
            text.lines()
                .any(|l| l.starts_with("wasmop_cache_objects{") && l.contains("kind=\"ConfigMap\""))
        };
        assert!(
            kinds(&metrics.gather()),
            "guest-good's ConfigMap informer runs"
        );
        assert!(plugins.remove(&source).await?);
        assert!(plugins.statuses().is_empty());
        assert!(
            !kinds(&metrics.gather()),
            "the ConfigMap informer only guest-good used stopped"
        );
        let _ = stop.send(());
        running.await??;
        Ok(())
    })
    .await
}
