//! Shard membership on the real apiserver: each replica's own Lease, labelled with its group, is
//! seen by the others (and by `kubectl`); a replica that stops renewing drops out once its Lease
//! has gone unchanged for its duration, one that releases drops out at once, and objects move
//! only from the member that left. The leader's sharder labels primaries with their member and
//! owned objects with their primary's, and moves objects to a new member only once their old
//! owner has let them go.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::watch;
use wasmop::cache::Namespaces;
use wasmop::contract::object::GroupVersionKind;
use wasmop::leader::{Campaign, Elector, LeaderConfig, Leadership, identity};
use wasmop::metrics::Metrics;
use wasmop::shard::{
    GROUP_LABEL, Members, Ring, ShardLabels, ShardedKinds, Sharder, member_id, member_lease,
};
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(120);
const LEASE: Duration = Duration::from_secs(3);

/// The group's leader election with short durations (controller-runtime's ratios), as `who`.
fn group(namespace: &str, who: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: LEASE,
        renew_deadline: Duration::from_millis(2000),
        retry_period: Duration::from_millis(400),
        ..LeaderConfig::new(namespace, "wasmop-leader", identity(who))
    }
}

/// Starts `who`'s member Lease and waits until it holds it; returns its member id.
async fn join(client: &kube::Client, namespace: &str, who: &str) -> (String, Campaign) {
    let config = member_lease(&group(namespace, who));
    let id = member_id(&config.identity);
    let mut campaign = Campaign::start(Elector::new(client.clone(), config).unwrap());
    while campaign.state() != Leadership::Leading {
        campaign.changed().await;
    }
    (id, campaign)
}

