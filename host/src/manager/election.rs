//! Leader election as the manager follows it: the group's Lease (whose holder runs the
//! controllers and what only the leader runs) and, when sharding, this replica's member Lease
//! (whose holder reconciles its shard), and what the leader alone undoes when it stops.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::groups::Group;
use super::{Manager, ManagerError};
use crate::leader::{Campaign, Elector, LeaderConfig, Leadership};
use crate::runtime::{Live, Plugin};
use crate::shard::{Members, ShardedKinds, Sharder};
use crate::webhook::{Endpoint, Target, Writer};

impl Manager {
    /// When sharding, starts observing the group's members and returns this replica's member
    /// Lease to campaign for.
    pub(super) fn observe_members(&mut self) -> Option<LeaderConfig> {
        let (shard, group) = (self.shard.as_mut()?, self.options.leader.as_ref()?);
        let poll = group.lease_duration / 4;
        shard.members = Some(Members::new(self.client.clone(), group).observe(poll));
        Some(shard.member.clone())
    }

    pub(super) fn campaign(&self, config: LeaderConfig) -> Result<Campaign, ManagerError> {
        tracing::info!(lease = %config.name, namespace = %config.namespace, identity = %config.identity, "waiting to lead");
        self.metrics.set_leader(&config.name, false);
        Ok(Campaign::start(Elector::new(self.client.clone(), config)?))
    }

    /// Leads (and runs the controllers, unless sharding) once the group's Lease is held; ends
    /// the run when it is lost.
    pub(super) fn follow(&mut self, state: Leadership) -> Result<(), ManagerError> {
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
                    self.plugins.run_controllers();
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
    pub(super) fn follow_member(&mut self, state: Leadership) -> Result<(), ManagerError> {
        match state {
            Leadership::Waiting => Ok(()),
            Leadership::Leading => {
                tracing::info!("holding this replica's member Lease: reconciling its shard");
                self.plugins.run_controllers();
                Ok(())
            }
            Leadership::Lost(reason) => Err(ManagerError::LeaseLost(format!(
                "member Lease lost, so this replica's shard is no longer its own: {reason}"
            ))),
        }
    }

    /// Starts what only the leader runs: the webhook configurations' writer and, when sharding,
    /// the sharder.
    pub(super) fn lead(&mut self) {
        let target = self.options.webhook.as_ref().and_then(|w| w.target.clone());
        if let (Some(target), Some(tls)) = (target, self.webhook_tls.clone()) {
            let writer = Writer::new(self.client.clone(), target);
            let live = self.plugins.live();
            self.groups.spawn(Group::Leader, writer.run(live, tls));
        }
        let members = self.shard.as_ref().and_then(|s| s.members.clone());
        if let (Some(members), Some(leader)) = (members, &self.options.leader) {
            let namespaces = self.options.namespaces.clone();
            let client = self.client.clone();
            let sharder = Sharder::new(client, leader, namespaces, members, &self.metrics);
            let live = self.plugins.live();
            self.groups
                .spawn(Group::Leader, shard_plugins(sharder, live));
        }
    }

    /// Whether the apiserver reaches the webhooks through a Service (or a configuration someone
    /// else wrote), which other replicas may back, rather than at this host's own URL.
    pub(super) fn webhooks_behind_a_service(&self) -> bool {
        !matches!(
            self.webhook_target(),
            Some(Target {
                endpoint: Endpoint::Url(_),
                ..
            })
        )
    }

    /// Off-cluster, the leader is the only host its webhook configurations call: when it stops,
    /// it deletes them and reverts the conversions it set, so no write of their kinds fails
    /// (under `failurePolicy: Fail`) while nothing serves them; the next host to lead writes them
    /// again. Behind a Service they stay: the other replicas still serve them, and removing them
    /// would admit every write unchecked during a rolling update.
    pub(super) async fn disarm_webhooks(&mut self) {
        let Some(target) = self.webhook_target().cloned() else {
            return;
        };
        let leading = self.groups.stop_group(Group::Leader).await;
        if !leading || self.webhooks_behind_a_service() {
            return;
        }
        let mut writer = Writer::new(self.client.clone(), target);
        let none = BTreeMap::new();
        match tokio::time::timeout(DISARM_TIMEOUT, writer.sync(&none, &[])).await {
            Ok(Ok(())) => tracing::info!(
                "stopping: this host's webhook configurations deleted and its conversions reverted, as no host serves them now"
            ),
            Ok(Err(error)) => {
                tracing::warn!("stopping: webhook configurations not removed: {error}")
            }
            Err(_) => tracing::warn!(
                "stopping: webhook configurations not removed within {DISARM_TIMEOUT:?}"
            ),
        }
    }

    fn webhook_target(&self) -> Option<&Target> {
        self.options.webhook.as_ref()?.target.as_ref()
    }
}

/// How long a stopping leader tries to remove the webhook configurations only it serves.
const DISARM_TIMEOUT: Duration = Duration::from_secs(10);

/// The next state of `campaign`; never, without one.
pub(super) async fn changed(campaign: &mut Option<Campaign>) -> Leadership {
    match campaign {
        Some(campaign) => campaign.changed().await,
        None => std::future::pending().await,
    }
}

/// Runs `sharder` over the primary and owned kinds of the plugins `live` holds, as they change.
async fn shard_plugins(sharder: Sharder, mut live: Live) {
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
