//! The manager's table of sources, their loaded plugin versions and controllers.
//!
//! Every method is synchronous and quick, because the manager's loop calls them: the slow work
//! around a change (syncing a version's informers, draining a stopped controller) happens in
//! tasks of the manager's, never here. After every change the table publishes its statuses to
//! the read-only [`Statuses`] view, and its loaded plugins to [`Live`], so readers never wait on
//! the loop.
//!
//! Invariants: at most one entry per source and per plugin name; a change is asked for with a
//! ticket, and only the source's latest ticket may change its entry (an older preparation that
//! finishes late is refused as superseded); an entry's plugin version is replaced only once the
//! new one has taken over its controller (or there is none); a failed change leaves the entry's
//! version and controller as they were.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::watch;

use super::error::PluginError;
use super::status::{PluginState, PluginStatus, waiting_for};
use crate::controller::{Controller, Prepared, Progress};
use crate::http::{PluginReport, ReadyRequires};
use crate::metrics::Metrics;
use crate::runtime::{Live, Plugin, Shares};

/// Every source's plugin.
pub struct Registry {
    entries: Vec<Entry>,
    next_ticket: u64,
    published: watch::Sender<Arc<[Row]>>,
    live: watch::Sender<Arc<BTreeMap<String, Arc<Plugin>>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            entries: Vec::new(),
            next_ticket: 0,
            published: watch::Sender::new(Arc::from([])),
            live: watch::Sender::new(Arc::default()),
        }
    }
}

struct Entry {
    source: String,
    loaded: Option<Loaded>,
    last_error: Option<String>,
    /// The latest change asked for.
    ticket: u64,
    /// Whether a version's informers are syncing for it.
    starting: bool,
}

struct Loaded {
    plugin: Arc<Plugin>,
    digest: String,
    controller: Option<Controller>,
}

/// One source's published status, with its controller's live figures.
struct Row {
    status: PluginStatus,
    progress: Option<Progress>,
    shares: Option<Shares>,
}

/// A read-only view of every source's status, current without asking the manager's loop.
#[derive(Clone)]
pub struct Statuses(watch::Receiver<Arc<[Row]>>);

impl Statuses {
    /// Every source's status now.
    pub fn current(&self) -> Vec<PluginStatus> {
        let rows = self.0.borrow().clone();
        rows.iter()
            .map(|row| {
                let mut status = row.status.clone();
                if let Some(progress) = &row.progress {
                    status.queue_depth = progress.queue_depth();
                    status.reconciles = progress.reconciles();
                    status.degraded = progress.degraded();
                }
                status
            })
            .collect()
    }

    /// What `source`'s loaded version holds of the instance pool and the guest memory budget:
    /// what a new version of it counts as given back.
    pub fn shares(&self, source: &str) -> Option<Shares> {
        let rows = self.0.borrow();
        rows.iter().find(|row| row.status.source == source)?.shares
    }
}

impl Statuses {
    /// Waits for the next change of any source's status; `false` once the table is gone.
    pub async fn changed(&mut self) -> bool {
        self.0.changed().await.is_ok()
    }
}

/// What the endpoints report of the plugins: their statuses, and whether the sources `/readyz`
/// waits for run.
pub struct Report {
    statuses: Statuses,
    requires: ReadyRequires,
}

impl Report {
    /// The report of `statuses`, ready when the sources `requires` names run.
    pub fn new(statuses: Statuses, requires: ReadyRequires) -> Self {
        Report { statuses, requires }
    }
}

impl PluginReport for Report {
    fn json(&self) -> String {
        serde_json::to_string(&self.statuses.current()).expect("statuses serialize")
    }

    fn not_ready(&self) -> Option<String> {
        waiting_for(self.requires, &self.statuses.current())
    }
}

impl Entry {
    fn name(&self) -> Option<&str> {
        self.loaded.as_ref().map(|l| l.plugin.name())
    }

    fn row(&self) -> Row {
        let loaded = self.loaded.as_ref();
        let controller = loaded.and_then(|l| l.controller.as_ref());
        let registration = loaded.map(|l| l.plugin.registration());
        let status = PluginStatus {
            source: self.source.clone(),
            name: registration.map(|r| r.name.clone()),
            version: registration.map(|r| r.version.clone()),
            digest: loaded.map(|l| l.digest.clone()),
            state: match (loaded, controller) {
                (_, Some(_)) => PluginState::Running,
                _ if self.starting => PluginState::Starting,
                (Some(_), None) if self.last_error.is_none() => PluginState::Loaded,
                _ => PluginState::Failed,
            },
            queue_depth: 0,
            reconciles: 0,
            last_error: self.last_error.clone(),
            degraded: None,
        };
        Row {
            status,
            progress: controller.map(Controller::progress),
            shares: loaded.map(|l| l.plugin.shares()),
        }
    }
}

