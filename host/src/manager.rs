//! The manager owns the shared parts — the WebAssembly runtime, the informer cache, the apiserver
//! client, the metrics and probe endpoints, the leader elector — and one controller per plugin.
//!
//! Start order: endpoints ([`Manager::serve`]: alive, not ready) → plugins loaded
//! ([`Manager::load_plugin`]) → [`Manager::run`]: ready (followers too) → the Lease acquired when
//! electing → each controller once its informers have synced. Stop order is the reverse: not
//! ready → every controller stops taking work → in-flight reconciles finish within the grace
//! period (the rest are abandoned, and their keys listed again by the next leader) → the Lease
//! released, only once no reconcile of ours can still write → endpoints closed. Losing the Lease
//! stops the controllers at once and ends `run` with an error, so the process exits as
//! controller-runtime's does and restarts as a follower.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::cache::{Cache, CacheError, Namespaces};
use crate::client::PluginClient;
use crate::controller::Controller;
use crate::events::Events;
use crate::http::{self, Endpoints};
use crate::leader::{Elector, LeaderConfig, LeaderError};
use crate::metrics::Metrics;
use crate::runtime::{Plugin, PluginOptions, Runtime, RuntimeConfig, RuntimeError, Services};

/// The manager could not start, keep running, or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The runtime could not be built or a plugin did not load.
    #[error(transparent)]
    Load(#[from] RuntimeError),
    /// A plugin's informers could not start.
    #[error("plugin {plugin}: {source}")]
    Cache {
        /// The plugin.
        plugin: String,
        /// What the cache said.
        source: Box<CacheError>,
    },
    /// An endpoint address could not be listened on.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Leader election was misconfigured, or the Lease was lost.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// Reconciles were still running when the grace period ended.
    #[error("reconciles still running after the {0:?} grace period were abandoned")]
    GracePeriod(Duration),
}

/// How the manager is set up.
#[derive(Debug, Clone)]
pub struct ManagerOptions {
    /// The WebAssembly runtime's settings.
    pub runtime: RuntimeConfig,
    /// The namespaces the cache watches.
    pub namespaces: Namespaces,
    /// Where `/metrics` is served, if anywhere.
    pub metrics_address: Option<SocketAddr>,
    /// Where `/healthz` and `/readyz` are served, if anywhere.
    pub probe_address: Option<SocketAddr>,
    /// The Lease to hold while controllers run; without one they run at once.
    pub leader: Option<LeaderConfig>,
    /// How long in-flight reconciles may take to finish when stopping.
    pub grace_period: Duration,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            runtime: RuntimeConfig::default(),
            namespaces: Namespaces::All,
            metrics_address: None,
            probe_address: None,
            leader: None,
            grace_period: Duration::from_secs(30),
        }
    }
}

/// Shared runtime, cache, client and endpoints, and the plugins' controllers.
pub struct Manager {
    client: kube::Client,
    options: ManagerOptions,
    runtime: Runtime,
    cache: Arc<Cache>,
    metrics: Arc<Metrics>,
    endpoints: Arc<Endpoints>,
    servers: Vec<JoinHandle<()>>,
    loaded: Vec<Arc<Plugin>>,
    controllers: Vec<Controller>,
}

impl Manager {
    /// A manager talking to the cluster through `client`.
    pub fn new(client: kube::Client, options: ManagerOptions) -> Result<Self, ManagerError> {
        let cache = Arc::new(Cache::scoped(client.clone(), options.namespaces.clone()));
        let metrics = Arc::new(Metrics::new());
        metrics.watch_cache(&cache);
        Ok(Manager {
            runtime: Runtime::new(options.runtime.clone())?,
            endpoints: Endpoints::new(metrics.clone()),
            cache,
            client,
            metrics,
            options,
            servers: Vec::new(),
            loaded: Vec::new(),
            controllers: Vec::new(),
        })
    }

