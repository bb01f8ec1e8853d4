//! Whether the operator's own identity may do what a plugin declares, asked of the apiserver
//! (SelfSubjectAccessReview) before the plugin is installed: a plugin that needs more than the
//! operator's RBAC grants is refused up front instead of failing with 403s while it reconciles.
//!
//! The reads its informers make (list, watch of the primary, owned and watched kinds) are checked
//! in the namespaces the cache watches; each declared permission in its own namespaces, or in the
//! watched ones when it names none. `status` holds when the status subresource may be updated or
//! patched. A kind the apiserver does not serve is skipped: its informer reports that.
//!
//! In identity mode the identity's reads are reviewed again every [`REVIEW_TTL`] for as long as
//! the plugin lives ([`keep_reviewing`]): the shared cache lists and watches as the operator, so
//! the apiserver never refuses the plugin's cache reads itself. The answer goes into the plugin's
//! [`Rights`], which the capability check consults on every read; the guest's call never waits
//! for a review. A review that fails keeps the last answer.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::core::ApiResource;
use kube::discovery::Scope;

use super::error::PluginError;
use crate::cache::{self, Namespaces};
use wasmop_contract::object::GroupVersionKind;
use wasmop_contract::{REVIEW_TTL, Registration, Rights, Verb};

/// Reviews asked at once.
const PARALLEL_REVIEWS: usize = 8;

/// One thing the operator must be allowed: any of `verbs` on `kind` in `namespace`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Need {
    kind: GroupVersionKind,
    verbs: &'static [&'static str],
    subresource: Option<&'static str>,
    /// Empty: every namespace.
    namespace: String,
    /// Whether it only reads.
    read: bool,
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, api_version) = (&self.kind.kind, self.kind.api_version());
        write!(f, "{} {api_version} {kind}", self.verbs.join(" or "))?;
        if let Some(subresource) = self.subresource {
            write!(f, "/{subresource}")?;
        }
        match self.namespace.as_str() {
            "" => f.write_str(" in all namespaces"),
            namespace => write!(f, " in namespace {namespace}"),
        }
    }
}

/// Refuses `registration` when its `identity` (the user `client` speaks as) may not do something
/// it declares.
pub(crate) async fn check(
    client: &kube::Client,
    identity: &str,
    namespaces: &Namespaces,
    registration: &Registration,
) -> Result<(), PluginError> {
    let review_failed = |source| PluginError::AccessReview {
        plugin: registration.name.clone(),
        source: Box::new(source),
    };
    let resources = served(client, needs(registration, namespaces)).await;
    let refused = refused(client, &resources).await.map_err(review_failed)?;
    let mut denied: Vec<String> = refused.iter().map(ToString::to_string).collect();
    if denied.is_empty() {
        return Ok(());
    }
    denied.sort();
    Err(PluginError::Forbidden {
        plugin: registration.name.clone(),
        version: registration.version.clone(),
        identity: identity.to_owned(),
        denied: denied.join("; "),
    })
}

/// Keeps `rights` to what the identity behind `client` may read now of what plugin
/// `registration` reads where the cache watches (`namespaces`): a review every [`REVIEW_TTL`],
/// the first one TTL after the load's own check, until the rights are dropped with the plugin.
pub(crate) async fn keep_reviewing(
    client: kube::Client,
    namespaces: Namespaces,
    registration: Arc<Registration>,
    rights: Weak<Rights>,
) {
    let plugin = registration.name.as_str();
    let reads = needs(&registration, &namespaces)
        .into_iter()
        .filter(|need| need.read)
        .collect();
    let resources = served(&client, reads).await;
    let mut ticks = tokio::time::interval(REVIEW_TTL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let answer = refused(&client, &resources).await;
        let Some(rights) = rights.upgrade() else {
            return;
        };
        let refused = match answer {
            Ok(refused) => refused,
            Err(error) => {
                let user = rights.user();
                tracing::warn!(
                    plugin,
                    user,
                    "reviewing the identity's reads failed, keeping the last answer: {error}"
                );
                continue;
            }
        };
        let described: Vec<String> = refused.iter().map(ToString::to_string).collect();
        let reads = refused.into_iter().map(|n| (n.kind, n.namespace)).collect();
        if !rights.set(reads) {
            continue;
        }
        let user = rights.user();
        match described.is_empty() {
            true => tracing::info!(
                plugin,
                user,
                "the identity may read again: cache reads restored"
            ),
            false => tracing::warn!(
                plugin,
                user,
                "the apiserver no longer lets the identity {}: its cache reads of those are refused",
                described.join("; ")
            ),
        }
    }
}

/// The needs among `resources` the identity behind `client` is refused.
async fn refused(
    client: &kube::Client,
    resources: &[(Need, ApiResource, bool)],
) -> Result<Vec<Need>, kube::Error> {
    // Owned parts, so the reviewing task's future holds no borrow a spawn cannot prove Send.
    let answers: Vec<(Need, bool)> = stream::iter(resources.to_vec())
        .map(|(need, resource, namespaced)| {
            let client = client.clone();
            async move {
                let allowed = allowed(&client, &need, &resource, namespaced).await?;
                Ok::<_, kube::Error>((need, allowed))
            }
        })
        .buffer_unordered(PARALLEL_REVIEWS)
        .try_collect()
        .await?;
    let refused = answers.into_iter().filter(|(_, allowed)| !allowed);
    Ok(refused.map(|(need, _)| need).collect())
}

