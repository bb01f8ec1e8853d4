//! The manager owns the shared parts — the WebAssembly runtime, the informer cache, the apiserver
//! client, the metrics and probe endpoints, the webhook server, the leader elector — and one
//! controller per plugin. Every replica serves the loaded plugins' webhooks; the leader also
//! writes the configurations that make the apiserver call them.
//!
//! Start order: endpoints and webhooks ([`Manager::serve`]: alive, not ready) → plugins loaded
//! ([`Manager::load_plugin`]) → [`Manager::run`]: ready (followers too), the plugin sources
//! ([`Manager::add_runnable`]) started → the Lease acquired when electing → each controller once
//! its informers have synced. Stop order is the reverse: not ready → the plugin sources
//! stopped → every controller stops taking work → in-flight reconciles finish within the grace
//! period (the rest are abandoned, and their keys listed again by the next leader) → the Lease
//! released, only once no reconcile of ours can still write → endpoints closed. Losing the Lease
//! stops the controllers at once and ends `run` with an error, so the process exits as
//! controller-runtime's does and restarts as a follower; so does a plugin source that ends.
//!
//! Sharded ([`ManagerOptions::sharding`]): every replica also campaigns for a member Lease of its
//! own and runs its controllers while it holds it, over only the objects labelled with its shard
//! (letting go those the leader moves elsewhere, see [`crate::controller::Handover`]); the leader
//! alone runs the sharder that labels them. Losing either Lease stops the process as above.
//!
//! The loop does O(1) work per event and never awaits the cluster: a version's informers sync
//! in a task of the manager's (within the cache sync timeout) and the loop only swaps the
//! prepared version in; a replaced or removed controller drains in another. So shutdown, a lost
//! Lease and every other plugin's change are handled while a kind is slow or never syncs.
//!
//! Imports: every part it composes; nothing imports the manager but the binary.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinError, JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::cache::{Cache, CacheError, Namespaces};
use crate::controller::{self, Controller, Handover, Prepared};
use crate::http::{self, Endpoints};
use crate::identity::Identities;
use crate::leader::{Campaign, Elector, LeaderConfig, LeaderError, Leadership};
use crate::metrics::{Collecting, Metrics};
use crate::plugins::{self, Command, Loader, PluginError, PluginHandle, Registry};
use crate::runtime::{Plugin, PluginOptions, Runtime, RuntimeConfig, RuntimeError};
use crate::shard::{self, Members, Ring, ShardLabels, ShardedKinds, Sharder};
use crate::webhook::{WebhookServer, WebhookServing, Writer};

/// How long a stopping replica keeps answering webhooks after it stops reporting ready: the
/// apiserver still calls the endpoints the Service had a moment ago, and a refused call would
/// fail the request under `failurePolicy: Fail`.
const WEBHOOK_DRAIN: Duration = Duration::from_secs(5);

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
    /// A plugin source ended (or panicked) while the manager ran.
    #[error("the plugin source {name} stopped: {reason}")]
    SourceEnded {
        /// The source.
        name: String,
        /// How it ended.
        reason: String,
    },
    /// The access reviews' own client could not be built.
    #[error("cannot build the client for access reviews: {0}")]
    ReviewClient(#[source] kube::Error),
    /// Sharding was asked for without a leader election to name the group.
    #[error("sharding needs leader election (--leader-elect): its Lease names the group")]
    ShardingWithoutElection,
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
    /// How long a plugin version's informers may take to sync before its start fails.
    pub sync_timeout: Duration,
    /// Each plugin's own identity to write as; the operator's when `None`.
    pub identities: Option<Identities>,
    /// Serve `/metrics` and `/plugins` over HTTPS to authorized callers only (probes stay open).
    pub metrics_secure: Option<http::SecureServing>,
    /// The connection settings the secure listener's access reviews use, on a connection pool
    /// of their own (so they never queue with the Lease's renewals or the plugins' writes); the
    /// manager's client when `None`.
    pub reviews: Option<kube::Config>,
    /// Serve the plugins' webhooks (on every replica), and write their configurations (while
    /// leading).
    pub webhook: Option<WebhookServing>,
    /// Shard each plugin's objects across the replicas of the `leader` election's group.
    pub sharding: bool,
    /// Inform the loaded plugins' kinds while the controllers wait for a Lease.
    pub warm_standby: bool,
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
            sync_timeout: Duration::from_secs(120),
            identities: None,
            metrics_secure: None,
            reviews: None,
            webhook: None,
            sharding: false,
            warm_standby: false,
        }
    }
}

