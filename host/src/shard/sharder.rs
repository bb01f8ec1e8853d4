//! The leader's sharder: it labels every primary object of every plugin with the member that
//! owns it, and every object a primary controls with its primary's label, so that each replica
//! watches only its own label.
//!
//! Whenever the live members (as this replica has observed them since it started) or the watched
//! objects change (at most one pass per
//! [`DEBOUNCE`]), a pass makes each primary's move ([`decide`]) and gives each controlled object
//! its primary's owner label, unless the primary is being drained: its objects move once it has.
//! A pass writes only what differs, so a pass over converged objects sends nothing; a write that
//! fails is tried again by a pass a quarter of the lease duration later.
//!
//! Invariant: no object leaves a live member without that member's acknowledgement (the drain
//! handshake of [`decide`]); an object of a member that is gone moves at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::ApiResource;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, MissedTickBehavior};

use crate::cache::Namespaces;
use crate::leader::LeaderConfig;
use crate::metrics::Metrics;
use crate::shard::assign::{Move, ShardLabels, decide};
use crate::shard::members::Shown;
use crate::shard::objects::{Objects, Shard, SharedObjects, Watches, lock};
use crate::shard::ring::Ring;
use wasmop_contract::object::{GroupVersionKind, ObjectKey};

/// The shortest time between two passes.
const DEBOUNCE: Duration = Duration::from_millis(250);
/// How many writes a pass has in flight at once.
const CONCURRENCY: usize = 16;
/// The field manager of the sharder's writes.
const FIELD_MANAGER: &str = "wasmop-sharder";

/// The kinds one plugin shards: its primary kind and the kinds whose objects it controls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardedKinds {
    /// The kind it reconciles; each object is assigned to a member by its key.
    pub primary: GroupVersionKind,
    /// The kinds of the objects its primaries control; each follows its controller.
    pub owned: Vec<GroupVersionKind>,
}

/// The leader's labeller.
pub struct Sharder {
    client: kube::Client,
    labels: ShardLabels,
    members: watch::Receiver<Option<Ring>>,
    shown: Shown,
    poll: Duration,
    watches: Watches,
    changed: Arc<Notify>,
    ring: Ring,
    plugins: Vec<ShardedKinds>,
}

impl Sharder {
    /// A sharder for `leader`'s group (its shard labels), watching `namespaces`, assigning to the
    /// live `members` (as [`Members::observe`] reports them) and showing their count in `metrics`.
    pub fn new(
        client: kube::Client,
        leader: &LeaderConfig,
        namespaces: Namespaces,
        members: watch::Receiver<Option<Ring>>,
        metrics: &Metrics,
    ) -> Self {
        let labels = ShardLabels::new(&leader.name);
        let changed = Arc::new(Notify::new());
        Sharder {
            members,
            shown: Shown::new(metrics, &leader.name),
            poll: leader.lease_duration / 4,
            watches: Watches::new(client.clone(), namespaces, labels.clone(), changed.clone()),
            client,
            labels,
            changed,
            ring: Ring::default(),
            plugins: Vec::new(),
        }
    }

    /// Keeps the objects of the kinds `kinds` names labelled until dropped (the leader runs it as
    /// a task and aborts it when leadership ends), watching each kind only while it is named.
    pub async fn run(mut self, mut kinds: watch::Receiver<Vec<ShardedKinds>>) {
        self.shard(kinds.borrow_and_update().clone());
        if self.members.wait_for(Option::is_some).await.is_err() {
            return;
        }
        self.follow_members();
        let mut poll = tokio::time::interval_at(Instant::now() + self.poll, self.poll);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let changed = self.changed.clone();
        let (mut dirty, mut retry, mut open, mut observed) = (true, false, true, true);
        let mut next = Instant::now();
        loop {
            tokio::select! {
                update = self.members.changed(), if observed => match update {
                    Ok(()) => dirty |= self.follow_members(),
                    Err(_) => observed = false,
                },
                update = kinds.changed(), if open => match update {
                    Ok(()) => {
                        self.shard(kinds.borrow_and_update().clone());
                        dirty = true;
                    }
                    Err(_) => open = false,
                },
                _ = poll.tick() => dirty |= std::mem::take(&mut retry),
                () = changed.notified() => dirty = true,
                () = tokio::time::sleep_until(next), if dirty => {
                    let outcome = self.pass().await;
                    dirty = outcome.written() > 0;
                    retry = outcome.failed > 0;
                    next = Instant::now() + DEBOUNCE;
                }
            }
        }
    }