/// Polls `members` until its live ring has exactly `expected`; returns how long that took.
async fn until_live(members: &mut Members, expected: &[&String]) -> Duration {
    let start = Instant::now();
    let expected = Ring::new(expected.iter().map(|m| m.to_string()));
    loop {
        if members.live().await.unwrap() == expected {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn members_join_leave_and_expire_and_only_a_leavers_objects_move() {
    within(LIMIT, "shard membership", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("shards").await?;
        let client = plane.client().await?;
        let (a, first) = join(&client, &namespace, "replica-a").await;
        // `b` writes its Lease once and never renews it, as a process killed at once would.
        let config = member_lease(&group(&namespace, "replica-b"));
        let b = member_id(&config.identity);
        Elector::new(client.clone(), config)?.acquire().await;
        let (c, third) = join(&client, &namespace, "replica-c").await;
        let mut members = Members::new(client.clone(), &group(&namespace, "reader"));
        until_live(&mut members, &[&a, &b, &c]).await;

        let selector = format!("{GROUP_LABEL}=wasmop-leader");
        let listed = plane
            .run_kubectl(
                &[
                    "get", "leases", "-n", &namespace, "-l", &selector, "-o", "name",
                ],
                None,
            )
            .await?;
        assert_eq!(listed.lines().count(), 3, "{listed}");

        let three = members.live().await?;
        let keys: Vec<String> = (0..300)
            .map(|i| format!("{namespace}/webapp-{i}"))
            .collect();
        // `b` drops out once its Lease has gone unchanged for its duration.
        let expired = until_live(&mut members, &[&a, &c]).await;
        assert!(
            expired >= LEASE / 2,
            "dropped after {expired:?}, before its lease ran out"
        );
        let two = members.live().await?;
        for key in &keys {
            let (before, after) = (three.owner(key).unwrap(), two.owner(key).unwrap());
            assert!(
                before == after || before == b,
                "{key} moved from {before} to {after}"
            );
        }
        // `c` releases its Lease, as a replica stopping gracefully does: it drops out at once.
        third.release().await;
        let released = until_live(&mut members, &[&a]).await;
        assert!(released < LEASE, "dropped after {released:?}, not at once");
        first.release().await;
        anyhow::Ok(())
    })
    .await
    .unwrap();
}

/// How many ConfigMaps (each with one Secret) the sharder test labels.
const OBJECTS: usize = 60;

/// An object's shard labels: the owner label's value and whether it carries the drain label.
type Shard = (Option<String>, bool);

/// The shard labels of each object `api` lists, by name.
async fn shards<K>(api: &Api<K>, labels: &ShardLabels) -> anyhow::Result<BTreeMap<String, Shard>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let listed = api.list_metadata(&ListParams::default()).await?;
    let shards = listed.items.into_iter().map(|object| {
        let all = object.metadata.labels.unwrap_or_default();
        let shard = (
            all.get(&labels.owner).cloned(),
            all.contains_key(&labels.drain),
        );
        (object.metadata.name.unwrap_or_default(), shard)
    });
    Ok(shards.collect())
}

/// The ConfigMaps and Secrets of one namespace, each ConfigMap `app-<i>` controlling the Secret
/// of the same name.
struct Objects {
    configmaps: Api<ConfigMap>,
    secrets: Api<Secret>,
    labels: ShardLabels,
    namespace: String,
}

impl Objects {
    /// Creates the `OBJECTS` ConfigMaps and their Secrets.
    async fn create(&self) -> anyhow::Result<()> {
        futures::stream::iter(0..OBJECTS)
            .map(|i| self.create_one(format!("app-{i}")))
            .buffer_unordered(8)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    async fn create_one(&self, name: String) -> anyhow::Result<()> {
        let metadata = ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        };
        let configmap = ConfigMap {
            metadata: metadata.clone(),
            data: Some([("app".to_owned(), name.clone())].into()),
            ..Default::default()
        };
        let created = self
            .configmaps
            .create(&PostParams::default(), &configmap)
            .await?;
        let controller = OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.clone(),
            uid: created.metadata.uid.unwrap_or_default(),
            controller: Some(true),
            ..Default::default()
        };
        let secret = Secret {
            metadata: ObjectMeta {
                owner_references: Some(vec![controller]),
                ..metadata
            },
            data: Some([("token".to_owned(), ByteString(name.into_bytes()))].into()),
            ..Default::default()
        };
        self.secrets.create(&PostParams::default(), &secret).await?;
        Ok(())
    }

    /// The key the ring hashes for `name`.
    fn key(&self, name: &str) -> String {
        format!("{}/{name}", self.namespace)
    }

    /// Polls until every ConfigMap has the labels `expected` gives its key, and every Secret
    /// has its ConfigMap's owner label and no drain label; returns the ConfigMaps' labels.
    async fn until(
        &self,
        what: &str,
        expected: impl Fn(&str) -> Shard,
    ) -> anyhow::Result<BTreeMap<String, Shard>> {
        let start = Instant::now();
        let mut reported = Instant::now();
        loop {
            let configmaps = shards(&self.configmaps, &self.labels).await?;
            let secrets = shards(&self.secrets, &self.labels).await?;
            let wrong: Vec<String> = configmaps
                .iter()
                .filter_map(|(name, shard)| {
                    let want = expected(&self.key(name));
                    let secret = secrets.get(name).cloned().unwrap_or_default();
                    let right = *shard == want && secret == (want.0.clone(), false);
                    (!right)
                        .then(|| format!("{name}: {shard:?} (Secret {secret:?}), want {want:?}"))
                })
                .collect();
            if configmaps.len() >= OBJECTS && wrong.is_empty() {
                eprintln!("{what} after {:?}", start.elapsed());
                return Ok(configmaps);
            }
            if reported.elapsed() > Duration::from_secs(10) {
                eprintln!(
                    "still waiting for {what}: {} wrong, first {:?}",
                    wrong.len(),
                    wrong.first()
                );
                reported = Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Removes both shard labels from `names`, as their owner does to let them go.
    async fn let_go(&self, names: &[String]) -> anyhow::Result<()> {
        let patch =
            json!({"metadata": {"labels": {&self.labels.owner: null, &self.labels.drain: null}}});
        for name in names {
            let params = PatchParams::default();
            self.configmaps
                .patch(name, &params, &Patch::Merge(&patch))
                .await?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_sharder_labels_primaries_and_their_objects_and_moves_them_only_once_let_go() {
    let start = Instant::now();
    within(LIMIT, "the sharder", async {
        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace("sharder").await?;
        let client = plane.client().await?;
        let (a, first) = join(&client, &namespace, "replica-a").await;
        let (b, second) = join(&client, &namespace, "replica-b").await;
        let leader = group(&namespace, "leader");
        let objects = Objects {
            configmaps: Api::namespaced(client.clone(), &namespace),
            secrets: Api::namespaced(client.clone(), &namespace),
            labels: ShardLabels::new(&leader.name),
            namespace: namespace.clone(),
        };
        let scope = Namespaces::Only(vec![namespace.clone()]);
        let metrics = Metrics::new();
        let members = Members::new(client.clone(), &leader).observe(LEASE / 4);
        let sharder = Sharder::new(client.clone(), &leader, scope, members, &metrics);
        let kinds = vec![ShardedKinds {
            primary: GroupVersionKind::gvk("", "v1", "ConfigMap"),
            owned: vec![GroupVersionKind::gvk("", "v1", "Secret")],
        }];
        let (_kinds, receiver) = watch::channel(kinds);
        let task = tokio::spawn(sharder.run(receiver));
        objects.create().await?;

        let two = Ring::new([a.clone(), b.clone()]);
        let with_two = |key: &str| (two.owner(key).map(str::to_owned), false);
        let labelled = objects.until("labelled over two members", with_two).await?;
        for member in [&a, &b] {
            let held = labelled
                .values()
                .filter(|s| s.0.as_ref() == Some(member))
                .count();
            assert!(held > 0, "{member} holds none of {OBJECTS}");
        }

        // A third member joins: what the ring now gives it is drained, and stays with its owner.
        let (c, third) = join(&client, &namespace, "replica-c").await;
        let three = Ring::new([a.clone(), b.clone(), c.clone()]);
        let moving: Vec<String> = labelled
            .keys()
            .filter(|name| three.owner(&objects.key(name)) == Some(c.as_str()))
            .cloned()
            .collect();
        assert!(!moving.is_empty(), "the ring gives the new member nothing");
        let drained = |key: &str| {
            let (owner, _) = with_two(key);
            (owner, three.owner(key) == Some(c.as_str()))
        };
        objects.until("drained for the new member", drained).await?;

        // The old owners let them go: now they move, their Secrets with them.
        objects.let_go(&moving).await?;
        let with_three = |key: &str| (three.owner(key).map(str::to_owned), false);
        objects.until("moved to the new member", with_three).await?;
        let shown = r#"wasmop_shard_members{group="wasmop-leader"} 3"#;
        assert!(metrics.gather().contains(shown), "{}", metrics.gather());

        // The new member releases its Lease: its objects go back at once, with no drain.
        third.release().await;
        objects.until("back over two members", with_two).await?;

        let selector = format!("{}={a}", objects.labels.owner);
        let listed = plane
            .run_kubectl(
                &[
                    "get",
                    "configmaps",
                    "-n",
                    &namespace,
                    "-l",
                    &selector,
                    "-o",
                    "name",
                ],
                None,
            )
            .await?;
        let held = labelled
            .values()
            .filter(|s| s.0.as_ref() == Some(&a))
            .count();
        assert_eq!(listed.lines().count(), held, "{listed}");

        // Passes over converged objects write nothing: a late ConfigMap and its Secret are the
        // only objects written after it is created.
        let mut audit = plane.audit_log();
        audit.read_new()?;
        objects.create_one("late".to_owned()).await?;
        objects.until("the late one labelled", with_two).await?;
        let mut writes = Vec::new();
        let settled = Instant::now();
        while writes.len() < 2 || settled.elapsed() < Duration::from_secs(2) {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let new = audit.read_new()?.into_iter();
            writes.extend(new.filter(|e| e.verb == "patch" && e.namespace == namespace));
        }
        let written: Vec<(&str, &str)> = writes
            .iter()
            .map(|e| (e.resource.as_str(), e.name.as_str()))
            .collect();
        assert_eq!(written, [("configmaps", "late"), ("secrets", "late")]);

        task.abort();
        let _ = task.await;
        let gone = metrics.gather();
        assert!(!gone.contains("wasmop_shard_members"), "{gone}");
        first.release().await;
        second.release().await;
        anyhow::Ok(())
    })
    .await
    .unwrap();
    eprintln!("the sharder test took {:?}", start.elapsed());
}
