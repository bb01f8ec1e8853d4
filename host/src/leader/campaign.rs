//! An [`Elector`] run in its own task, so the manager can keep serving plugin changes while it
//! waits to lead: its state moves from waiting to leading to lost (or to released, on request,
//! once the manager has stopped every controller).

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::Elector;

/// Where a campaign stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leadership {
    /// Trying to acquire the Lease.
    Waiting,
    /// Holding it.
    Leading,
    /// It was lost; the reason.
    Lost(String),
}

/// A running campaign for one Lease.
pub struct Campaign {
    state: watch::Receiver<Leadership>,
    release: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Campaign {
    /// Starts campaigning with `elector`.
    pub fn start(mut elector: Elector) -> Self {
        let (state, receiver) = watch::channel(Leadership::Waiting);
        let (release, released) = oneshot::channel();
        let task = tokio::spawn(async move {
            elector.acquire().await;
            state.send_replace(Leadership::Leading);
            tokio::select! {
                lost = elector.hold() => {
                    state.send_replace(Leadership::Lost(lost.to_string()));
                }
                _ = released => {
                    let deadline = elector.config().renew_deadline;
                    if tokio::time::timeout(deadline, elector.release()).await.is_err() {
                        tracing::warn!("releasing the lease did not finish within the renew deadline");
                    }
                }
            }
        });
        Campaign {
            state: receiver,
            release: Some(release),
            task,
        }
    }

    /// The state now.
    pub fn state(&self) -> Leadership {
        self.state.borrow().clone()
    }

    /// Waits for the state to change and returns the new one.
    pub async fn changed(&mut self) -> Leadership {
        if self.state.changed().await.is_err() {
            // The campaign is over: nothing will change again.
            std::future::pending::<()>().await;
        }
        self.state.borrow_and_update().clone()
    }

    /// Releases the Lease if held, else stops trying; returns once done.
    pub async fn release(mut self) {
        if self.state() == Leadership::Leading
            && let Some(release) = self.release.take()
            && release.send(()).is_ok()
        {
            let _ = (&mut self.task).await;
        }
        self.task.abort();
    }
}
