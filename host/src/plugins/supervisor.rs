//! The plugin supervisor: the install state machine of every plugin source, driven by the
//! manager's loop one step at a time ([`Supervisor::step`]).
//!
//! A change arrives as a loaded version ([`Supervisor::load`], or a [`Command`] from a
//! [`PluginHandle`]) and gets a ticket for its source. While controllers do not run (a follower,
//! or before [`Supervisor::run_controllers`]) it is installed at once, loaded but not started.
//! While they run it is *prepared* — its informers synced in a task, within the sync timeout —
//! and then swapped in, taking over the running controller; a later change to the same source
//! supersedes it, a version whose informers do not sync leaves the old one running with the
//! error as the source's last. A replaced or removed controller drains in a task within the
//! grace period. Every step is O(1) work on the loop: nothing here awaits the cluster.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;

use super::error::PluginError;
use super::handle::{Command, PluginHandle, channel};
use super::loader::Loader;
use super::registry::{Registry, Statuses};
use crate::cache::{Cache, CacheError};
use crate::controller::{Controller, Handover, Prepared};
use crate::distribution::digest;
use crate::metrics::Metrics;
use crate::runtime::{Live, Plugin, PluginOptions, Runtime, Shares};

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

/// How long the supervisor's background work may take.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// How long a version's informers may take to sync before its start fails.
    pub sync: Duration,
    /// How long a replaced or removed controller's in-flight reconciles may take to finish.
    pub grace_period: Duration,
}

/// Every source's plugin, and the changes under way.
pub struct Supervisor {
    loader: Loader,
    registry: Registry,
    cache: Arc<Cache>,
    metrics: Arc<Metrics>,
    handover: Option<Arc<Handover>>,
    timeouts: Timeouts,
    running: bool,
    handle: PluginHandle,
    commands: mpsc::Receiver<Command>,
    preparing: JoinSet<PreparedChange>,
    /// Controllers draining: their plugin's name if a tenant's, and whether they drained in time.
    stopping: JoinSet<(Option<String>, bool)>,
}

/// The source a plugin loaded from `file` is named by: its path, and the controller its
/// environment selects of a module of several (`kuberay.wasm#raycluster`).
fn source(file: &Path, options: &PluginOptions) -> String {
    match options.environment.controller() {
        Some(controller) => format!("{}#{controller}", file.display()),
        None => file.display().to_string(),
    }
}

impl Supervisor {
    /// A supervisor of no plugins yet, loading with `loader` and preparing versions over
    /// `cache` (handing objects over through `handover` on a sharded replica).
    pub fn new(
        loader: Loader,
        cache: Arc<Cache>,
        handover: Option<Arc<Handover>>,
        timeouts: Timeouts,
    ) -> Self {
        let registry = Registry::default();
        let metrics = loader.metrics().clone();
        let (handle, commands) = channel(loader.clone(), registry.statuses());
        Supervisor {
            loader,
            registry,
            cache,
            metrics,
            handover,
            timeouts,
            running: false,
            handle,
            commands,
            preparing: JoinSet::new(),
            stopping: JoinSet::new(),
        }
    }

    /// Reads the plugin in `file` once (its signature checked on those bytes), compiles,
    /// validates and describes it, the source named by its path (and the controller it
    /// selects, [`source`]), and installs it (prepared first
    /// when controllers run), counting the shares of the version it replaces as given back. A
    /// failure is also recorded as the source's last error.
    pub async fn load(
        &mut self,
        file: &Path,
        mut options: PluginOptions,
    ) -> Result<Arc<Plugin>, PluginError> {
        let source = source(file, &options);
        options.replaces = self.replaced(&source);
        let loaded = self.loader.load_file(file, options).await;
        self.installed(source, loaded).await
    }