    /// Serves `/metrics`, `/healthz` and `/readyz` on the configured addresses (once if they are
    /// the same); `/readyz` fails until [`Manager::run`].
    pub async fn serve(&mut self) -> Result<(), ManagerError> {
        let mut addresses: Vec<SocketAddr> =
            [self.options.metrics_address, self.options.probe_address]
                .into_iter()
                .flatten()
                .collect();
        addresses.dedup();
        for address in addresses {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|source| ManagerError::Listen { address, source })?;
            tracing::info!(%address, "serving /metrics, /healthz and /readyz");
            let endpoints = self.endpoints.clone();
            self.servers
                .push(tokio::spawn(http::serve(listener, endpoints)));
        }
        Ok(())
    }

    /// Compiles, validates and describes the plugin in `file`; [`Manager::run`] starts it.
    pub async fn load_plugin(
        &mut self,
        file: &Path,
        options: PluginOptions,
    ) -> Result<Arc<Plugin>, ManagerError> {
        let plugin = self.load(file, options).await?;
        self.loaded.push(plugin.clone());
        Ok(plugin)
    }

    /// Loads the plugin in `file` and starts its controller once its informers have synced.
    pub async fn add_plugin(
        &mut self,
        file: &Path,
        options: PluginOptions,
    ) -> Result<&Controller, ManagerError> {
        let plugin = self.load(file, options).await?;
        self.start_plugin(plugin).await
    }

    async fn load(&self, file: &Path, options: PluginOptions) -> Result<Arc<Plugin>, ManagerError> {
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

    async fn start_plugin(&mut self, plugin: Arc<Plugin>) -> Result<&Controller, ManagerError> {
        let name = plugin.name().to_owned();
        let metrics = self.metrics.controller(&name);
        let controller = Controller::start(&self.cache, plugin, metrics)
            .await
            .map_err(|source| ManagerError::Cache {
                plugin: name,
                source: Box::new(source),
            })?;
        self.controllers.push(controller);
        Ok(self.controllers.last().expect("just pushed"))
    }

    /// Reports ready, waits for the Lease when electing, starts the loaded plugins' controllers
    /// and runs them until `shutdown` resolves (then stops in order) or the Lease is lost.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<(), ManagerError> {
        self.endpoints.set_ready(true);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut elector = match self.options.leader.clone() {
            Some(config) => Some(self.campaign(config, &mut shutdown).await?),
            None => None,
        };
        if elector.as_ref().is_some_and(|e| !e.is_leader()) {
            return self.finish(elector).await;
        }
        let loaded = std::mem::take(&mut self.loaded);
        let start = async {
            for plugin in loaded {
                self.start_plugin(plugin).await?;
            }
            std::future::pending::<Result<(), ManagerError>>().await
        };
        let lost = async {
            match &mut elector {
                Some(elector) => elector.hold().await,
                None => std::future::pending().await,
            }
        };
        let failed = tokio::select! {
            failed = start => failed.err(),
            lost = lost => Some(ManagerError::Leader(lost)),
            _ = &mut shutdown => None,
        };
        match failed {
            None => self.finish(elector).await,
            Some(error) => {
                tracing::error!("{error}; stopping at once");
                self.grace_period_over();
                // Whatever was abandoned, the cause to report is `error`.
                let _ = self.finish(None).await;
                Err(error)
            }
        }
    }

    /// Waits for the Lease (or `shutdown`, returning a non-leading elector).
    async fn campaign(
        &self,
        config: LeaderConfig,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> Result<Elector, ManagerError> {
        let lease = config.name.clone();
        tracing::info!(lease = %config.name, namespace = %config.namespace, identity = %config.identity, "waiting to lead");
        let mut elector = Elector::new(self.client.clone(), config)?;
        self.metrics.set_leader(&lease, false);
        tokio::select! {
            _ = elector.acquire() => self.metrics.set_leader(&lease, true),
            _ = shutdown => {}
        }
        Ok(elector)
    }

    /// Makes [`Manager::finish`] stop without waiting for in-flight reconciles.
    fn grace_period_over(&mut self) {
        self.options.grace_period = Duration::ZERO;
    }

    /// Stops in reverse start order and releases the Lease if `elector` holds it.
    async fn finish(mut self, elector: Option<Elector>) -> Result<(), ManagerError> {
        tracing::info!(grace_period = ?self.options.grace_period, "stopping: letting in-flight reconciles finish");
        self.endpoints.set_ready(false);
        let drained = self.stop_controllers().await;
        if let Some(mut elector) = elector.filter(Elector::is_leader) {
            elector.release().await;
        }
        self.servers.drain(..).for_each(|server| server.abort());
        drained
    }

    async fn stop_controllers(&mut self) -> Result<(), ManagerError> {
        let deadline = Instant::now() + self.options.grace_period;
        self.controllers.iter().for_each(Controller::shutdown);
        let mut drained = true;
        for controller in self.controllers.drain(..).rev() {
            drained &= controller.stop(deadline).await;
        }
        match drained {
            true => Ok(()),
            false => Err(ManagerError::GracePeriod(self.options.grace_period)),
        }
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

    /// Stops every controller within the grace period (as on SIGTERM, without a Lease).
    pub async fn stop(self) -> Result<(), ManagerError> {
        self.finish(None).await
    }
}