    /// Shards `plugins` from now on, watching exactly their kinds.
    fn shard(&mut self, plugins: Vec<ShardedKinds>) {
        self.plugins = plugins;
        let mut kinds: Vec<&GroupVersionKind> = Vec::new();
        for plugin in &self.plugins {
            for kind in std::iter::once(&plugin.primary).chain(&plugin.owned) {
                if !kinds.contains(&kind) {
                    kinds.push(kind);
                }
            }
        }
        self.watches.set(&kinds);
    }

    /// Takes the members last observed; true when they changed.
    fn follow_members(&mut self) -> bool {
        let Some(ring) = self.members.borrow_and_update().clone() else {
            return false;
        };
        self.shown.set(&ring);
        if ring == self.ring {
            return false;
        }
        self.ring = ring;
        true
    }

    /// One pass: plans every write and sends them.
    async fn pass(&self) -> Outcome {
        let writes = self.plan();
        let outcome = futures::stream::iter(writes)
            .map(|write| self.write(write))
            .buffer_unordered(CONCURRENCY)
            .fold(Outcome::default(), |outcome, sent| {
                futures::future::ready(outcome.add(sent))
            })
            .await;
        if outcome.written() > 0 {
            let Outcome {
                assigned,
                drained,
                relabelled,
                failed,
            } = outcome;
            tracing::info!(assigned, drained, relabelled, failed, "sharder pass");
        }
        outcome
    }

    /// The writes that bring every primary to its member and every owned object to its primary.
    fn plan(&self) -> Vec<Write> {
        let (primaries, owned) = kinds(&self.plugins);
        let mut writes = Vec::new();
        for kind in primaries {
            if let Some(shared) = self.watches.objects(kind) {
                let objects = lock(shared);
                let changes = moves(&objects, &self.ring);
                writes.extend(Write::all(shared, &objects, changes));
            }
        }
        for (kind, owners) in owned {
            let Some(shared) = self.watches.objects(kind) else {
                continue;
            };
            let guards: Vec<_> = owners
                .into_iter()
                .filter_map(|k| self.watches.objects(k).map(|o| (k, lock(o))))
                .collect();
            let owners: Vec<(&GroupVersionKind, &Objects)> =
                guards.iter().map(|(k, objects)| (*k, &**objects)).collect();
            let objects = lock(shared);
            let changes = follows(&objects, &owners);
            writes.extend(Write::all(shared, &objects, changes));
        }
        writes
    }

    /// Sends one write; on success, records it in the store unless the watch has moved on.
    async fn write(&self, write: Write) -> Sent {
        let api: Api<DynamicObject> = match write.key.namespace.as_str() {
            "" => Api::all_with(self.client.clone(), &write.resource),
            namespace => Api::namespaced_with(self.client.clone(), namespace, &write.resource),
        };
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..Default::default()
        };
        let patch = Patch::Merge(write.change.patch(&self.labels));
        match api.patch_metadata(&write.key.name, &params, &patch).await {
            Ok(_) => {
                write.record();
                Sent::Written(write.change)
            }
            Err(kube::Error::Api(status)) if matches!(status.code, 404 | 409) => Sent::Skipped,
            Err(error) => {
                let (kind, key) = (&write.resource.kind, &write.key);
                tracing::warn!(%kind, %key, "sharder write failed, retrying on a later pass: {error}");
                Sent::Failed
            }
        }
    }
}

