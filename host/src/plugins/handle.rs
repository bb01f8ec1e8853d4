//! How plugin sources and the admin endpoint reach a running manager: a [`PluginHandle`]
//! compiles modules itself and sends only the swap to the manager's loop, over a bounded channel.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::{Loader, PluginError, PluginStatus, digest};
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
    /// `source`'s new module did not load.
    Failed { source: String, error: String },
    /// Forget `source`; replies whether it was known.
    Remove {
        source: String,
        reply: oneshot::Sender<bool>,
    },
    /// Every source's status.
    List {
        reply: oneshot::Sender<Vec<PluginStatus>>,
    },
}

/// Changes and lists the plugins of a running manager.
#[derive(Clone)]
pub struct PluginHandle {
    loader: Loader,
    commands: mpsc::Sender<Command>,
}

/// A handle and the receiving end its manager's loop reads.
pub(crate) fn channel(loader: Loader) -> (PluginHandle, mpsc::Receiver<Command>) {
    let (commands, receiver) = mpsc::channel(BACKLOG);
    (PluginHandle { loader, commands }, receiver)
}

impl PluginHandle {
    /// Compiles `bytes` (named `file` in errors) and makes it `source`'s plugin. If it does not
    /// load, or cannot take over, the running version stays and the error is recorded.
    pub async fn install(
        &self,
        source: &str,
        file: &Path,
        bytes: Vec<u8>,
        options: PluginOptions,
    ) -> Result<(), PluginError> {
        let digest = digest(&bytes);
        let plugin = match self.loader.load(file, bytes, options).await {
            Ok(plugin) => plugin,
            Err(error) => {
                let failed = Command::Failed {
                    source: source.to_owned(),
                    error: error.to_string(),
                };
                self.commands
                    .send(failed)
                    .await
                    .map_err(|_| PluginError::Stopped)?;
                return Err(error.into());
            }
        };
        let (reply, answer) = oneshot::channel();
        let install = Command::Install {
            source: source.to_owned(),
            plugin,
            digest,
            reply,
        };
        self.ask(install, answer).await?
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

    /// Every source's status.
    pub async fn list(&self) -> Result<Vec<PluginStatus>, PluginError> {
        let (reply, answer) = oneshot::channel();
        self.ask(Command::List { reply }, answer).await
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
