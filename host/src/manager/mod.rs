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

mod election;
mod groups;
mod options;
mod serving;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::watch;
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;

use crate::cache::Cache;
use crate::controller::{self, Controller, Handover};
use crate::http::{self, Endpoints};
use crate::leader::{Campaign, LeaderConfig};
use crate::metrics::{Collecting, Metrics};
use crate::plugins::{Loader, PluginHandle, Report, Supervisor, Timeouts};
use crate::runtime::{Plugin, PluginOptions, Runtime};
use crate::shard::{self, Ring, ShardLabels};
use election::changed;
use groups::{Group, Groups};

pub use options::{ManagerError, ManagerOptions};

/// How long a stopping replica behind a Service keeps answering webhooks after it stops
/// reporting ready: the apiserver still calls the endpoints the Service had a moment ago, and a
/// refused call would fail the request under `failurePolicy: Fail`. A host called at a URL of its
/// own removes its webhooks instead, and closes its ports at once.
const WEBHOOK_DRAIN: Duration = Duration::from_secs(5);

/// How a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Asked to stop (a signal).
    Clean,
    /// A lost Lease or an ended runnable: this replica may no longer be the one that leads.
    Failed,
}

/// A long-running part the manager owns (controller-runtime's Runnable), such as a plugin
/// source: started by [`Manager::run`] and stopped (dropped where it awaits) first on the way
/// out, so it asks for no change the manager would no longer make.
pub type Runnable = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Shared runtime, cache, client and endpoints, and the plugins with their controllers.
pub struct Manager {
    client: kube::Client,
    options: ManagerOptions,
    plugins: Supervisor,
    cache: Arc<Cache>,
    metrics: Arc<Metrics>,
    endpoints: Arc<Endpoints>,
    groups: Groups,
    webhook_tls: Option<http::Tls>,
    runnables: Vec<(String, Runnable)>,
    /// This replica's part in sharding, when on.
    shard: Option<Shard>,
    _gauges: [Collecting; 4],
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
                let labels = ShardLabels::new(&leader.name);
                let cache = Arc::new(cache.with_shard(crate::cache::Shard {
                    label: labels.owner.clone(),
                    member: shard::member_id(&leader.identity),
                }));
                let handover = Handover::new(client.clone(), cache.clone(), labels);
                let shard = Shard {
                    member: shard::member_lease(leader),
                    handover: Arc::new(handover),
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
        let memory_gauges = metrics
            .register(runtime.memory_gauges())
            .expect("the first guest memory collector");
        let compile_gauges = metrics
            .register(runtime.compile_gauges())
            .expect("the first compile queue collector");
        let pool_gauges = metrics
            .register(runtime.pool_gauges())
            .expect("the first instance pool collector");
        let identities = options.identities.clone();
        let loader = Loader::new(
            runtime,
            client.clone(),
            cache.clone(),
            identities,
            metrics.clone(),
        );
        let handover = shard.as_ref().map(|s| s.handover.clone());
        let timeouts = Timeouts {
            sync: options.sync_timeout,
            grace_period: options.grace_period,
        };
        let plugins = Supervisor::new(loader, cache.clone(), handover, timeouts);
        Ok(Manager {
            endpoints: Endpoints::new(
                metrics.clone(),
                Report::new(plugins.statuses(), options.ready_requires),
            ),
            plugins,
            cache,
            client,
            metrics,
            options,
            groups: Groups::default(),
            webhook_tls: None,
            runnables: Vec::new(),
            shard,
            _gauges: [cache_gauges, memory_gauges, compile_gauges, pool_gauges],
        })
    }

    /// Reads the plugin in `file` once (its signature checked on those bytes, as the operator's
    /// policy asks), then compiles, validates and describes it, the source named by its path;
    /// [`Manager::run`] starts it (or at once, after [`Manager::add_plugin`]). A failure is also
    /// recorded as the source's last error.
    pub async fn load_plugin(
        &mut self,
        file: &Path,
        options: PluginOptions,
    ) -> Result<Arc<Plugin>, ManagerError> {
        Ok(self.plugins.load(file, options).await?)
    }

    /// Like [`Manager::load_plugin`], for the module `bytes` already read and checked from
    /// `file`: these bytes are the ones compiled, and `file` is not read.
    pub async fn load_plugin_bytes(
        &mut self,
        file: &Path,
        bytes: Vec<u8>,
        options: PluginOptions,
    ) -> Result<Arc<Plugin>, ManagerError> {
        Ok(self.plugins.load_bytes(file, bytes, options).await?)
    }