/// A long-running part the manager owns (controller-runtime's Runnable), such as a plugin
/// source: started by [`Manager::run`] and stopped (dropped where it awaits) first on the way
/// out, so it asks for no change the manager would no longer make.
pub type Runnable = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A plugin change waiting for its version's informers to sync.
struct Pending {
    source: String,
    ticket: u64,
    plugin: Arc<Plugin>,
    digest: String,
    reply: Option<oneshot::Sender<Result<(), PluginError>>>,
}

/// A finished preparation: the change and its synced (or failed) version.
type PreparedChange = (Pending, Result<Prepared, CacheError>);

/// Shared runtime, cache, client and endpoints, and the plugins with their controllers.
pub struct Manager {
    client: kube::Client,
    options: ManagerOptions,
    loader: Loader,
    cache: Arc<Cache>,
    metrics: Arc<Metrics>,
    endpoints: Arc<Endpoints>,
    servers: Vec<JoinHandle<()>>,
    webhook_tls: Option<http::Tls>,
    registry: Registry,
    handle: PluginHandle,
    commands: mpsc::Receiver<Command>,
    running: bool,
    runnables: Vec<(String, Runnable)>,
    preparing: JoinSet<PreparedChange>,
    stopping: JoinSet<bool>,
    /// This replica's part in sharding, when on.
    shard: Option<Shard>,
    _cache_gauges: Collecting,
}

/// A sharded replica's member Lease, its handover of objects the leader moves, and the live
/// members it has observed since it started (for its sharder, should it lead).
struct Shard {
    member: LeaderConfig,
    handover: Arc<Handover>,
    members: Option<watch::Receiver<Option<Ring>>>,
}

impl Manager {
    /// A manager talking to the cluster through `client`.
    pub fn new(client: kube::Client, options: ManagerOptions) -> Result<Self, ManagerError> {
        let cache = Cache::scoped(client.clone(), options.namespaces.clone());
        let (cache, shard) = match (options.sharding, &options.leader) {
            (false, _) => (Arc::new(cache), None),
            (true, None) => return Err(ManagerError::ShardingWithoutElection),
            (true, Some(leader)) => {
                let member = shard::member_lease(leader);
                let labels = ShardLabels::new(&leader.name);
                let cache = Arc::new(cache.with_shard(crate::cache::Shard {
                    label: labels.owner.clone(),
                    member: shard::member_id(&leader.identity),
                }));
                let handover = Handover::new(client.clone(), cache.clone(), labels);
                let handover = Arc::new(handover);
                let shard = Shard {
                    member,
                    handover,
                    members: None,
                };
                (cache, Some(shard))
            }
        };
        let metrics = Arc::new(Metrics::new());
        let cache_gauges = metrics
            .register(cache.gauges())
            .expect("the first cache collector");
        let runtime = Arc::new(Runtime::new(options.runtime.clone())?);
        let identities = options.identities.clone();
        let loader = Loader::new(
            runtime,
            client.clone(),
            cache.clone(),
            identities,
            metrics.clone(),
        );
        let registry = Registry::default();
        let (handle, commands) = plugins::channel(loader.clone(), registry.statuses());
        Ok(Manager {
            endpoints: Endpoints::new(metrics.clone(), registry.statuses()),
            loader,
            cache,
            client,
            metrics,
            options,
            servers: Vec::new(),
            webhook_tls: None,
            registry,
            handle,
            commands,
            running: false,
            runnables: Vec::new(),
            preparing: JoinSet::new(),
            stopping: JoinSet::new(),
            shard,
            _cache_gauges: cache_gauges,
        })
    }