/// The primary kinds of `plugins`, and each owned kind with the primary kinds its objects may
/// follow. A kind that is some plugin's primary is assigned by its own key, never as owned.
fn kinds(plugins: &[ShardedKinds]) -> OwnedBy<'_> {
    let mut primaries: Vec<&GroupVersionKind> = Vec::new();
    for plugin in plugins {
        if !primaries.contains(&&plugin.primary) {
            primaries.push(&plugin.primary);
        }
    }
    let mut owned: HashMap<&GroupVersionKind, Vec<&GroupVersionKind>> = HashMap::new();
    for plugin in plugins {
        for kind in plugin.owned.iter().filter(|k| !primaries.contains(k)) {
            let owners = owned.entry(kind).or_default();
            if !owners.contains(&&plugin.primary) {
                owners.push(&plugin.primary);
            }
        }
    }
    (primaries, owned)
}

/// The primary kinds, and each owned kind with the primary kinds that control its objects.
type OwnedBy<'a> = (
    Vec<&'a GroupVersionKind>,
    HashMap<&'a GroupVersionKind, Vec<&'a GroupVersionKind>>,
);

/// One object's change: its key, its shard labels as planned from, and what to write.
type Planned = (ObjectKey, Shard, Change);

/// The moves of the primaries `objects` over `ring`.
fn moves(objects: &Objects, ring: &Ring) -> Vec<Planned> {
    objects
        .objects
        .iter()
        .filter_map(|(key, tracked)| {
            let shard = &tracked.shard;
            let change = match decide(
                &key.to_string(),
                shard.owner.as_deref(),
                shard.draining,
                ring,
            ) {
                Move::Stay => return None,
                Move::Assign(member) => Change::Assign(member),
                Move::Drain => Change::Drain,
            };
            Some((key.clone(), shard.clone(), change))
        })
        .collect()
}

/// The relabellings of the owned `objects` whose controller is one of `owners`' objects, not
/// being drained, with another owner label.
fn follows(objects: &Objects, owners: &[(&GroupVersionKind, &Objects)]) -> Vec<Planned> {
    objects
        .objects
        .iter()
        .filter_map(|(key, tracked)| {
            let controller = tracked.controller.as_deref()?;
            let (_, primaries) = owners.iter().find(|(kind, _)| {
                kind.kind == controller.kind && kind.api_version() == controller.api_version
            })?;
            let primary = &primaries
                .controller(&key.namespace, &controller.name)?
                .shard;
            if primary.draining || primary.owner == tracked.shard.owner {
                return None;
            }
            let change = Change::Follow(primary.owner.clone());
            Some((key.clone(), tracked.shard.clone(), change))
        })
        .collect()
}

/// What a write does to an object's shard labels.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// Label it with this member and clear the drain label.
    Assign(String),
    /// Add the drain label.
    Drain,
    /// Give an owned object its primary's owner label, or none.
    Follow(Option<String>),
}

impl Change {
    /// The merge patch that makes the change.
    fn patch(&self, labels: &ShardLabels) -> Value {
        let labels = match self {
            Change::Assign(member) => json!({ &labels.owner: member, &labels.drain: null }),
            Change::Drain => json!({ &labels.drain: "true" }),
            Change::Follow(owner) => json!({ &labels.owner: owner }),
        };
        json!({ "metadata": { "labels": labels } })
    }

    /// `from` once changed.
    fn applied(&self, from: &Shard) -> Shard {
        match self {
            Change::Assign(member) => Shard {
                owner: Some(member.clone()),
                draining: false,
            },
            Change::Drain => Shard {
                draining: true,
                ..from.clone()
            },
            Change::Follow(owner) => Shard {
                owner: owner.clone(),
                ..from.clone()
            },
        }
    }
}