impl Registry {
    /// The read-only view of the statuses this table publishes.
    pub fn statuses(&self) -> Statuses {
        Statuses(self.published.subscribe())
    }

    /// The plugins loaded now, by name, current after every change.
    pub fn live(&self) -> Live {
        self.live.subscribe()
    }

    /// Asks to make `plugin` the plugin of `source`; the ticket names that change in
    /// [`Registry::install`] and [`Registry::failed`]. Refused if another source has its name,
    /// unless that is a tenant's and `plugin` the operator's.
    pub(crate) fn ticket(&mut self, source: &str, plugin: &Plugin) -> Result<u64, PluginError> {
        self.holder(source, plugin)?;
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        let entry = self.entry(source);
        entry.ticket = ticket;
        entry.starting = true;
        self.publish();
        Ok(ticket)
    }

    /// Makes `plugin` (module `digest`) the plugin of `source` for change `ticket`; a
    /// `prepared` version also starts a controller or takes over the running one. Returns the
    /// controllers this replaced or evicted (a tenant's of the same name, when `plugin` is the
    /// operator's), for the caller to stop. On error nothing changes but the source's last error
    /// (and not even that when a later change superseded this one).
    pub(crate) fn install(
        &mut self,
        source: &str,
        ticket: u64,
        plugin: Arc<Plugin>,
        digest: String,
        prepared: Option<Prepared>,
        metrics: &Arc<Metrics>,
    ) -> Result<Vec<Controller>, PluginError> {
        self.current(source, ticket)?;
        let evicted = match self.claim(source, &plugin) {
            Ok(evicted) => evicted,
            Err(error) => {
                self.failed(source, ticket, error.to_string());
                return Err(error);
            }
        };
        let entry = self.entry(source);
        let running = entry.loaded.as_mut().and_then(|l| l.controller.take());
        let (controller, replaced) = match (prepared, running) {
            (None, running) => (None, running),
            (Some(prepared), Some(mut running)) => match running.upgrade(prepared) {
                Ok(_) => (Some(running), None),
                Err(prepared) => {
                    running.shutdown();
                    (Some(start(prepared, metrics)), Some(running))
                }
            },
            (Some(prepared), None) => (Some(start(prepared, metrics)), None),
        };
        entry.loaded = Some(Loaded {
            plugin,
            digest,
            controller,
        });
        entry.last_error = None;
        entry.starting = false;
        self.publish();
        Ok(replaced.into_iter().chain(evicted).collect())
    }

    /// Whether `plugin` is already `source`'s version.
    pub(crate) fn holds(&self, source: &str, plugin: &Arc<Plugin>) -> bool {
        self.entries
            .iter()
            .filter(|e| e.source == source)
            .filter_map(|e| e.loaded.as_ref())
            .any(|l| Arc::ptr_eq(&l.plugin, plugin))
    }

    /// Records that change `ticket` of `source` failed with `error`; its running version stays.
    pub(crate) fn failed(&mut self, source: &str, ticket: u64, error: String) {
        if self.current(source, ticket).is_err() {
            return;
        }
        let entry = self.entry(source);
        entry.last_error = Some(error);
        entry.starting = false;
        self.publish();
    }

    /// Records that a new module for `source` did not load; its running version stays.
    pub(crate) fn load_failed(&mut self, source: &str, error: String) {
        self.entry(source).last_error = Some(error);
        self.publish();
    }

    /// Forgets `source`: `None` if it was unknown, else the controller to stop, if it had one.
    pub(crate) fn remove(&mut self, source: &str) -> Option<Option<Controller>> {
        let index = self.entries.iter().position(|e| e.source == source)?;
        let entry = self.entries.remove(index);
        self.publish();
        Some(entry.loaded.and_then(|l| l.controller))
    }