    /// Serves `/metrics`, `/healthz`, `/readyz` and `/plugins` on the configured addresses (once
    /// if they are the same); `/readyz` fails until [`Manager::run`]. With `metrics_secure` the
    /// metrics listener speaks HTTPS and guards `/metrics` and `/plugins`, and a separate probe
    /// listener serves the probes alone. With metrics off, no listener serves `/metrics`.
    pub async fn serve(&mut self) -> Result<(), ManagerError> {
        let (metrics, probes) = (self.options.metrics_address, self.options.probe_address);
        let secure = match (&self.options.metrics_secure, metrics) {
            (Some(serving), Some(_)) => {
                let reviews = match self.options.reviews.clone() {
                    Some(config) => {
                        kube::Client::try_from(config).map_err(ManagerError::ReviewClient)?
                    }
                    None => self.client.clone(),
                };
                let metrics = self.metrics.clone();
                Some(http::Access::secure(serving, reviews, metrics).await?)
            }
            _ => None,
        };
        // Secure or off, the metrics stay off the plain probe listener.
        let probe_access = match (&self.options.metrics_secure, metrics) {
            (Some(_), _) => http::Access::Probes,
            (None, None) => http::Access::Unmetered,
            (None, Some(_)) => http::Access::Open,
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
        if let Some(serving) = self.options.webhook.clone() {
            self.serve_webhooks(&serving).await?;
        }
        Ok(())
    }

    /// Serves the loaded plugins' webhooks over HTTPS at `serving`'s address.
    async fn serve_webhooks(&mut self, serving: &WebhookServing) -> Result<(), ManagerError> {
        let address = serving.address;
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| ManagerError::Listen { address, source })?;
        let tls = http::Tls::load(&serving.tls).await?;
        let server = WebhookServer::new(self.registry.live(), self.metrics.clone());
        tracing::info!(%address, "serving the plugins' webhooks over HTTPS");
        self.servers.push(tokio::spawn(http::listen(
            listener,
            Arc::new(server),
            Some(tls.clone()),
            http::ConnectionLimits::default(),
        )));
        self.webhook_tls = Some(tls);
        Ok(())
    }