/// One planned write.
struct Write {
    resource: ApiResource,
    objects: SharedObjects,
    key: ObjectKey,
    from: Shard,
    change: Change,
}

impl Write {
    /// The writes of `changes` to objects of the kind `objects` holds, shared as `shared`.
    fn all(shared: &SharedObjects, objects: &Objects, changes: Vec<Planned>) -> Vec<Write> {
        let Some(resource) = &objects.resource else {
            return Vec::new();
        };
        changes
            .into_iter()
            .map(|(key, from, change)| Write {
                resource: resource.clone(),
                objects: shared.clone(),
                key,
                from,
                change,
            })
            .collect()
    }

    /// Records the written labels in the store, unless the object has changed since the plan
    /// (the watch has delivered something newer, perhaps this write).
    fn record(&self) {
        let mut objects = lock(&self.objects);
        if let Some(tracked) = objects.objects.get_mut(&self.key)
            && tracked.shard == self.from
        {
            tracked.shard = self.change.applied(&self.from);
        }
    }
}

/// How one write went.
enum Sent {
    /// Written.
    Written(Change),
    /// The object is gone or changed under the write: nothing to do.
    Skipped,
    /// Failed; a later pass tries again.
    Failed,
}

/// What one pass wrote.
#[derive(Debug, Default, Clone, Copy)]
struct Outcome {
    assigned: usize,
    drained: usize,
    relabelled: usize,
    failed: usize,
}

impl Outcome {
    /// This outcome and `sent`.
    fn add(mut self, sent: Sent) -> Self {
        match sent {
            Sent::Written(Change::Assign(_)) => self.assigned += 1,
            Sent::Written(Change::Drain) => self.drained += 1,
            Sent::Written(Change::Follow(_)) => self.relabelled += 1,
            Sent::Skipped => {}
            Sent::Failed => self.failed += 1,
        }
        self
    }

