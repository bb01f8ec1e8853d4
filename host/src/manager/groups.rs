//! The manager's own long-running tasks, in groups as controller-runtime's Manager keeps its
//! runnables: the HTTP endpoints and the webhook server run on every replica from
//! [`super::Manager::serve`], what only the leader runs starts when it leads, and the cache's
//! warm-up while a replica waits for the Lease. All stop together once the controllers have
//! drained and the Leases are released: the leader's tasks and the warm-up first, then the
//! webhook server, then the endpoints.

use std::future::Future;

use tokio::task::JoinHandle;

/// Which group a task belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Group {
    /// `/metrics`, `/healthz`, `/readyz`, `/plugins`.
    Endpoints,
    /// The plugins' webhooks.
    Webhooks,
    /// The webhook configurations' writer and the sharder.
    Leader,
    /// Informing the loaded plugins' kinds before leading.
    WarmUp,
}

/// The stop order: the reverse of how close to the outside world each group is.
const STOP_ORDER: [Group; 4] = [
    Group::Leader,
    Group::WarmUp,
    Group::Webhooks,
    Group::Endpoints,
];

/// The running tasks of every group.
#[derive(Default)]
pub(super) struct Groups {
    tasks: Vec<(Group, JoinHandle<()>)>,
}

impl Groups {
    /// Runs `task` as part of `group`.
    pub(super) fn spawn(&mut self, group: Group, task: impl Future<Output = ()> + Send + 'static) {
        self.tasks.push((group, tokio::spawn(task)));
    }

    /// Whether a task of `group` was started.
    pub(super) fn has(&self, group: Group) -> bool {
        self.tasks.iter().any(|(g, _)| *g == group)
    }

    /// Stops every task, group by group in [`STOP_ORDER`]; returns the groups in the order they
    /// were stopped.
    pub(super) async fn stop(&mut self) -> Vec<Group> {
        let mut stopped = Vec::new();
        for group in STOP_ORDER {
            if self.stop_group(group).await {
                stopped.push(group);
            }
        }
        stopped
    }

    /// Stops the tasks of `group` (before the others, when a step of the stop needs them gone);
    /// whether it had any.
    pub(super) async fn stop_group(&mut self, group: Group) -> bool {
        let (these, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.tasks)
            .into_iter()
            .partition(|(g, _)| *g == group);
        self.tasks = rest;
        for (_, task) in &these {
            task.abort();
        }
        let had = !these.is_empty();
        for (_, task) in these {
            let _ = task.await;
        }
        had
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_group_stops_leader_first_and_endpoints_last() {
        let mut groups = Groups::default();
        let (dropped, mut drops) = tokio::sync::mpsc::unbounded_channel();
        for group in [
            Group::Endpoints,
            Group::Webhooks,
            Group::WarmUp,
            Group::Leader,
        ] {
            let guard = Dropped(group, dropped.clone());
            groups.spawn(group, async move {
                let _guard = guard;
                std::future::pending::<()>().await;
            });
        }
        assert!(groups.has(Group::Leader));
        tokio::task::yield_now().await;
        let stopped = groups.stop().await;
        assert_eq!(stopped, STOP_ORDER);
        let mut order = Vec::new();
        while let Ok(group) = drops.try_recv() {
            order.push(group);
        }
        assert_eq!(
            order, STOP_ORDER,
            "each group's tasks end before the next group stops"
        );
        assert!(!groups.has(Group::Endpoints));
    }

    struct Dropped(Group, tokio::sync::mpsc::UnboundedSender<Group>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.1.send(self.0);
        }
    }
}