    /// Loads the plugin in `file` and starts its controller at once, without an election.
    pub async fn add_plugin(
        &mut self,
        file: &Path,
        options: PluginOptions,
    ) -> Result<&Controller, ManagerError> {
        self.plugins.set_running();
        let plugin = self.load_plugin(file, options).await?;
        Ok(self
            .plugins
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
                self.plugins.run_controllers();
                None
            }
        };
        let member = self.observe_members();
        let mut member = member.map(|config| self.campaign(config)).transpose()?;
        if self.options.warm_standby && campaign.is_some() {
            let warm = controller::warm(self.cache.clone(), self.plugins.live());
            self.groups.spawn(Group::WarmUp, warm);
        }
        let mut failure = None;
        while failure.is_none() {
            tokio::select! {
                _ = self.plugins.step() => {}
                Some(ended) = runnables.join_next(), if !runnables.is_empty() => failure = Some(ended_early(ended)),
                state = changed(&mut campaign) => failure = self.follow(state).err(),
                state = changed(&mut member) => failure = self.follow_member(state).err(),
                _ = &mut shutdown => break,
            }
        }
        let campaigns = [member, campaign];
        match failure {
            None => self.finish(campaigns, runnables, Stop::Clean).await,
            Some(error) => {
                tracing::error!("{error}; stopping at once");
                self.options.grace_period = Duration::ZERO;
                // Whatever was abandoned, the cause to report is `error`.
                let _ = self.finish(campaigns, runnables, Stop::Failed).await;
                Err(error)
            }
        }
    }

    /// Stops in reverse start order: not ready, the runnables, the controllers (within the grace
    /// period), the webhooks only this host serves (on a clean stop), the Leases, then (after
    /// the webhook drain, behind a Service) the served groups.
    async fn finish(
        mut self,
        campaigns: [Option<Campaign>; 2],
        mut runnables: JoinSet<(String, bool)>,
        stop: Stop,
    ) -> Result<(), ManagerError> {
        tracing::info!(grace_period = ?self.options.grace_period, "stopping: letting in-flight reconciles finish");
        self.endpoints.set_ready(false);
        let deadline = Instant::now() + self.options.grace_period;
        let webhook_drain = Instant::now() + WEBHOOK_DRAIN;
        runnables.shutdown().await;
        let drained = self.plugins.stop(deadline).await;
        if stop == Stop::Clean {
            self.disarm_webhooks().await;
        }
        for campaign in campaigns.into_iter().flatten() {
            campaign.release().await;
        }
        if self.groups.has(Group::Webhooks) && self.webhooks_behind_a_service() {
            // The apiserver still calls this replica until its endpoint is gone.
            tokio::time::sleep_until(webhook_drain.min(deadline)).await;
        }
        self.groups.stop().await;
        match drained {
            true => Ok(()),
            false => Err(ManagerError::GracePeriod(self.options.grace_period)),
        }
    }

    /// Changes and lists plugins while [`Manager::run`] runs.
    pub fn handle(&self) -> PluginHandle {
        self.plugins.handle()
    }

    /// The running controller of plugin `name`.
    pub fn controller(&self, name: &str) -> Option<&Controller> {
        self.plugins.controller(name)
    }

    /// The WebAssembly runtime.
    pub fn runtime(&self) -> &Runtime {
        self.plugins.runtime()
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
        self.finish([None, None], JoinSet::new(), Stop::Clean).await
    }
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A manager whose client points nowhere: enough for what needs no apiserver.
    fn offline() -> Manager {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        Manager::new(client, ManagerOptions::default()).unwrap()
    }

    type Log = Arc<Mutex<Vec<String>>>;

    fn note(log: &Log, line: String) {
        log.lock().unwrap().push(line);
    }

    /// Notes, when dropped, whether the endpoints still reported ready.
    struct Stopped(Log, Arc<Endpoints>);

    impl Drop for Stopped {
        fn drop(&mut self) {
            note(
                &self.0,
                format!("source stopped, ready {}", self.1.is_ready()),
            );
        }
    }

    #[tokio::test]
    async fn ready_before_the_sources_start_and_not_ready_before_they_stop() {
        let mut manager = offline();
        let (log, endpoints) = (Log::default(), manager.endpoints.clone());
        let (started, has_started) = tokio::sync::oneshot::channel();
        let guard = Stopped(log.clone(), endpoints.clone());
        let (source_log, source_endpoints) = (log.clone(), endpoints.clone());
        manager.add_runnable("source", async move {
            let _guard = guard;
            note(
                &source_log,
                format!("source started, ready {}", source_endpoints.is_ready()),
            );
            let _ = started.send(());
            std::future::pending::<()>().await;
        });
        assert!(!endpoints.is_ready(), "not ready before run");
        let shutdown = async move {
            let _ = has_started.await;
        };
        manager.run(shutdown).await.unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            ["source started, ready true", "source stopped, ready false"]
        );
        assert!(!endpoints.is_ready());
    }

    #[tokio::test]
    async fn a_source_that_ends_stops_the_manager_with_its_name() {
        let mut manager = offline();
        let endpoints = manager.endpoints.clone();
        manager.add_runnable("plugin directory", async {});
        let error = manager.run(std::future::pending()).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "the plugin source plugin directory stopped: it returned"
        );
        assert!(!endpoints.is_ready());
    }
}
