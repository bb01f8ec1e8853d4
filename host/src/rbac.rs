//! `wasmop rbac`: the RBAC a plugin's own identity needs, derived from what its `describe()`
//! declares, as kubebuilder derives RBAC from markers. The manifests give the plugin's
//! ServiceAccount exactly its declared permissions (and the reads of the kinds it watches), the
//! events it records, and let the operator's ServiceAccount impersonate it — nothing more.
//!
//! Imports: the contract and `identity`; never the runtime (`wasmop rbac` reads a plugin's
//! `describe()` through the runtime in the binary).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::identity;
use wasmop_contract::Registration;
use wasmop_contract::object::GroupVersionKind;

/// Where the identities live and who may impersonate them.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The namespace of the plugin's ServiceAccount (`--plugin-identity-namespace`).
    pub namespace: String,
    /// The operator's ServiceAccount, which impersonates the plugin.
    pub operator: String,
    /// The operator's namespace.
    pub operator_namespace: String,
    /// Who installs the plugin: a tenant's (a `WasmReconciler`'s) has an account of its own kind.
    pub installer: identity::Installer<'static>,
}

/// Rules by (API group, resource): the verbs.
type Rules = BTreeMap<(String, String), BTreeSet<&'static str>>;

/// The ServiceAccount, roles and bindings `registration`'s identity needs, in apply order;
/// `plural` names each kind's resource (`deployments`).
pub fn manifests(
    registration: &Registration,
    placement: &Placement,
    plural: impl Fn(&GroupVersionKind) -> String,
) -> Vec<Value> {
    let name = identity::account(&registration.name, placement.installer);
    let labels =
        json!({"app.kubernetes.io/managed-by": "wasmop", "wasmop.dev/plugin": registration.name});
    let mut cluster = Rules::new();
    let mut namespaced: BTreeMap<String, Rules> = BTreeMap::new();
    let events = ("events.k8s.io".to_owned(), "events".to_owned());
    cluster
        .entry(events)
        .or_default()
        .extend(["create", "patch"]);
    for (kind, verb, namespaces) in registration.grants() {
        let (verbs, subresource) = verb.rbac();
        let resource = match subresource {
            Some(subresource) => format!("{}/{subresource}", plural(kind)),
            None => plural(kind),
        };
        let key = (kind.group.clone(), resource);
        if namespaces.is_empty() {
            cluster.entry(key).or_default().extend(verbs);
            continue;
        }
        for namespace in namespaces {
            let rules = namespaced.entry(namespace.clone()).or_default();
            rules.entry(key.clone()).or_default().extend(verbs);
        }
    }
    let subject =
        json!([{"kind": "ServiceAccount", "name": name, "namespace": placement.namespace}]);
    let mut out = vec![json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": placement.namespace, "labels": labels},
    })];
    // Cluster-wide names carry the namespace, so identities of several hosts do not collide.
    let cluster_name = format!("{name}:{}", placement.namespace);
    out.push(role(
        "ClusterRole",
        &cluster_name,
        None,
        &labels,
        rules(&cluster),
    ));
    let bound = binding(
        "ClusterRoleBinding",
        &cluster_name,
        None,
        &labels,
        "ClusterRole",
        &subject,
    );
    out.push(bound);
    for (namespace, granted) in &namespaced {
        out.push(role(
            "Role",
            &name,
            Some(namespace),
            &labels,
            rules(granted),
        ));
        out.push(binding(
            "RoleBinding",
            &name,
            Some(namespace),
            &labels,
            "Role",
            &subject,
        ));
    }
    let impersonator = format!("{name}-impersonator");
    let may_impersonate = json!([{
        "apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"],
        "resourceNames": [name],
    }]);
    let operator = json!([{
        "kind": "ServiceAccount", "name": placement.operator,
        "namespace": placement.operator_namespace,
    }]);
    let home = Some(placement.namespace.as_str());
    out.push(role("Role", &impersonator, home, &labels, may_impersonate));
    out.push(binding(
        "RoleBinding",
        &impersonator,
        home,
        &labels,
        "Role",
        &operator,
    ));
    out
}

fn rules(rules: &Rules) -> Value {
    let rules: Vec<Value> = rules
        .iter()
        .map(|((group, resource), verbs)| {
            json!({"apiGroups": [group], "resources": [resource], "verbs": verbs})
        })
        .collect();
    Value::Array(rules)
}

fn role(kind: &str, name: &str, namespace: Option<&str>, labels: &Value, rules: Value) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
        "metadata": metadata(name, namespace, labels),
        "rules": rules,
    })
}

fn binding(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    labels: &Value,
    role_kind: &str,
    subjects: &Value,
) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
        "metadata": metadata(name, namespace, labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": subjects,
    })
}

fn metadata(name: &str, namespace: Option<&str>, labels: &Value) -> Value {
    let mut metadata = json!({"name": name, "labels": labels});
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmop_contract::{Permission, Verb};

    fn placement() -> Placement {
        Placement {
            namespace: "plugins".to_owned(),
            operator: "wasmop".to_owned(),
            operator_namespace: "wasmop-system".to_owned(),
            installer: identity::Installer::Operator,
        }
    }

    fn guessed(kind: &GroupVersionKind) -> String {
        format!("{}s", kind.kind.to_lowercase())
    }

    #[test]
    fn the_identity_gets_what_was_declared_and_the_operator_may_impersonate_it() {
        let mut registration = Registration::minimal("sync");
        registration.permissions = vec![
            Permission {
                kind: GroupVersionKind::gvk("apps", "v1", "Deployment"),
                verbs: vec![Verb::Create, Verb::Status],
                namespaces: vec![],
            },
            Permission {
                kind: GroupVersionKind::gvk("", "v1", "Secret"),
                verbs: vec![Verb::Get],
                namespaces: vec!["team-a".to_owned()],
            },
        ];
        let out = manifests(&registration, &placement(), guessed);
        let kinds: Vec<&str> = out.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "Role",
                "RoleBinding"
            ]
        );
        assert_eq!(out[0]["metadata"]["name"], "wasmop-plugin-sync");
        assert_eq!(out[1]["metadata"]["name"], "wasmop-plugin-sync:plugins");
        let cluster = &out[1]["rules"];
        assert!(cluster.as_array().unwrap().contains(&json!(
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
        )));
        assert!(cluster.as_array().unwrap().contains(&json!(
            {"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["patch", "update"]}
        )));
        assert_eq!(out[3]["metadata"]["namespace"], "team-a");
        assert_eq!(
            out[3]["rules"],
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
        );
        assert_eq!(out[5]["rules"][0]["verbs"], json!(["impersonate"]));
        assert_eq!(out[6]["subjects"][0]["namespace"], "wasmop-system");
    }
}
