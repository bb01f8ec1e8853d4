//! Leader election as the manager follows it: the group's Lease (whose holder runs the
//! controllers and what only the leader runs) and, when sharding, this replica's member Lease
//! (whose holder reconciles its shard).

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::watch;

use super::groups::Group;
use super::{Manager, ManagerError};
use crate::leader::{Campaign, Elector, LeaderConfig, Leadership};
use crate::runtime::{Live, Plugin};
use crate::shard::{Members, ShardedKinds, Sharder};
use crate::webhook::Writer;

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
}

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
