//! Compiling, checking and describing a module into a [`Plugin`] whose imports reach the shared
//! cache and the apiserver — the part of installing a plugin that takes seconds, done by whoever
//! asks, never by the manager's loop. Each plugin's counts go to the process's metrics as they
//! happen.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::access;
use super::error::PluginError;
use crate::cache::Cache;
use crate::client::PluginClient;
use crate::distribution::digest;
use crate::events::Events;
use crate::identity::{Identities, Installer};
use crate::metrics::{Metrics, PluginMetrics};
use crate::runtime::{Plugin, PluginOptions, Runtime, RuntimeError};
use wasmop_contract::environment::controller_label;
use wasmop_contract::{Observer, Refusal, Registration, Reviewer, Rights, Services};

/// Turns modules into plugins wired to the manager's cache and client.
#[derive(Clone)]
pub struct Loader {
    runtime: Arc<Runtime>,
    client: kube::Client,
    cache: Arc<Cache>,
    identities: Option<Identities>,
    metrics: Arc<Metrics>,
}

impl Observer for PluginMetrics {
    fn instantiated(&self, took: Duration) {
        PluginMetrics::instantiated(self, took);
    }

    fn refused(&self, why: Refusal) {
        PluginMetrics::refused(self, why.label());
    }

    fn memory(&self, bytes: usize) {
        PluginMetrics::memory(self, bytes);
    }

    fn suspended(&self) {
        PluginMetrics::suspended(self);
    }

    fn woke(&self, took: Duration) {
        PluginMetrics::woke(self, took);
    }
}

impl Loader {
    /// A loader on `runtime` whose plugins read `cache`, write through `client` (or as their
    /// own identities when `identities` is set) and count into `metrics`.
    pub fn new(
        runtime: Arc<Runtime>,
        client: kube::Client,
        cache: Arc<Cache>,
        identities: Option<Identities>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Loader {
            runtime,
            client,
            cache,
            identities,
            metrics,
        }
    }

    /// The process's metrics, which count every load.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The WebAssembly runtime.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Loads the module `bytes`; `file` names it in errors and, in identity mode, is the source
    /// whose identity it runs as (a declared name that differs is refused). A plugin declaring
    /// what its identity (the operator's, or its own) may not do is refused ([`super::access`]);
    /// in identity mode its reads are reviewed again while it lives, and those its identity
    /// loses are refused ([`Rights`]).
    pub async fn load(
        &self,
        file: &Path,
        bytes: Vec<u8>,
        mut options: PluginOptions,
    ) -> Result<Arc<Plugin>, PluginError> {
        if self.identities.is_some() {
            options.identity = Some(source_identity(file, &options));
        }
        let home = options.home.clone();
        let installer = Installer::of(options.tenant.is_some(), home.as_deref());
        let identity = std::sync::OnceLock::new();
        let reviewed = std::sync::OnceLock::new();
        let services = |registration: &Registration| {
            let client = identity.get_or_init(|| self.client_for(&registration.name, installer));
            // A plugin whose identity cannot be built is refused below, before it ever runs.
            let client = client.as_ref().unwrap_or(&self.client).clone();
            let plugin = PluginClient::new(client.clone(), self.cache.clone(), &registration.name)
                .sharding(&registration.primary, &registration.owns);
            let rights = self.identities.as_ref().map(|identities| {
                Arc::new(Rights::new(identities.user(&registration.name, installer)))
            });
            let _ = reviewed.set(rights.clone());
            Services {
                cache: Arc::new(plugin.clone()),
                writer: Arc::new(plugin.clone()),
                transport: Arc::new(plugin),
                events: Arc::new(Events::new(client, &registration.name)),
                observer: Arc::new(self.metrics.plugin(&registration.name)),
                rights,
            }
        };
        let plugin = self
            .runtime
            .load_bytes(file, bytes, options, services)
            .await?;
        let client = match identity.into_inner() {
            Some(client) => client?,
            None => self.client_for(plugin.name(), installer)?,
        };
        let namespaces = self.cache.namespaces();
        let speaks_as = self.identities.as_ref().map_or_else(
            || "the operator's service account".to_owned(),
            |identities| identities.user(plugin.name(), installer),
        );
        access::check(&client, &speaks_as, namespaces, plugin.registration()).await?;
        if let Some(rights) = reviewed.into_inner().flatten() {
            let registration = Arc::new(plugin.registration().clone());
            let reviewing = access::keep_reviewing(
                client,
                namespaces.clone(),
                registration,
                Arc::downgrade(&rights),
            );
            rights.reviewed_by(Box::new(Review(tokio::spawn(reviewing).abort_handle())));
        }
        Ok(Arc::new(plugin))
    }

    /// The client plugin `name` writes through: its own identity's (by who installed it), or the
    /// operator's.
    fn client_for(&self, name: &str, installer: Installer) -> Result<kube::Client, PluginError> {
        let Some(identities) = &self.identities else {
            return Ok(self.client.clone());
        };
        identities
            .client(name, installer)
            .map_err(|source| PluginError::Identity {
                plugin: name.to_owned(),
                user: identities.user(name, installer),
                source: Box::new(source),
            })
    }

    /// Reads the module in `file` once, checks the signature beside it on those bytes (as the
    /// operator's policy asks, [`super::signed`]) and loads those same bytes; with their digest.
    pub async fn load_file(
        &self,
        file: &Path,
        options: PluginOptions,
    ) -> Result<(Arc<Plugin>, String), PluginError> {
        let bytes = tokio::fs::read(file)
            .await
            .map_err(|source| RuntimeError::Read {
                file: file.to_owned(),
                source,
            })?;
        super::signed::check(self.runtime.ceiling(), file, &bytes).await?;
        let digest = digest(&bytes);
        Ok((self.load(file, bytes, options).await?, digest))
    }
}

/// The identity a module from `file` runs as: its file name without `.wasm` (a
/// `WasmReconciler`'s module is named after the object), never the name the module declares; for
/// one of an operator's modules of several controllers, that and the selected controller's label.
fn source_identity(file: &Path, options: &PluginOptions) -> String {
    let stem = file
        .file_stem()
        .map_or_else(String::new, |stem| stem.to_string_lossy().into_owned());
    match (options.environment.controller(), &options.tenant) {
        (Some(controller), None) => format!("{stem}-{}", controller_label(controller)),
        _ => stem,
    }
}

/// The task reviewing a plugin identity's rights, stopped when the rights are dropped.
#[derive(Debug)]
struct Review(tokio::task::AbortHandle);

impl Reviewer for Review {
    fn stop(&self) {
        self.0.abort();
    }
}
