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

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::cache::{Cache, Namespaces};
use crate::controller::Controller;
use crate::http::{self, Endpoints};
use crate::identity::Identities;
use crate::leader::{Campaign, Elector, LeaderConfig, LeaderError, Leadership};
use crate::metrics::Metrics;
use crate::plugins::{self, Command, Context, Loader, PluginError, PluginHandle, Registry};
use crate::runtime::{Plugin, PluginOptions, Runtime, RuntimeConfig, RuntimeError};

/// The manager could not start, keep running, or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The runtime could not be built or a plugin did not load.
    #[error(transparent)]
    Load(#[from] RuntimeError),
    /// A plugin could not be installed or started.
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// An endpoint address could not be listened on.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The secure metrics listener's certificate could not be read or made.
    #[error(transparent)]
    Tls(#[from] http::TlsError),
    /// Leader election was misconfigured.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// The Lease was lost.
    #[error("{0}")]
    LeaseLost(String),
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
    /// Each plugin's own identity to write as; the operator's when `None`.
    pub identities: Option<Identities>,
    /// Serve `/metrics` and `/plugins` over HTTPS to authorized callers only (probes stay open).
    pub metrics_secure: Option<http::SecureServing>,
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
            identities: None,
            metrics_secure: None,
        }
    }
}

/// Shared runtime, cache, client and endpoints, and the plugins with their controllers.
pub struct Manager {
    client: kube::Client,
    options: ManagerOptions,
    loader: Loader,
    cache: Arc<Cache>,
    metrics: Arc<Metrics>,
    endpoints: Arc<Endpoints>,
    servers: Vec<JoinHandle<()>>,
    registry: Registry,
    handle: PluginHandle,
    commands: mpsc::Receiver<Command>,
    running: bool,
}

impl Manager {
    /// A manager talking to the cluster through `client`.
    pub fn new(client: kube::Client, options: ManagerOptions) -> Result<Self, ManagerError> {
        let cache = Arc::new(Cache::scoped(client.clone(), options.namespaces.clone()));
        let metrics = Arc::new(Metrics::new());
        metrics.watch_cache(&cache);
        let runtime = Arc::new(Runtime::new(options.runtime.clone())?);
        let identities = options.identities.clone();
        let loader = Loader::new(runtime, client.clone(), cache.clone(), identities);
        let (handle, commands) = plugins::channel(loader.clone());
        Ok(Manager {
            endpoints: Endpoints::new(metrics.clone(), handle.clone()),
            loader,
            cache,
            client,
            metrics,
            options,
            servers: Vec::new(),
            registry: Registry::default(),
            handle,
            commands,
            running: false,
        })
    }