    /// How many writes succeeded.
    fn written(&self) -> usize {
        self.assigned + self.drained + self.relabelled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::objects::{Controller, Tracked};

    fn configmap() -> GroupVersionKind {
        GroupVersionKind::gvk("", "v1", "ConfigMap")
    }

    fn ring() -> Ring {
        Ring::new(["a".to_owned(), "b".to_owned()])
    }

    fn shard(owner: Option<&str>, draining: bool) -> Shard {
        Shard {
            owner: owner.map(str::to_owned),
            draining,
        }
    }

    fn objects(all: impl IntoIterator<Item = (ObjectKey, Tracked)>) -> Objects {
        Objects {
            resource: None,
            objects: all.into_iter().collect(),
        }
    }

    fn primary(name: &str, shard: Shard) -> (ObjectKey, Tracked) {
        let tracked = Tracked {
            shard,
            controller: None,
        };
        (ObjectKey::new("shop", name), tracked)
    }

    /// An object controlled by the ConfigMap `owner`.
    fn owned(name: &str, owner: &str, shard: Shard) -> (ObjectKey, Tracked) {
        let controller = Controller {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: owner.into(),
        };
        let tracked = Tracked {
            shard,
            controller: Some(Box::new(controller)),
        };
        (ObjectKey::new("shop", name), tracked)
    }

    fn member_of(name: &str) -> String {
        ring().owner(&format!("shop/{name}")).unwrap().to_owned()
    }

    #[test]
    fn a_pass_over_converged_objects_writes_nothing() {
        let names: Vec<String> = (0..5000).map(|i| format!("app-{i}")).collect();
        let labelled = |name: &str| shard(Some(&member_of(name)), false);
        let primaries = objects(names.iter().map(|n| primary(n, labelled(n))));
        let secrets = objects(names.iter().map(|n| owned(n, n, labelled(n))));
        assert_eq!(moves(&primaries, &ring()), vec![]);
        assert_eq!(follows(&secrets, &[(&configmap(), &primaries)]), vec![]);
    }

    #[test]
    fn new_primaries_and_those_of_gone_members_are_assigned_and_live_owners_drained() {
        let primaries = objects([
            primary("app-0", shard(None, false)),
            primary("app-1", shard(Some("gone"), true)),
        ]);
        let mut planned = moves(&primaries, &ring());
        planned.sort_by(|x, y| x.0.cmp(&y.0));
        let changes: Vec<&Change> = planned.iter().map(|(_, _, change)| change).collect();
        let (member_0, member_1) = (member_of("app-0"), member_of("app-1"));
        assert_eq!(
            changes,
            [&Change::Assign(member_0.clone()), &Change::Assign(member_1)]
        );
        let other = if member_0 == "a" { "b" } else { "a" };
        let live = objects([primary("app-0", shard(Some(other), false))]);
        assert_eq!(moves(&live, &ring())[0].2, Change::Drain);
        let draining = objects([primary("app-0", shard(Some(other), true))]);
        assert_eq!(moves(&draining, &ring()), vec![]);
    }

    #[test]
    fn a_kind_that_is_a_primary_is_never_relabelled_as_owned() {
        let (secret, pod) = (
            GroupVersionKind::gvk("", "v1", "Secret"),
            GroupVersionKind::gvk("", "v1", "Pod"),
        );
        let plugins = [
            ShardedKinds {
                primary: configmap(),
                owned: vec![secret.clone(), pod.clone()],
            },
            ShardedKinds {
                primary: secret.clone(),
                owned: vec![pod.clone()],
            },
            ShardedKinds {
                primary: configmap(),
                owned: vec![pod.clone()],
            },
        ];
        let (primaries, owned) = kinds(&plugins);
        assert_eq!(primaries, [&configmap(), &secret]);
        assert_eq!(owned, HashMap::from([(&pod, vec![&configmap(), &secret])]));
    }

    #[test]
    fn owned_objects_follow_their_primary_unless_it_is_being_drained() {
        let primaries = objects([
            primary("web", shard(Some("a"), false)),
            primary("bare", shard(None, false)),
            primary("leaving", shard(Some("a"), true)),
        ]);
        let secrets = objects([
            owned("web-tls", "web", shard(Some("b"), false)),
            owned("bare-tls", "bare", shard(Some("b"), false)),
            owned("leaving-tls", "leaving", shard(Some("b"), false)),
            owned("orphan-tls", "gone", shard(Some("b"), false)),
            primary("unowned", shard(Some("b"), false)),
        ]);
        let mut planned = follows(&secrets, &[(&configmap(), &primaries)]);
        planned.sort_by(|x, y| x.0.cmp(&y.0));
        let changes: Vec<(&str, &Change)> = planned
            .iter()
            .map(|(key, _, change)| (key.name.as_str(), change))
            .collect();
        assert_eq!(
            changes,
            vec![
                ("bare-tls", &Change::Follow(None)),
                ("web-tls", &Change::Follow(Some("a".into()))),
            ]
        );
        let deployment = GroupVersionKind::gvk("apps", "v1", "Deployment");
        assert_eq!(follows(&secrets, &[(&deployment, &primaries)]), vec![]);
    }

    #[test]
    fn patches_set_and_clear_the_labels_as_merge_patches_do() {
        let labels = ShardLabels::new("op");
        let assign = Change::Assign("a".into());
        assert_eq!(
            assign.patch(&labels),
            json!({"metadata": {"labels": {
                "shard.wasmop.dev/op": "a", "drain.shard.wasmop.dev/op": null
            }}})
        );
        assert_eq!(
            Change::Follow(None).patch(&labels),
            json!({"metadata": {"labels": {"shard.wasmop.dev/op": null}}})
        );
        assert_eq!(
            assign.applied(&shard(Some("b"), true)),
            shard(Some("a"), false)
        );
        assert_eq!(
            Change::Drain.applied(&shard(Some("b"), false)),
            shard(Some("b"), true)
        );
    }
}
