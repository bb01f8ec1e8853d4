//! The `WasmReconciler` source (`wasmop.dev/v1alpha1`, cluster-scoped): each object names a
//! module ([`ModuleRef`]), per-plugin overrides and a policy narrowing the operator's ceiling for
//! its plugin; its plugin's source is `wasmreconciler/<name>`.
//!
//! Every replica watches the objects and loads their modules, so followers stay warm; only the
//! replica that runs controllers writes the status: `Loaded` (a version is loaded), `Ready` (the
//! latest generation loaded), `Degraded` (why the latest generation did not: spec, fetch, digest,
//! load or take-over failure, with the message), the running version, digest and plugin name,
//! and `observedGeneration`. A failed generation is retried every [`RETRY_PERIOD`] while the
//! running version stays. `paused: true` unloads the plugin until unpaused. Deleting the object
//! unloads the plugin.
//!
//! Fetching and compiling a module take seconds, so each object's install runs as a task of its
//! own: a slow download or compile never delays another object. One object has at most one
//! install in flight; what arrives for it meanwhile (a newer generation, its deletion) waits and
//! is applied when that install ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use tokio::task::JoinSet;

use futures::StreamExt;
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};

use super::PluginError;
use super::module::ModuleRef;
use super::{PluginHandle, PluginStatus};
use crate::config::{PluginLimits, bytes, duration};

/// How often a generation that failed is tried again.
pub const RETRY_PERIOD: Duration = Duration::from_secs(10);

/// The field manager of status writes.
const MANAGER: &str = "wasmop";

/// `spec` of a WasmReconciler.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    module: ModuleRef,
    memory_limit: Option<String>,
    reconcile_timeout: Option<String>,
    max_concurrent_reconciles: Option<u32>,
    warm_instances: Option<usize>,
    #[serde(default)]
    paused: bool,
    /// A ceiling of this plugin's own, narrowing the operator's `--policy`.
    policy: Option<Value>,
}

/// How the last attempt at an object's generation went.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Installed,
    Paused,
    Failed {
        reason: &'static str,
        message: String,
    },
}

struct Tracked {
    object: DynamicObject,
    outcome: Outcome,
    reported: bool,
}

/// Watches WasmReconcilers and keeps the manager's plugins in step with them.
pub struct WasmReconcilers {
    api: Api<DynamicObject>,
    installer: Installer,
    plugins: PluginHandle,
    tracked: HashMap<String, Tracked>,
    /// Installs in flight, one per object at most.
    installing: JoinSet<(String, DynamicObject, Outcome)>,
    /// What arrived for an object while its install ran: its latest state, or `None` once deleted.
    waiting: HashMap<String, Option<DynamicObject>>,
}

/// What an install task needs: it fetches, compiles and installs one object's module.
#[derive(Clone)]
struct Installer {
    client: kube::Client,
    plugins: PluginHandle,
    limits: PluginLimits,
}

impl WasmReconcilers {
    /// A source installing through `plugins`, with `limits` as the defaults spec overrides.
    pub fn new(client: kube::Client, plugins: PluginHandle, limits: PluginLimits) -> Self {
        let kind = GroupVersionKind::gvk("wasmop.dev", "v1alpha1", "WasmReconciler");
        let resource = ApiResource::from_gvk_with_plural(&kind, "wasmreconcilers");
        WasmReconcilers {
            api: Api::all_with(client.clone(), &resource),
            installer: Installer {
                client,
                plugins: plugins.clone(),
                limits,
            },
            plugins,
            tracked: HashMap::new(),
            installing: JoinSet::new(),
            waiting: HashMap::new(),
        }
    }