    /// Like [`Supervisor::load`], for the module `bytes` already read (and checked) from `file`:
    /// the digest recorded is that of these very bytes, and nothing is read again.
    pub async fn load_bytes(
        &mut self,
        file: &Path,
        bytes: Vec<u8>,
        mut options: PluginOptions,
    ) -> Result<Arc<Plugin>, PluginError> {
        let source = source(file, &options);
        options.replaces = self.replaced(&source);
        let digest = digest(&bytes);
        let loaded = self.loader.load(file, bytes, options).await;
        self.installed(source, loaded.map(|plugin| (plugin, digest)))
            .await
    }

    /// The shares of the version loaded from `source` now, which a new one replaces.
    fn replaced(&self, source: &str) -> Option<Shares> {
        self.registry.statuses().shares(source)
    }

    /// Installs the plugin `loaded` from `source`, or records its failure as the source's last.
    async fn installed(
        &mut self,
        source: String,
        loaded: Result<(Arc<Plugin>, String), PluginError>,
    ) -> Result<Arc<Plugin>, PluginError> {
        let (plugin, digest) = match loaded {
            Ok(loaded) => loaded,
            Err(error) => {
                self.metrics.load_failed(&source);
                self.registry.load_failed(&source, error.to_string());
                return Err(error);
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

    /// Prepares every loaded plugin's controller, from now on and for plugins loaded later.
    pub fn run_controllers(&mut self) {
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

    /// Makes the next step: a change sent through the handle, a version whose informers synced
    /// (or did not), or a controller that drained. Cancel-safe: a step is taken whole once begun.
    pub async fn step(&mut self) {
        tokio::select! {
            Some(command) = self.commands.recv() => self.command(command),
            Some(done) = self.preparing.join_next(), if !self.preparing.is_empty() => self.prepared(done),
            Some(stopped) = self.stopping.join_next(), if !self.stopping.is_empty() => self.stopped(stopped),
            else => std::future::pending().await,
        }
    }

    /// Stops every controller by `deadline`, abandoning changes under way; whether every
    /// in-flight reconcile finished in time.
    pub async fn stop(&mut self, deadline: Instant) -> bool {
        self.preparing.abort_all();
        let controllers = self.registry.take_controllers();
        controllers.iter().for_each(Controller::shutdown);
        for controller in controllers {
            self.stopping.spawn(stop(controller, deadline));
        }
        let mut drained = true;
        while let Some(stopped) = self.stopping.join_next().await {
            drained &= stopped.is_ok_and(|(_, drained)| drained);
        }
        drained
    }

    /// Changes and lists plugins while the manager runs.
    pub fn handle(&self) -> PluginHandle {
        self.handle.clone()
    }

    /// Every source's status, as published.
    pub fn statuses(&self) -> Statuses {
        self.registry.statuses()
    }

    /// The plugins loaded now, as they change.
    pub fn live(&self) -> Live {
        self.registry.live()
    }

    /// The running controller of plugin `name`.
    pub fn controller(&self, name: &str) -> Option<&Controller> {
        self.registry.controller(name)
    }

    /// Starts controllers for what is loaded from now on, without [`Supervisor::run_controllers`]
    /// (a manager that runs plugins at once).
    pub fn set_running(&mut self) {
        self.running = true;
    }

    /// The WebAssembly runtime plugins load into.
    pub fn runtime(&self) -> &Runtime {
        self.loader.runtime()
    }

    fn command(&mut self, command: Command) {
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
            Command::Remove { source, reply } => self.remove(&source, reply),
        }
    }

    fn remove(&mut self, source: &str, reply: oneshot::Sender<bool>) {
        self.metrics.forget_source(source);
        match self.registry.remove(source) {
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
        }
    }

    /// Makes `plugin` the plugin of `source`: at once while controllers do not run, after its
    /// informers sync (in a task) while they do; `reply` gets the outcome.
    fn install(
        &mut self,
        source: String,
        plugin: Arc<Plugin>,
        digest: String,
        reply: oneshot::Sender<Result<(), PluginError>>,
    ) {
        let ticket = match self.registry.ticket(&source, &plugin) {
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
        let allowed = self.timeouts.sync;
        let handover = self.handover.clone();
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
            for controller in replaced {
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

    /// Stops `controller` in a task of the supervisor's, within the grace period; `reply` hears
    /// when it has.
    fn stop_later(&mut self, controller: Controller, reply: Option<oneshot::Sender<bool>>) {
        let deadline = Instant::now() + self.timeouts.grace_period;
        controller.shutdown();
        self.stopping.spawn(async move {
            let stopped = stop(controller, deadline).await;
            if let Some(reply) = reply {
                let _ = reply.send(true);
            }
            stopped
        });
    }

    /// Forgets the metric series of a drained controller's plugin if a tenant installed it (its
    /// object is gone; the operator's plugins keep their counts), unless a loaded plugin has its
    /// name again.
    fn stopped(&self, stopped: Result<(Option<String>, bool), JoinError>) {
        if let Ok((Some(name), _)) = stopped
            && !self.registry.has_name(&name)
        {
            self.metrics.forget_plugin(&name);
        }
    }
}

/// Stops `controller` by `deadline`: its plugin's name if a tenant installed it, and whether it
/// drained in time.
async fn stop(controller: Controller, deadline: Instant) -> (Option<String>, bool) {
    let plugin = controller.plugin();
    let tenants = plugin.by_tenant().then(|| plugin.name().to_owned());
    (tenants, controller.stop(deadline).await)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::{PluginState, PluginStatus};
    use crate::runtime::RuntimeConfig;
    use crate::testing::MemoryHost;

    fn component(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/components")
            .join(format!("{name}.wasm"))
    }

    /// A supervisor whose client points nowhere (no informer can sync), and a way to load the
    /// built components `webapp` and `configmap-sync` into its runtime without one.
    struct Offline {
        supervisor: Supervisor,
        runtime: Arc<Runtime>,
    }

    impl Offline {
        fn new(sync: Duration) -> Offline {
            let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
            let client = kube::Client::try_from(config).unwrap();
            let cache = Arc::new(Cache::scoped(client.clone(), Default::default()));
            let runtime = Arc::new(Runtime::new(RuntimeConfig::default()).unwrap());
            let metrics = Arc::new(Metrics::new());
            let loader = Loader::new(runtime.clone(), client, cache.clone(), None, metrics);
            let timeouts = Timeouts {
                sync,
                grace_period: Duration::from_secs(1),
            };
            let supervisor = Supervisor::new(loader, cache, None, timeouts);
            Offline {
                supervisor,
                runtime,
            }
        }

        async fn plugin(&self, name: &str) -> Arc<Plugin> {
            self.installed_by(name, false).await
        }

        /// Component `name`, loaded as a tenant's plugin when `tenant`, else the operator's.
        async fn installed_by(&self, name: &str, tenant: bool) -> Arc<Plugin> {
            let host = MemoryHost::new();
            let options = PluginOptions {
                tenant: tenant.then(|| name.to_owned()),
                ..PluginOptions::default()
            };
            let file = component(name);
            let loaded = self.runtime.load(&file, options, |_| host.services());
            Arc::new(
                loaded
                    .await
                    .expect("build the guests first with `make guests`"),
            )
        }

        /// Installs `plugin` as `source`'s and steps until the change settles.
        async fn install(&mut self, source: &str, plugin: Arc<Plugin>) -> Result<(), PluginError> {
            let (reply, mut answer) = oneshot::channel();
            let digest = format!("sha256:{}", plugin.name());
            self.supervisor
                .install(source.to_owned(), plugin, digest, reply);
            loop {
                if let Ok(result) = answer.try_recv() {
                    return result;
                }
                self.supervisor.step().await;
            }
        }

        fn status(&self, source: &str) -> Option<PluginStatus> {
            let statuses = self.supervisor.statuses().current();
            statuses.into_iter().find(|status| status.source == source)
        }
    }

    #[tokio::test]
    async fn a_follower_installs_at_once_keeps_names_unique_and_replaces_versions() {
        let mut offline = Offline::new(Duration::from_secs(1));
        let webapp = offline.plugin("webapp").await;
        offline.install("a.wasm", webapp.clone()).await.unwrap();
        let a = offline.status("a.wasm").unwrap();
        assert_eq!(
            (a.name.as_deref(), a.state),
            (Some("webapp"), PluginState::Loaded)
        );

        let taken = offline.install("b.wasm", webapp).await.unwrap_err();
        assert!(matches!(taken, PluginError::NameTaken { .. }), "{taken}");
        let b = offline.status("b.wasm").unwrap();
        assert_eq!(b.state, PluginState::Failed);
        assert!(
            b.last_error
                .unwrap()
                .contains("webapp is already loaded from a.wasm")
        );

        let sync = offline.plugin("configmap-sync").await;
        offline.install("a.wasm", sync).await.unwrap();
        let a = offline.status("a.wasm").unwrap();
        assert_eq!(
            a.name.as_deref(),
            Some("configmap-sync"),
            "the new version replaced it"
        );
        assert!(
            offline
                .supervisor
                .live()
                .borrow()
                .contains_key("configmap-sync")
        );
        assert!(!offline.supervisor.live().borrow().contains_key("webapp"));

        let (reply, removed) = oneshot::channel();
        offline.supervisor.remove("a.wasm", reply);
        assert!(removed.await.unwrap());
        assert_eq!(offline.status("a.wasm"), None);
        assert!(offline.supervisor.live().borrow().is_empty());
    }

    #[tokio::test]
    async fn the_operators_plugin_takes_its_name_from_a_tenants_whichever_came_first() {
        let mut offline = Offline::new(Duration::from_secs(1));
        let squatter = offline.installed_by("webapp", true).await;
        let tenant = "clusterwasmreconciler/webapp";
        offline.install(tenant, squatter.clone()).await.unwrap();
        let operators = offline.installed_by("webapp", false).await;
        offline
            .install("webapp.wasm", operators.clone())
            .await
            .unwrap();

        let lost = offline.status(tenant).unwrap();
        assert_eq!((lost.state, lost.digest), (PluginState::Failed, None));
        let why = lost.last_error.unwrap();
        assert!(why.contains("the operator's source webapp.wasm"), "{why}");
        let live = offline.supervisor.live().borrow()["webapp"].clone();
        assert!(Arc::ptr_eq(&live, &operators));

        let again = offline.install(tenant, squatter).await.unwrap_err();
        assert!(matches!(again, PluginError::NameTaken { .. }), "{again}");
        let other = offline.installed_by("webapp", false).await;
        let taken = offline.install("other.wasm", other).await.unwrap_err();
        assert!(
            matches!(taken, PluginError::NameTaken { .. }),
            "operators' sources still share no name: {taken}"
        );
    }

    #[tokio::test]
    async fn a_version_whose_informers_do_not_sync_fails_and_the_running_one_stays() {
        let mut offline = Offline::new(Duration::from_millis(300));
        let webapp = offline.plugin("webapp").await;
        offline.install("a.wasm", webapp).await.unwrap();
        offline.supervisor.run_controllers();
        let sync = offline.plugin("configmap-sync").await;
        let failed = offline.install("a.wasm", sync).await.unwrap_err();
        assert!(matches!(failed, PluginError::Start { .. }), "{failed}");
        let a = offline.status("a.wasm").unwrap();
        assert_eq!(a.name.as_deref(), Some("webapp"), "the old version stays");
        assert!(a.last_error.unwrap().contains("configmap-sync"));
        assert_eq!(
            offline.supervisor.controller("configmap-sync").map(|_| ()),
            None
        );
    }
}