    /// Compiles, validates and describes the plugin in `file`, the source named by its path;
    /// [`Manager::run`] starts it (or at once, after [`Manager::add_plugin`]). A failure is also
    /// recorded as the source's last error.
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
                self.registry.load_failed(&source, error.to_string());
                return Err(error.into());
            }
        };
        let (reply, answer) = oneshot::channel();
        self.install(source, plugin.clone(), digest, reply);
        if let Some(done) = self.preparing.join_next().await {
            self.prepared(done);
        }
        answer.await.map_err(|_| PluginError::Stopped)??;
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

    /// Adds a part named `name` for [`Manager::run`] to start and stop.
    pub fn add_runnable(
        &mut self,
        name: &str,
        runnable: impl Future<Output = ()> + Send + 'static,
    ) {
        self.runnables.push((name.to_owned(), Box::pin(runnable)));
    }

    /// Reports ready, starts the runnables, campaigns for the Lease when electing, runs the
    /// plugins' controllers while leading (or at once without an election) and applies plugin
    /// changes sent through [`Manager::handle`], until `shutdown` resolves (then stops in order),
    /// the Lease is lost or a runnable ends.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<(), ManagerError> {
        self.endpoints.set_ready(true);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut runnables = JoinSet::new();
        for (name, runnable) in self.runnables.drain(..) {
            runnables.spawn(async move {
                let panicked = AssertUnwindSafe(runnable).catch_unwind().await.is_err();
                (name, panicked)
            });
        }
        let mut campaign = match self.options.leader.clone() {
            Some(config) => Some(self.campaign(config)?),
            None => {
                self.lead();
                self.run_controllers();
                None
            }
        };
        let member = self.observe_members();
        let mut member = member.map(|config| self.campaign(config)).transpose()?;
        if self.options.warm_standby && campaign.is_some() {
            let warm = controller::warm(self.cache.clone(), self.registry.live());
            self.servers.push(tokio::spawn(warm));
        }
        let mut failure = None;
        while failure.is_none() {
            tokio::select! {
                Some(command) = self.commands.recv() => self.handle_command(command),
                Some(done) = self.preparing.join_next(), if !self.preparing.is_empty() => self.prepared(done),
                Some(_) = self.stopping.join_next(), if !self.stopping.is_empty() => {}
                Some(ended) = runnables.join_next(), if !runnables.is_empty() => failure = Some(ended_early(ended)),
                state = changed(&mut campaign) => failure = self.follow(state).err(),
                state = changed(&mut member) => failure = self.follow_member(state).err(),
                _ = &mut shutdown => break,
            }
        }
        let campaigns = [member, campaign];
        match failure {
            None => self.finish(campaigns, runnables).await,
            Some(error) => {
                tracing::error!("{error}; stopping at once");
                self.options.grace_period = Duration::ZERO;
                // Whatever was abandoned, the cause to report is `error`.
                let _ = self.finish(campaigns, runnables).await;
                Err(error)
            }
        }
    }

    /// When sharding, starts observing the group's members and returns this replica's member
    /// Lease to campaign for.
    fn observe_members(&mut self) -> Option<LeaderConfig> {
        let (shard, group) = (self.shard.as_mut()?, self.options.leader.as_ref()?);
        let poll = group.lease_duration / 4;
        shard.members = Some(Members::new(self.client.clone(), group).observe(poll));
        Some(shard.member.clone())
    }

    fn campaign(&self, config: LeaderConfig) -> Result<Campaign, ManagerError> {
        tracing::info!(lease = %config.name, namespace = %config.namespace, identity = %config.identity, "waiting to lead");
        self.metrics.set_leader(&config.name, false);
        Ok(Campaign::start(Elector::new(self.client.clone(), config)?))
    }

    fn follow(&mut self, state: Leadership) -> Result<(), ManagerError> {
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
                self.lead();
                if self.shard.is_none() {
                    self.run_controllers();
                }
                Ok(())
            }
            Leadership::Lost(reason) => {
                self.metrics.set_leader(&lease, false);
                Err(ManagerError::LeaseLost(reason))
            }
        }
    }

    /// Runs the controllers once the member Lease is held; ends the run when it is lost.
    fn follow_member(&mut self, state: Leadership) -> Result<(), ManagerError> {
        match state {
            Leadership::Waiting => Ok(()),
            Leadership::Leading => {
                tracing::info!("holding this replica's member Lease: reconciling its shard");
                self.run_controllers();
                Ok(())
            }
            Leadership::Lost(reason) => Err(ManagerError::LeaseLost(format!(
                "member Lease lost, so this replica's shard is no longer its own: {reason}"
            ))),
        }
    }

    /// Starts what only the leader runs: the webhook configurations' writer and, when sharding,
    /// the sharder.
    fn lead(&mut self) {
        let target = self.options.webhook.as_ref().and_then(|w| w.target.clone());
        if let (Some(target), Some(tls)) = (target, self.webhook_tls.clone()) {
            let writer = Writer::new(self.client.clone(), target);
            let live = self.registry.live();
            self.servers.push(tokio::spawn(writer.run(live, tls)));
        }
        let members = self.shard.as_ref().and_then(|s| s.members.clone());
        if let (Some(members), Some(leader)) = (members, &self.options.leader) {
            let namespaces = self.options.namespaces.clone();
            let client = self.client.clone();
            let sharder = Sharder::new(client, leader, namespaces, members, &self.metrics);
            let live = self.registry.live();
            self.servers
                .push(tokio::spawn(shard_plugins(sharder, live)));
        }
    }

    /// Prepares every loaded plugin's controller, from now on and for plugins loaded later.
    fn run_controllers(&mut self) {
        self.running = true;
        self.handle.set_leading(true);
        for (source, ticket, plugin, digest) in self.registry.unstarted() {
            self.prepare(Pending {
                source,
                ticket,
                plugin,
                digest,
                reply: None,
            });
        }
    }

    fn handle_command(&mut self, command: Command) {
        match command {
            Command::Install {
                source,
                plugin,
                digest,
                reply,
            } => self.install(source, plugin, digest, reply),
            Command::Failed {
                source,
                error,
                reply,
            } => {
                tracing::warn!(%source, "plugin did not load: {error}");
                self.metrics.load_failed(&source);
                self.registry.load_failed(&source, error);
                let _ = reply.send(());
            }
            Command::Remove { source, reply } => match self.registry.remove(&source) {
                None => {
                    let _ = reply.send(false);
                }
                Some(controller) => {
                    tracing::info!(%source, "plugin unloaded");
                    match controller {
                        Some(controller) => self.stop_later(controller, Some(reply)),
                        None => {
                            let _ = reply.send(true);
                        }
                    }
                }
            },
        }
    }

    /// Makes `plugin` the plugin of `source`: at once on a follower, after its informers sync
    /// (in a task) when controllers run; `reply` gets the outcome.
    fn install(
        &mut self,
        source: String,
        plugin: Arc<Plugin>,
        digest: String,
        reply: oneshot::Sender<Result<(), PluginError>>,
    ) {
        let ticket = match self.registry.ticket(&source, plugin.name()) {
            Ok(ticket) => ticket,
            Err(error) => {
                self.registry.load_failed(&source, error.to_string());
                return self.settled(&source, Some(reply), Err(error));
            }
        };
        let pending = Pending {
            source,
            ticket,
            plugin,
            digest,
            reply: Some(reply),
        };
        match self.running {
            true => self.prepare(pending),
            false => self.swap(pending, None),
        }
    }

    fn prepare(&mut self, pending: Pending) {
        let cache = self.cache.clone();
        let allowed = self.options.sync_timeout;
        let handover = self.shard.as_ref().map(|s| s.handover.clone());
        self.preparing.spawn(async move {
            let plugin = pending.plugin.clone();
            let prepared = Controller::prepare(&cache, plugin, allowed, handover).await;
            (pending, prepared)
        });
    }

    fn prepared(&mut self, done: Result<PreparedChange, JoinError>) {
        let (pending, prepared) = match done {
            Ok(done) => done,
            Err(error) => return tracing::error!("preparing a plugin's informers failed: {error}"),
        };
        match prepared {
            Ok(prepared) => self.swap(pending, Some(prepared)),
            Err(error) => {
                let error = PluginError::Start {
                    plugin: pending.plugin.name().to_owned(),
                    source: Box::new(error),
                };
                self.registry
                    .failed(&pending.source, pending.ticket, error.to_string());
                self.settled(&pending.source, pending.reply, Err(error));
            }
        }
    }

    /// Swaps the pending version in, with its prepared controller if controllers run.
    fn swap(&mut self, pending: Pending, prepared: Option<Prepared>) {
        let Pending {
            source,
            ticket,
            plugin,
            digest,
            reply,
        } = pending;
        let (name, version) = (
            plugin.name().to_owned(),
            plugin.registration().version.clone(),
        );
        // A version loaded before controllers ran is installed again with its controller.
        let started_only = self.registry.holds(&source, &plugin);
        let installed =
            self.registry
                .install(&source, ticket, plugin, digest, prepared, &self.metrics);
        let result = installed.map(|replaced| {
            if !started_only {
                tracing::info!(%source, plugin = %name, %version, "plugin installed");
            }
            if let Some(controller) = replaced {
                self.stop_later(controller, None);
            }
        });
        self.settled(&source, reply, result);
    }

    fn settled(
        &self,
        source: &str,
        reply: Option<oneshot::Sender<Result<(), PluginError>>>,
        result: Result<(), PluginError>,
    ) {
        if let Err(error) = &result {
            if !matches!(error, PluginError::Superseded { .. }) {
                self.metrics.load_failed(source);
            }
            tracing::warn!(%source, "plugin not installed: {error}");
        }
        if let Some(reply) = reply {
            let _ = reply.send(result);
        }
    }

    /// Stops `controller` in a task of the manager's, within the grace period; `reply` hears
    /// when it has.
    fn stop_later(&mut self, controller: Controller, reply: Option<oneshot::Sender<bool>>) {
        let deadline = Instant::now() + self.options.grace_period;
        controller.shutdown();
        self.stopping.spawn(async move {
            let drained = controller.stop(deadline).await;
            if let Some(reply) = reply {
                let _ = reply.send(true);
            }
            drained
        });
    }

    /// Stops in reverse start order and releases the Leases the campaigns hold.
    async fn finish(
        mut self,
        campaigns: [Option<Campaign>; 2],
        mut runnables: JoinSet<(String, bool)>,
    ) -> Result<(), ManagerError> {
        tracing::info!(grace_period = ?self.options.grace_period, "stopping: letting in-flight reconciles finish");
        self.endpoints.set_ready(false);
        let deadline = Instant::now() + self.options.grace_period;
        let webhook_drain = Instant::now() + WEBHOOK_DRAIN;
        runnables.shutdown().await;
        self.preparing.abort_all();
        let controllers = self.registry.take_controllers();
        controllers.iter().for_each(Controller::shutdown);
        for controller in controllers {
            self.stopping.spawn(controller.stop(deadline));
        }
        let mut drained = true;
        while let Some(stopped) = self.stopping.join_next().await {
            drained &= stopped.unwrap_or(false);
        }
        for campaign in campaigns.into_iter().flatten() {
            campaign.release().await;
        }
        if self.webhook_tls.is_some() {
            // The apiserver still calls this replica until its endpoint is gone.
            tokio::time::sleep_until(webhook_drain.min(deadline)).await;
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
        self.finish([None, None], JoinSet::new()).await
    }
}