    /// Serves `/metrics`, `/healthz`, `/readyz` and `/plugins` on the configured addresses (once
    /// if they are the same); `/readyz` fails until [`Manager::run`]. With `metrics_secure` the
    /// metrics listener speaks HTTPS and guards `/metrics` and `/plugins`, and a separate probe
    /// listener serves the probes alone.
    pub async fn serve(&mut self) -> Result<(), ManagerError> {
        let (metrics, probes) = (self.options.metrics_address, self.options.probe_address);
        let secure = match (&self.options.metrics_secure, metrics) {
            (Some(serving), Some(_)) => {
                Some(http::Access::secure(serving, self.client.clone()).await?)
            }
            _ => None,
        };
        // Secure or off, the metrics stay off the plain probe listener.
        let probe_access = match self.options.metrics_secure {
            Some(_) => http::Access::Probes,
            None => http::Access::Open,
        };
        if secure.is_some() && probes.is_some() && probes == metrics {
            tracing::warn!(
                "the probes share the secure metrics listener: /healthz and /readyz answer there \
                 without a token, over HTTPS (kubelet probes need `scheme: HTTPS`)"
            );
        }
        let listeners = [
            metrics.map(|address| (address, secure.unwrap_or(http::Access::Open))),
            probes
                .filter(|address| Some(*address) != metrics)
                .map(|address| (address, probe_access)),
        ];
        for (address, access) in listeners.into_iter().flatten() {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|source| ManagerError::Listen { address, source })?;
            tracing::info!(%address, "{}", access.describe());
            let endpoints = self.endpoints.clone();
            let limits = http::ConnectionLimits::default();
            self.servers.push(tokio::spawn(http::serve(
                listener, endpoints, access, limits,
            )));
        }
        Ok(())
    }

    /// Compiles, validates and describes the plugin in `file`, the source named by its path;
    /// [`Manager::run`] starts it. A failure is also recorded as the source's last error.
    pub async fn load_plugin(
        &mut self,
        file: &Path,
        options: PluginOptions,
    ) -> Result<Arc<Plugin>, ManagerError> {
        let source = file.display().to_string();
        let (plugin, digest) = match self.loader.load_file(file, options).await {
            Ok(loaded) => loaded,
            Err(error) => {
                self.metrics.load_failed(&source);
                self.registry.failed(&source, error.to_string());
                return Err(error.into());
            }
        };
        let context = Context {
            cache: &self.cache,
            metrics: &self.metrics,
            running: self.running,
            grace: self.options.grace_period,
        };
        self.registry
            .install(&context, &source, plugin.clone(), digest)
            .await?;
        Ok(plugin)
    }

    /// Loads the plugin in `file` and starts its controller at once, without an election.
    pub async fn add_plugin(
        &mut self,
        file: &Path,
        options: PluginOptions,
    ) -> Result<&Controller, ManagerError> {
        self.running = true;
        let plugin = self.load_plugin(file, options).await?;
        Ok(self
            .registry
            .controller(plugin.name())
            .expect("a running manager starts what it loads"))
    }

    /// Reports ready, campaigns for the Lease when electing, runs the plugins' controllers while
    /// leading (or at once without an election) and applies plugin changes sent through
    /// [`Manager::handle`], until `shutdown` resolves (then stops in order) or the Lease is lost.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<(), ManagerError> {
        self.endpoints.set_ready(true);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut campaign = match self.options.leader.clone() {
            Some(config) => Some(self.campaign(config)?),
            None => None,
        };
        let mut failure = match campaign {
            Some(_) => None,
            None => self.lead().await.err(),
        };
        while failure.is_none() {
            let leadership = async {
                match &mut campaign {
                    Some(campaign) => campaign.changed().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                Some(command) = self.commands.recv() => self.handle_command(command).await,
                state = leadership => failure = self.follow(state).await.err(),
                _ = &mut shutdown => break,
            }
        }
        match failure {
            None => self.finish(campaign).await,
            Some(error) => {
                tracing::error!("{error}; stopping at once");
                self.options.grace_period = Duration::ZERO;
                // Whatever was abandoned, the cause to report is `error`.
                let _ = self.finish(campaign).await;
                Err(error)
            }
        }
    }

    fn campaign(&self, config: LeaderConfig) -> Result<Campaign, ManagerError> {
        tracing::info!(lease = %config.name, namespace = %config.namespace, identity = %config.identity, "waiting to lead");
        self.metrics.set_leader(&config.name, false);
        Ok(Campaign::start(Elector::new(self.client.clone(), config)?))
    }

    async fn follow(&mut self, state: Leadership) -> Result<(), ManagerError> {
        let lease = self
            .options
            .leader
            .as_ref()
            .map_or("", |l| l.name.as_str())
            .to_owned();
        match state {
            Leadership::Waiting => Ok(()),
            Leadership::Leading => {
                self.metrics.set_leader(&lease, true);
                self.lead().await
            }
            Leadership::Lost(reason) => {
                self.metrics.set_leader(&lease, false);
                Err(ManagerError::LeaseLost(reason))
            }
        }
    }

    /// Starts every loaded plugin's controller, from now on and for plugins loaded later.
    async fn lead(&mut self) -> Result<(), ManagerError> {
        self.running = true;
        self.handle.set_leading(true);
        let context = Context {
            cache: &self.cache,
            metrics: &self.metrics,
            running: true,
            grace: self.options.grace_period,
        };
        Ok(self.registry.start_all(&context).await?)
    }

    async fn handle_command(&mut self, command: Command) {
        let context = Context {
            cache: &self.cache,
            metrics: &self.metrics,
            running: self.running,
            grace: self.options.grace_period,
        };
        match command {
            Command::Install {
                source,
                plugin,
                digest,
                reply,
            } => {
                let (name, version) = (
                    plugin.name().to_owned(),
                    plugin.registration().version.clone(),
                );
                let result = self
                    .registry
                    .install(&context, &source, plugin, digest)
                    .await;
                match &result {
                    Ok(()) => tracing::info!(%source, plugin = %name, %version, "plugin installed"),
                    Err(error) => {
                        self.metrics.load_failed(&source);
                        tracing::warn!(%source, "plugin not installed: {error}");
                    }
                }
                let _ = reply.send(result);
            }
            Command::Failed { source, error } => {
                tracing::warn!(%source, "plugin did not load: {error}");
                self.metrics.load_failed(&source);
                self.registry.failed(&source, error);
            }
            Command::Remove { source, reply } => {
                let removed = self.registry.remove(&context, &source).await;
                if removed {
                    tracing::info!(%source, "plugin unloaded");
                }
                let _ = reply.send(removed);
            }
            Command::List { reply } => {
                let _ = reply.send(self.registry.statuses());
            }
        }
    }

    /// Stops in reverse start order and releases the Lease if `campaign` holds it.
    async fn finish(mut self, campaign: Option<Campaign>) -> Result<(), ManagerError> {
        tracing::info!(grace_period = ?self.options.grace_period, "stopping: letting in-flight reconciles finish");
        self.endpoints.set_ready(false);
        let drained = self
            .registry
            .stop_all(Instant::now() + self.options.grace_period)
            .await;
        if let Some(campaign) = campaign {
            campaign.release().await;
        }
        self.servers.drain(..).for_each(|server| server.abort());
        match drained {
            true => Ok(()),
            false => Err(ManagerError::GracePeriod(self.options.grace_period)),
        }
    }

    /// Changes and lists plugins while [`Manager::run`] runs.
    pub fn handle(&self) -> PluginHandle {
        self.handle.clone()
    }

    /// The running controller of plugin `name`.
    pub fn controller(&self, name: &str) -> Option<&Controller> {
        self.registry.controller(name)
    }

    /// The WebAssembly runtime.
    pub fn runtime(&self) -> &Runtime {
        self.loader.runtime()
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
