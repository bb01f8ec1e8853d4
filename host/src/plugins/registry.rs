//! The manager's table of sources, their loaded plugin versions and controllers.
//!
//! Invariants: at most one entry per source and per plugin name; an entry's plugin version is
//! replaced only once the new one has taken over its controller (or there is none); a failed
//! change leaves the entry's version and controller as they were.

use std::sync::Arc;

use tokio::time::Instant;

use super::{PluginError, PluginState, PluginStatus};
use crate::cache::Cache;
use crate::controller::{Controller, UpgradeError};
use crate::metrics::Metrics;
use crate::runtime::Plugin;

/// Every source's plugin.
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
}

struct Entry {
    source: String,
    loaded: Option<Loaded>,
    last_error: Option<String>,
}

struct Loaded {
    plugin: Arc<Plugin>,
    digest: String,
    controller: Option<Controller>,
}

impl Entry {
    fn name(&self) -> Option<&str> {
        self.loaded.as_ref().map(|l| l.plugin.name())
    }

    fn status(&self) -> PluginStatus {
        let loaded = self.loaded.as_ref();
        let controller = loaded.and_then(|l| l.controller.as_ref());
        let registration = loaded.map(|l| l.plugin.registration());
        PluginStatus {
            source: self.source.clone(),
            name: registration.map(|r| r.name.clone()),
            version: registration.map(|r| r.version.clone()),
            digest: loaded.map(|l| l.digest.clone()),
            state: match (loaded, controller) {
                (_, Some(_)) => PluginState::Running,
                (Some(_), None) if self.last_error.is_none() => PluginState::Loaded,
                _ => PluginState::Failed,
            },
            queue_depth: controller.map_or(0, Controller::queue_depth),
            reconciles: controller.map_or(0, |c| c.stats().total()),
            last_error: self.last_error.clone(),
        }
    }
}

/// What starting a controller needs.
pub(crate) struct Context<'a> {
    /// The shared cache.
    pub cache: &'a Cache,
    /// The process's metrics.
    pub metrics: &'a Arc<Metrics>,
    /// Whether controllers run (this process leads, or does not elect).
    pub running: bool,
    /// How long in-flight reconciles of a stopped controller may take.
    pub grace: std::time::Duration,
}

impl Context<'_> {
    async fn start(&self, plugin: &Arc<Plugin>) -> Result<Option<Controller>, PluginError> {
        if !self.running {
            return Ok(None);
        }
        let metrics = self.metrics.controller(plugin.name());
        Controller::start(self.cache, plugin.clone(), metrics)
            .await
            .map(Some)
            .map_err(|source| PluginError::Start {
                plugin: plugin.name().to_owned(),
                source: Box::new(source),
            })
    }

    async fn stop(&self, controller: Controller) {
        controller.shutdown();
        controller.stop(Instant::now() + self.grace).await;
    }
}

impl Registry {
    /// Makes `plugin` (module `digest`) the plugin of `source`, starting or upgrading its
    /// controller when controllers run. On error nothing changes but the source's last error.
    pub(crate) async fn install(
        &mut self,
        context: &Context<'_>,
        source: &str,
        plugin: Arc<Plugin>,
        digest: String,
    ) -> Result<(), PluginError> {
        let result = self.swap(context, source, plugin, digest).await;
        let entry = self.entry(source);
        entry.last_error = result.as_ref().err().map(ToString::to_string);
        result
    }

    async fn swap(
        &mut self,
        context: &Context<'_>,
        source: &str,
        plugin: Arc<Plugin>,
        digest: String,
    ) -> Result<(), PluginError> {
        let name = plugin.name();
        if let Some(other) = self
            .entries
            .iter()
            .find(|e| e.source != source && e.name() == Some(name))
        {
            return Err(PluginError::NameTaken {
                name: name.to_owned(),
                source_name: other.source.clone(),
            });
        }
        let entry = self.entry(source);
        let same_name = entry.name() == Some(name);
        let running = entry.loaded.as_mut().and_then(|l| l.controller.as_mut());
        let controller = match running {
            Some(controller) if same_name => {
                match controller.upgrade(context.cache, plugin.clone()).await {
                    Ok(_) => None,
                    Err(UpgradeError::PrimaryChanged { .. }) => Some(context.start(&plugin).await?),
                    Err(error) => return Err(error.into()),
                }
            }
            _ => Some(context.start(&plugin).await?),
        };
        let previous = entry.loaded.replace(Loaded {
            plugin,
            digest,
            controller: None,
        });
        let loaded = entry.loaded.as_mut().expect("just replaced");
        match (previous, controller) {
            (Some(previous), None) => loaded.controller = previous.controller,
            (previous, Some(started)) => {
                loaded.controller = started;
                if let Some(old) = previous.and_then(|p| p.controller) {
                    context.stop(old).await;
                }
            }
            (None, None) => {}
        }
        Ok(())
    }

    /// Records that `source`'s new module failed to load; its running version stays.
    pub(crate) fn failed(&mut self, source: &str, error: String) {
        self.entry(source).last_error = Some(error);
    }

    /// Forgets `source`, stopping its controller; false if it was unknown.
    pub(crate) async fn remove(&mut self, context: &Context<'_>, source: &str) -> bool {
        let Some(index) = self.entries.iter().position(|e| e.source == source) else {
            return false;
        };
        let entry = self.entries.remove(index);
        if let Some(controller) = entry.loaded.and_then(|l| l.controller) {
            context.stop(controller).await;
        }
        true
    }

    /// Starts the controller of every loaded plugin that has none; the first failure ends it.
    pub(crate) async fn start_all(&mut self, context: &Context<'_>) -> Result<(), PluginError> {
        for entry in &mut self.entries {
            let Some(loaded) = entry.loaded.as_mut() else {
                continue;
            };
            if loaded.controller.is_none() {
                loaded.controller = context.start(&loaded.plugin).await?;
            }
        }
        Ok(())
    }

    /// Stops every controller, newest first, within `deadline`; true if all drained.
    pub(crate) async fn stop_all(&mut self, deadline: Instant) -> bool {
        let controllers: Vec<Controller> = self
            .entries
            .iter_mut()
            .filter_map(|e| e.loaded.as_mut()?.controller.take())
            .collect();
        controllers.iter().for_each(Controller::shutdown);
        let mut drained = true;
        for controller in controllers.into_iter().rev() {
            drained &= controller.stop(deadline).await;
        }
        drained
    }

    /// The running controller of plugin `name`.
    pub fn controller(&self, name: &str) -> Option<&Controller> {
        self.entries
            .iter()
            .filter(|e| e.name() == Some(name))
            .find_map(|e| e.loaded.as_ref()?.controller.as_ref())
    }

    /// Every source's status.
    pub fn statuses(&self) -> Vec<PluginStatus> {
        self.entries.iter().map(Entry::status).collect()
    }

    fn entry(&mut self, source: &str) -> &mut Entry {
        let index = match self.entries.iter().position(|e| e.source == source) {
            Some(index) => index,
            None => {
                self.entries.push(Entry {
                    source: source.to_owned(),
                    loaded: None,
                    last_error: None,
                });
                self.entries.len() - 1
            }
        };
        &mut self.entries[index]
    }
}