    /// Runs until the task is dropped.
    pub async fn run(mut self) {
        let events =
            watcher::watcher(self.api.clone(), watcher::Config::default()).default_backoff();
        futures::pin_mut!(events);
        let mut retry = tokio::time::interval(RETRY_PERIOD);
        let mut listed: Option<Vec<String>> = None;
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(Event::Apply(object))) => self.apply(object, false).await,
                    Some(Ok(Event::InitApply(object))) => {
                        listed.get_or_insert_default().push(object.metadata.name.clone().unwrap_or_default());
                        self.apply(object, false).await;
                    }
                    Some(Ok(Event::Init)) => listed = Some(Vec::new()),
                    Some(Ok(Event::InitDone)) => self.relisted(listed.take().unwrap_or_default()).await,
                    Some(Ok(Event::Delete(object))) => self.delete(&object.metadata.name.unwrap_or_default()).await,
                    Some(Err(error)) => tracing::warn!("watching WasmReconcilers failed, retrying: {error}"),
                    None => return,
                },
                Some(done) = self.installing.join_next(), if !self.installing.is_empty() => {
                    match done {
                        Ok((name, object, outcome)) => self.installed(name, object, outcome).await,
                        Err(error) => tracing::error!("a WasmReconciler install failed: {error}"),
                    }
                }
                _ = retry.tick() => self.retry().await,
            }
        }
    }

    /// Acts on a new generation of `object`; the same generation again (a status write, a
    /// relist) only refreshes what is remembered of it, unless `retry` is set. While the object's
    /// previous install runs, the object waits for it.
    async fn apply(&mut self, object: DynamicObject, retry: bool) {
        let name = object.metadata.name.clone().unwrap_or_default();
        if let Some(waiting) = self.waiting.get_mut(&name) {
            *waiting = Some(object);
            return;
        }
        if let Some(tracked) = self.tracked.get_mut(&name)
            && tracked.object.metadata.generation == object.metadata.generation
            && !retry
        {
            tracked.object = object;
            return;
        }
        self.waiting.insert(name.clone(), Some(object.clone()));
        let installer = self.installer.clone();
        self.installing.spawn(async move {
            let outcome = installer.install(&name, &object).await;
            (name, object, outcome)
        });
    }

    /// Records how `name`'s install went, then applies what arrived for it meanwhile.
    async fn installed(&mut self, name: String, object: DynamicObject, outcome: Outcome) {
        let waiting = self.waiting.remove(&name).flatten();
        let Some(latest) = waiting else {
            // Deleted while installing: unload what the install may have loaded.
            let _ = self.plugins.remove(&source(&name)).await;
            return;
        };
        let tracked = Tracked {
            object,
            outcome,
            reported: false,
        };
        self.tracked.insert(name.clone(), tracked);
        self.report(&name).await;
        self.apply(latest, false).await;
    }
}

impl Installer {
    async fn install(&self, name: &str, object: &DynamicObject) -> Outcome {
        let spec: Spec = match serde_json::from_value(object.data["spec"].clone()) {
            Ok(spec) => spec,
            Err(error) => return failed("InvalidSpec", format!("spec: {error}")),
        };
        let source = source(name);
        if spec.paused {
            let _ = self.plugins.remove(&source).await;
            return Outcome::Paused;
        }
        let limits = match self.limits_for(&spec) {
            Ok(limits) => limits,
            Err(message) => return failed("InvalidSpec", message),
        };
        let bytes = match spec.module.fetch(&self.client).await {
            Ok(bytes) => bytes,
            Err(error @ super::module::ModuleError::Digest { .. }) => {
                return failed("DigestMismatch", error.to_string());
            }
            Err(error) => return failed("FetchFailed", error.to_string()),
        };
        let mut options = limits.options();
        if let Some(policy) = &spec.policy {
            match crate::config::ceiling(policy) {
                Ok(ceiling) => options.ceiling = Some(ceiling),
                Err(message) => return failed("InvalidSpec", format!("spec.policy: {message}")),
            }
        }
        let file = PathBuf::from(format!("{source}.wasm"));
        match self.plugins.install(&source, &file, bytes, options).await {
            Ok(_) => Outcome::Installed,
            Err(error @ PluginError::Forbidden { .. }) => failed("Forbidden", error.to_string()),
            Err(error) => failed("LoadFailed", error.to_string()),
        }
    }

    fn limits_for(&self, spec: &Spec) -> Result<PluginLimits, String> {
        let mut limits = self.limits.clone();
        if let Some(memory) = &spec.memory_limit {
            limits.memory_limit = bytes(memory).map_err(|e| format!("spec.memoryLimit: {e}"))?;
        }
        if let Some(timeout) = &spec.reconcile_timeout {
            let timeout = duration(timeout).map_err(|e| format!("spec.reconcileTimeout: {e}"))?;
            limits.reconcile_timeout = Some(timeout);
        }
        limits.max_concurrent_reconciles = spec
            .max_concurrent_reconciles
            .or(limits.max_concurrent_reconciles);
        limits.warm_instances = spec.warm_instances.unwrap_or(limits.warm_instances);
        Ok(limits)
    }
}