/// The next state of `campaign`; never, without one.
async fn changed(campaign: &mut Option<Campaign>) -> Leadership {
    match campaign {
        Some(campaign) => campaign.changed().await,
        None => std::future::pending().await,
    }
}

/// Runs `sharder` over the primary and owned kinds of the plugins `live` holds, as they change.
async fn shard_plugins(sharder: Sharder, mut live: crate::runtime::Live) {
    let kinds = |plugins: &BTreeMap<String, Arc<Plugin>>| -> Vec<ShardedKinds> {
        plugins
            .values()
            .map(|plugin| {
                let registration = plugin.registration();
                ShardedKinds {
                    primary: registration.primary.clone(),
                    owned: registration.owns.clone(),
                }
            })
            .collect()
    };
    let (sender, receiver) = watch::channel(kinds(&live.borrow_and_update()));
    let follow = async move {
        while live.changed().await.is_ok() {
            sender.send_replace(kinds(&live.borrow_and_update()));
        }
    };
    tokio::join!(follow, sharder.run(receiver));
}

/// The error for a runnable that ended (or panicked) while the manager ran.
fn ended_early(ended: Result<(String, bool), JoinError>) -> ManagerError {
    let (name, reason) = match ended {
        Ok((name, false)) => (name, "it returned".to_owned()),
        Ok((name, true)) => (name, "it panicked".to_owned()),
        Err(error) => ("a plugin source".to_owned(), error.to_string()),
    };
    ManagerError::SourceEnded { name, reason }
}