    /// A ticket, the plugin and its digest for every loaded version without a controller, to
    /// prepare and install when controllers start running.
    pub(crate) fn unstarted(&mut self) -> Vec<(String, u64, Arc<Plugin>, String)> {
        let waiting: Vec<(String, Arc<Plugin>, String)> = self
            .entries
            .iter()
            .filter_map(|e| {
                let loaded = e.loaded.as_ref().filter(|l| l.controller.is_none())?;
                Some((
                    e.source.clone(),
                    loaded.plugin.clone(),
                    loaded.digest.clone(),
                ))
            })
            .collect();
        waiting
            .into_iter()
            .filter_map(|(source, plugin, digest)| {
                let ticket = self.ticket(&source, &plugin).ok()?;
                Some((source, ticket, plugin, digest))
            })
            .collect()
    }

    /// Takes every controller out of the table, newest first, to stop them.
    pub(crate) fn take_controllers(&mut self) -> Vec<Controller> {
        let controllers = self
            .entries
            .iter_mut()
            .rev()
            .filter_map(|e| e.loaded.as_mut()?.controller.take())
            .collect();
        self.publish();
        controllers
    }

    /// The running controller of plugin `name`.
    pub fn controller(&self, name: &str) -> Option<&Controller> {
        self.entries
            .iter()
            .filter(|e| e.name() == Some(name))
            .find_map(|e| e.loaded.as_ref()?.controller.as_ref())
    }

    /// Whether a source's loaded plugin is named `name`.
    pub(crate) fn has_name(&self, name: &str) -> bool {
        self.entries.iter().any(|e| e.name() == Some(name))
    }

    /// The index of the other source holding `plugin`'s name, if any: refused unless that
    /// source is a tenant's and `plugin` the operator's.
    fn holder(&self, source: &str, plugin: &Plugin) -> Result<Option<usize>, PluginError> {
        let Some(index) = self
            .entries
            .iter()
            .position(|e| e.source != source && e.name() == Some(plugin.name()))
        else {
            return Ok(None);
        };
        let holder = &self.entries[index];
        let by_tenant = holder.loaded.as_ref().is_some_and(|l| l.plugin.by_tenant());
        match by_tenant && !plugin.by_tenant() {
            true => Ok(Some(index)),
            false => Err(PluginError::NameTaken {
                name: plugin.name().to_owned(),
                source_name: holder.source.clone(),
            }),
        }
    }

    /// Takes `plugin`'s name for `source`: a tenant's plugin holding it is unloaded, its
    /// source's last error saying why; returns its controller, to stop.
    fn claim(&mut self, source: &str, plugin: &Plugin) -> Result<Option<Controller>, PluginError> {
        let Some(index) = self.holder(source, plugin)? else {
            return Ok(None);
        };
        let holder = &mut self.entries[index];
        let evicted = PluginError::Evicted {
            name: plugin.name().to_owned(),
            source_name: source.to_owned(),
        };
        tracing::warn!(source = %holder.source, "{evicted}");
        holder.last_error = Some(evicted.to_string());
        holder.starting = false;
        Ok(holder.loaded.take().and_then(|l| l.controller))
    }

    /// Whether `ticket` is still the latest change asked for `source`.
    fn current(&self, source: &str, ticket: u64) -> Result<(), PluginError> {
        match self.entries.iter().find(|e| e.source == source) {
            Some(entry) if entry.ticket == ticket => Ok(()),
            _ => Err(PluginError::Superseded {
                source_name: source.to_owned(),
            }),
        }
    }

    fn publish(&self) {
        let rows: Vec<Row> = self.entries.iter().map(Entry::row).collect();
        self.published.send_replace(rows.into());
        let live: BTreeMap<String, Arc<Plugin>> = self
            .entries
            .iter()
            .filter_map(|e| e.loaded.as_ref())
            .map(|l| (l.plugin.name().to_owned(), l.plugin.clone()))
            .collect();
        self.live.send_if_modified(|now| {
            let same = now.len() == live.len()
                && now
                    .iter()
                    .zip(&live)
                    .all(|((a, p), (b, q))| a == b && Arc::ptr_eq(p, q));
            if !same {
                *now = Arc::new(live);
            }
            !same
        });
    }

    fn entry(&mut self, source: &str) -> &mut Entry {
        let index = match self.entries.iter().position(|e| e.source == source) {
            Some(index) => index,
            None => {
                self.entries.push(Entry {
                    source: source.to_owned(),
                    loaded: None,
                    last_error: None,
                    ticket: 0,
                    starting: false,
                });
                self.entries.len() - 1
            }
        };
        &mut self.entries[index]
    }
}

fn start(prepared: Prepared, metrics: &Arc<Metrics>) -> Controller {
    let controller_metrics = metrics.controller(prepared.plugin().name());
    Controller::start(prepared, controller_metrics)
}