impl WasmReconcilers {
    async fn delete(&mut self, name: &str) {
        self.tracked.remove(name);
        if let Some(waiting) = self.waiting.get_mut(name) {
            *waiting = None;
            return;
        }
        let _ = self.plugins.remove(&source(name)).await;
    }

    /// Unloads what a completed relist no longer lists.
    async fn relisted(&mut self, listed: Vec<String>) {
        let gone: Vec<String> = self
            .tracked
            .keys()
            .filter(|name| !listed.contains(name))
            .cloned()
            .collect();
        for name in gone {
            self.delete(&name).await;
        }
    }

    /// Retries failed generations and writes statuses not yet written (after gaining the lead).
    async fn retry(&mut self) {
        let failed: Vec<DynamicObject> = self
            .tracked
            .values()
            .filter(|t| matches!(t.outcome, Outcome::Failed { .. }))
            .map(|t| t.object.clone())
            .collect();
        for object in failed {
            self.apply(object, true).await;
        }
        let unreported: Vec<String> = self
            .tracked
            .iter()
            .filter(|(_, t)| !t.reported)
            .map(|(name, _)| name.clone())
            .collect();
        for name in unreported {
            self.report(&name).await;
        }
    }

    /// Writes the status of `name` if this replica speaks for the plugins.
    async fn report(&mut self, name: &str) {
        if !self.plugins.leading() {
            return;
        }
        let Some(tracked) = self.tracked.get(name) else {
            return;
        };
        let statuses = self.plugins.list().await.unwrap_or_default();
        let plugin = statuses.iter().find(|s| s.source == source(name));
        let status = status(&tracked.object, &tracked.outcome, plugin);
        let patch = json!({ "status": status });
        let params = PatchParams {
            field_manager: Some(MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let written = self
            .api
            .patch_status(name, &params, &Patch::Merge(&patch))
            .await;
        match written {
            Ok(_) => {
                if let Some(tracked) = self.tracked.get_mut(name) {
                    tracked.reported = true;
                }
            }
            Err(error) => {
                tracing::warn!(wasmreconciler = name, "writing the status failed: {error}")
            }
        }
    }
}

fn failed(reason: &'static str, message: String) -> Outcome {
    Outcome::Failed { reason, message }
}

fn source(name: &str) -> String {
    format!("wasmreconciler/{name}")
}

/// The status for `object` after `outcome`, with the running plugin `plugin` if any.
fn status(object: &DynamicObject, outcome: &Outcome, plugin: Option<&PluginStatus>) -> Value {
    let generation = object.metadata.generation;
    let loaded = plugin.is_some_and(|p| p.version.is_some());
    let previous = object.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let condition = |kind: &str, on: bool, reason: &str, message: &str| {
        let state = if on { "True" } else { "False" };
        let unchanged = previous
            .iter()
            .find(|c| c["type"] == kind && c["status"] == state)
            .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned));
        json!({
            "type": kind, "status": state, "reason": reason, "message": message,
            "observedGeneration": generation,
            "lastTransitionTime": unchanged.unwrap_or_else(now),
        })
    };
    let (ready, degraded) = match outcome {
        Outcome::Installed => (
            condition("Ready", true, "Loaded", "the latest generation is loaded"),
            condition("Degraded", false, "Loaded", ""),
        ),
        Outcome::Paused => (
            condition(
                "Ready",
                false,
                "Paused",
                "spec.paused is true: the plugin is unloaded",
            ),
            condition("Degraded", false, "Paused", ""),
        ),
        Outcome::Failed { reason, message } => (
            condition("Ready", false, reason, "the latest generation did not load"),
            condition("Degraded", true, reason, message),
        ),
    };
    let loaded_message = match loaded {
        true => "a version of the plugin is loaded",
        false => "no version of the plugin is loaded",
    };
    json!({
        "observedGeneration": generation,
        "name": plugin.and_then(|p| p.name.clone()),
        "version": plugin.and_then(|p| p.version.clone()),
        "digest": plugin.and_then(|p| p.digest.clone()),
        "conditions": [
            condition("Loaded", loaded, if loaded { "Loaded" } else { "NotLoaded" }, loaded_message),
            ready,
            degraded,
        ],
    })
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_default()
}
