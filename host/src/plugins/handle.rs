//! How plugin sources reach a running manager: a [`PluginHandle`] compiles modules itself and
//! sends only the swap to the manager's loop, over a bounded channel; it reads statuses from the
//! registry's published view without asking the loop.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::error::PluginError;
use super::loader::Loader;
use super::registry::Statuses;
use super::status::PluginStatus;
use crate::distribution::digest;
use crate::runtime::{Plugin, PluginOptions};

/// How many plugin changes may wait for the manager's loop.
const BACKLOG: usize = 16;

/// A request to the manager's loop.
pub(crate) enum Command {
    /// Make `plugin` the plugin of `source`.
    Install {
        source: String,
        plugin: Arc<Plugin>,
        digest: String,
        reply: oneshot::Sender<Result<(), PluginError>>,
    },
    /// `source`'s new module did not load; replies once that is recorded.
    Failed {
        source: String,
        error: String,
        reply: oneshot::Sender<()>,
    },
    /// Forget `source`; replies whether it was known.
    Remove {
        source: String,
        reply: oneshot::Sender<bool>,
    },
}

/// How an install went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Installed {
    /// Compiling, checking and describing the module, outside the manager's loop.
    pub loaded_in: Duration,
    /// Syncing the version's informers (when controllers run) and swapping it in.
    pub swapped_in: Duration,
}

/// Changes and lists the plugins of a running manager.
#[derive(Clone)]
pub struct PluginHandle {
    loader: Loader,
    commands: mpsc::Sender<Command>,
    statuses: Statuses,
    leading: Arc<AtomicBool>,
}

/// A handle reading `statuses`, and the receiving end its manager's loop reads.
pub(crate) fn channel(
    loader: Loader,
    statuses: Statuses,
) -> (PluginHandle, mpsc::Receiver<Command>) {
    let (commands, receiver) = mpsc::channel(BACKLOG);
    let leading = Arc::default();
    let handle = PluginHandle {
        loader,
        commands,
        statuses,
        leading,
    };
    (handle, receiver)
}

impl PluginHandle {
    /// Whether the manager runs controllers (it leads, or does not elect), and so speaks for
    /// the plugins in statuses others read.
    pub fn leading(&self) -> bool {
        self.leading.load(Ordering::Relaxed)
    }

    pub(crate) fn set_leading(&self, leading: bool) {
        self.leading.store(leading, Ordering::Relaxed);
    }

    /// Compiles `bytes` (named `file` in errors) and makes it `source`'s plugin, counting the
    /// shares of the version it replaces as given back. If it does not load, or cannot take
    /// over, the running version stays and the error is recorded.
    pub async fn install(
        &self,
        source: &str,
        file: &Path,
        bytes: Vec<u8>,
        mut options: PluginOptions,
    ) -> Result<Installed, PluginError> {
        options.replaces = self.statuses.shares(source);
        let digest = digest(&bytes);
        let started = Instant::now();
        let plugin = match self.loader.load(file, bytes, options).await {
            Ok(plugin) => plugin,
            Err(error) => {
                self.failed(source, error.to_string()).await?;
                return Err(error);
            }
        };
        let loaded_in = started.elapsed();
        let (reply, answer) = oneshot::channel();
        let install = Command::Install {
            source: source.to_owned(),
            plugin,
            digest,
            reply,
        };
        self.ask(install, answer).await??;
        Ok(Installed {
            loaded_in,
            swapped_in: started.elapsed() - loaded_in,
        })
    }

    /// The runtime plugins load into (to adopt precompiled components, and say which engine
    /// they must be for).
    pub fn runtime(&self) -> &crate::runtime::Runtime {
        self.loader.runtime()
    }

    /// Records that a new module for `source` did not load, for `error` (shown as the source's
    /// last error beside the version still running); returns once it is recorded.
    pub async fn failed(&self, source: &str, error: String) -> Result<(), PluginError> {
        let (reply, recorded) = oneshot::channel();
        let failed = Command::Failed {
            source: source.to_owned(),
            error,
            reply,
        };
        self.ask(failed, recorded).await
    }

    /// Unloads `source`'s plugin; false if there was none.
    pub async fn remove(&self, source: &str) -> Result<bool, PluginError> {
        let (reply, answer) = oneshot::channel();
        let remove = Command::Remove {
            source: source.to_owned(),
            reply,
        };
        self.ask(remove, answer).await
    }

    /// Every source's status now.
    pub fn statuses(&self) -> Vec<PluginStatus> {
        self.statuses.current()
    }

    /// The statuses' view, to wait for their changes.
    pub fn status_view(&self) -> Statuses {
        self.statuses.clone()
    }

    async fn ask<T>(
        &self,
        command: Command,
        answer: oneshot::Receiver<T>,
    ) -> Result<T, PluginError> {
        self.commands
            .send(command)
            .await
            .map_err(|_| PluginError::Stopped)?;
        answer.await.map_err(|_| PluginError::Stopped)
    }
}