/// Everything `registration` will do, in the namespaces it will do it.
fn needs(registration: &Registration, namespaces: &Namespaces) -> Vec<Need> {
    let watched: Vec<String> = match namespaces {
        Namespaces::All => vec![String::new()],
        Namespaces::Only(only) => only.clone(),
    };
    let mut needs = Vec::new();
    let mut add = |kind: &GroupVersionKind, verb: Verb, places: &[String]| {
        let (verbs, subresource) = verb.rbac();
        for namespace in places {
            let need = Need {
                kind: kind.clone(),
                verbs,
                subresource,
                namespace: namespace.clone(),
                read: !verb.writes(),
            };
            if !needs.contains(&need) {
                needs.push(need);
            }
        }
    };
    let indexed = registration.indexes.iter().map(|i| &i.kind);
    for kind in registration.cached_kinds().chain(indexed) {
        add(kind, Verb::List, &watched);
        add(kind, Verb::Watch, &watched);
    }
    for permission in &registration.permissions {
        let places = match permission.namespaces.is_empty() {
            true => &watched,
            false => &permission.namespaces,
        };
        for verb in &permission.verbs {
            add(&permission.kind, *verb, places);
        }
    }
    needs
}

/// The needs whose kinds the apiserver serves, with their resource and whether it is namespaced.
/// Needs of a cluster-scoped kind are asked once, for all namespaces.
async fn served(client: &kube::Client, needs: Vec<Need>) -> Vec<(Need, ApiResource, bool)> {
    let mut kinds: HashMap<GroupVersionKind, Option<(ApiResource, bool)>> = HashMap::new();
    for need in &needs {
        if !kinds.contains_key(&need.kind) {
            let found = cache::discover(client, &need.kind).await;
            if let Err(error) = &found {
                tracing::debug!(kind = ?need.kind, %error, "not checking access to a kind the apiserver does not serve");
            }
            let found = found
                .ok()
                .map(|(resource, caps)| (resource, caps.scope == Scope::Namespaced));
            kinds.insert(need.kind.clone(), found);
        }
    }
    let mut served: Vec<(Need, ApiResource, bool)> = Vec::new();
    for mut need in needs {
        let Some(Some((resource, namespaced))) = kinds.get(&need.kind) else {
            continue;
        };
        if !namespaced {
            need.namespace.clear();
            if served.iter().any(|(seen, _, _)| seen == &need) {
                continue;
            }
        }
        served.push((need, resource.clone(), *namespaced));
    }
    served
}

/// Whether the apiserver allows the operator any of `need`'s verbs.
async fn allowed(
    client: &kube::Client,
    need: &Need,
    resource: &ApiResource,
    namespaced: bool,
) -> Result<bool, kube::Error> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    for verb in need.verbs {
        let attributes = ResourceAttributes {
            group: Some(resource.group.clone()),
            version: Some(resource.version.clone()),
            resource: Some(resource.plural.clone()),
            subresource: need.subresource.map(str::to_owned),
            namespace: (namespaced && !need.namespace.is_empty()).then(|| need.namespace.clone()),
            verb: Some((*verb).to_owned()),
            ..Default::default()
        };
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(attributes),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = reviews.create(&PostParams::default(), &review).await?;
        if answer.status.is_some_and(|status| status.allowed) {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmop_contract::Permission;
    fn configmap() -> GroupVersionKind {
        GroupVersionKind::gvk("", "v1", "ConfigMap")
    }

    fn described(needs: &[Need]) -> Vec<String> {
        needs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn informer_reads_are_needed_where_the_cache_watches() {
        let registration = wasmop_contract::Registration::minimal("reader");
        let only = Namespaces::Only(vec!["a".to_owned(), "b".to_owned()]);
        assert_eq!(
            described(&needs(&registration, &only)),
            [
                "list v1 ConfigMap in namespace a",
                "list v1 ConfigMap in namespace b",
                "watch v1 ConfigMap in namespace a",
                "watch v1 ConfigMap in namespace b",
            ]
        );
        assert_eq!(
            described(&needs(&registration, &Namespaces::All)),
            [
                "list v1 ConfigMap in all namespaces",
                "watch v1 ConfigMap in all namespaces"
            ]
        );
    }

    #[test]
    fn permissions_are_needed_in_their_own_namespaces_and_once() {
        let mut registration = wasmop_contract::Registration::minimal("writer");
        let deployments = GroupVersionKind::gvk("apps", "v1", "Deployment");
        registration.permissions = vec![
            Permission {
                kind: deployments.clone(),
                verbs: vec![Verb::Create, Verb::Status],
                namespaces: vec!["c".to_owned()],
            },
            Permission {
                kind: configmap(),
                verbs: vec![Verb::List, Verb::Delete],
                namespaces: vec![],
            },
        ];
        let needs = described(&needs(&registration, &Namespaces::All));
        assert_eq!(
            needs,
            [
                "list v1 ConfigMap in all namespaces",
                "watch v1 ConfigMap in all namespaces",
                "create apps/v1 Deployment in namespace c",
                "update or patch apps/v1 Deployment/status in namespace c",
                "delete v1 ConfigMap in all namespaces",
            ]
        );
    }
}
