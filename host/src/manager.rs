//! The manager owns the shared parts — the WebAssembly runtime, the informer cache, the apiserver
//! client — and one controller per loaded plugin. Controllers start only after their informers
//! have synced, and stop (draining in-flight reconciles) before the cache lets go of the watches.

use std::path::Path;
use std::sync::Arc;

use crate::cache::{Cache, CacheError};
use crate::client::PluginClient;
use crate::controller::Controller;
use crate::events::Events;
use crate::metrics::Metrics;
use crate::runtime::{Plugin, PluginOptions, Runtime, RuntimeConfig, RuntimeError, Services};

/// A plugin could not be added.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// It did not load.
    #[error(transparent)]
    Load(#[from] RuntimeError),
    /// Its informers could not start.
    #[error("plugin {plugin}: {source}")]
    Cache {
        /// The plugin.
        plugin: String,
        /// What the cache said.
        source: CacheError,
    },
}

/// Shared runtime, cache and client, and the running controllers.
pub struct Manager {
    client: kube::Client,
    runtime: Runtime,
    cache: Arc<Cache>,
    metrics: Arc<Metrics>,
    controllers: Vec<Controller>,
}

impl Manager {
    /// A manager talking to the cluster through `client`.
    pub fn new(client: kube::Client, runtime: RuntimeConfig) -> Result<Self, RuntimeError> {
        let cache = Arc::new(Cache::new(client.clone()));
        let metrics = Arc::new(Metrics::new());
        metrics.watch_cache(&cache);
        Ok(Manager {
            cache,
            runtime: Runtime::new(runtime)?,
            client,
            metrics,
            controllers: Vec::new(),
        })
    }

    /// Loads the plugin in `file` and starts its controller once its informers have synced.
    pub async fn add_plugin(
        &mut self,
        file: &Path,
        options: PluginOptions,
    ) -> Result<&Controller, ManagerError> {
        let plugin = self.load_plugin(file, options).await?;
        self.start_plugin(plugin).await
    }

    /// Compiles, validates and describes the plugin in `file` without running it (as a follower
    /// does, to take over warm).
    pub async fn load_plugin(
        &self,
        file: &Path,
        options: PluginOptions,
    ) -> Result<Arc<Plugin>, ManagerError> {
        let (client, cache) = (self.client.clone(), self.cache.clone());
        let services = move |registration: &crate::runtime::Registration| {
            let plugin = PluginClient::new(client.clone(), cache, &registration.name);
            Services {
                cache: Arc::new(plugin.clone()),
                writer: Arc::new(plugin),
                events: Arc::new(Events::new(client)),
            }
        };
        Ok(Arc::new(self.runtime.load(file, options, services).await?))
    }

    /// Starts a loaded plugin's controller once its informers have synced.
    pub async fn start_plugin(&mut self, plugin: Arc<Plugin>) -> Result<&Controller, ManagerError> {
        let name = plugin.name().to_owned();
        let metrics = self.metrics.controller(&name);
        let controller = Controller::start(&self.cache, plugin, metrics)
            .await
            .map_err(|source| ManagerError::Cache {
                plugin: name,
                source,
            })?;
        self.controllers.push(controller);
        Ok(self.controllers.last().expect("just pushed"))
    }

    /// The running controllers.
    pub fn controllers(&self) -> &[Controller] {
        &self.controllers
    }

    /// The WebAssembly runtime.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The process's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The shared cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Stops every controller, letting in-flight reconciles finish.
    pub async fn stop(self) {
        for controller in self.controllers {
            controller.stop().await;
        }
    }
}
