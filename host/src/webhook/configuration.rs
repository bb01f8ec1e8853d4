//! The objects that make the apiserver call the host: one `ValidatingWebhookConfiguration` and
//! one `MutatingWebhookConfiguration`, with one webhook per plugin that validates or defaults,
//! and the conversion stanza of every CRD a plugin converts. The leader writes them from the
//! plugins loaded now ([`Writer`]) whenever that set or the CA bundle changes; every replica
//! serves the calls.
//!
//! Invariants: the configurations hold exactly the loaded plugins' webhooks (an unloaded plugin's
//! webhook is removed, and a configuration left without any is deleted); a plugin's webhooks
//! passed the capability check when it loaded (so a conversion is one the operator's policy
//! names for it), and each webhook's `namespaceSelector` leaves out the protected namespaces its
//! plugin may not reach there; a CRD's conversion is taken only from `None` or from this host, never from
//! another's webhook, points at a plugin only while that plugin is loaded, and carries
//! [`CONVERTED_BY`] so a later leader finds and reverts (to `None`, what was there) a conversion
//! whose plugin is gone. Every write is preconditioned on the version it read.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::core::ApiResource;
use kube::{Api, discovery};
use serde_json::{Value, json};

use crate::http::Tls;
use crate::runtime::Live;
use crate::runtime::Plugin;
use wasmop_contract::capability::Power;
use wasmop_contract::object::GroupVersionKind;
use wasmop_contract::{FailurePolicy, Rule};

/// The annotation on a CRD whose conversion the host set: `<configuration name>/<plugin>`, so a
/// host reverts only conversions it set, never another operator's.
pub const CONVERTED_BY: &str = "wasmop.dev/converted-by";

/// The field manager of every write here.
const MANAGER: &str = "wasmop-webhooks";

/// How long a failed write waits before it is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// Where the apiserver reaches the webhook listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A base URL (`https://host:port`), off-cluster.
    Url(String),
    /// A Service every replica backs, in-cluster.
    Service {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its port.
        port: u16,
    },
}

impl Endpoint {
    /// The `clientConfig` of the webhook at `path`, trusted with the PEM `ca`.
    fn client_config(&self, path: &str, ca: &[u8]) -> Value {
        let ca = serde_json::to_value(k8s_openapi::ByteString(ca.to_vec()))
            .expect("bytes serialize as base64");
        match self {
            Endpoint::Url(base) => json!({"url": format!("{base}{path}"), "caBundle": ca}),
            Endpoint::Service {
                namespace,
                name,
                port,
            } => json!({
                "service": {"namespace": namespace, "name": name, "port": port, "path": path},
                "caBundle": ca,
            }),
        }
    }
}

/// What the configurations are called and where they send the apiserver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The name of both webhook configurations.
    pub name: String,
    /// Where the listener is reached.
    pub endpoint: Endpoint,
}

/// The label the apiserver sets on every namespace to its name.
const NAMESPACE_NAME: &str = "kubernetes.io/metadata.name";

/// One plugin's webhooks, as the configurations need them.
struct Served<'p> {
    name: &'p str,
    validate: Hooked<'p>,
    default: Hooked<'p>,
    convert: &'p [GroupVersionKind],
    policy: FailurePolicy,
    timeout: Duration,
}

/// One webhook's rules and the protected namespaces it may not reach.
struct Hooked<'p> {
    rules: &'p [Rule],
    unreached: Vec<String>,
}

impl<'p> Hooked<'p> {
    /// `rules` of `plugin`, each a `power` (validating or defaulting) on its kind.
    fn of(
        plugin: &Plugin,
        rules: &'p [Rule],
        power: fn(&'p GroupVersionKind, &'p str) -> Power<'p>,
    ) -> Self {
        let mut unreached: Vec<String> = Vec::new();
        for rule in rules {
            for namespace in plugin.unreached(power(&rule.kind, "")) {
                if !unreached.contains(&namespace) {
                    unreached.push(namespace);
                }
            }
        }
        Hooked { rules, unreached }
    }
}

impl<'p> Served<'p> {
    fn of(plugin: &'p Plugin) -> Option<Self> {
        let declared = plugin.webhooks()?;
        Some(Served {
            name: plugin.name(),
            validate: Hooked::of(plugin, &declared.validate, Power::Validate),
            default: Hooked::of(plugin, &declared.default, Power::Default),
            convert: &declared.convert,
            policy: plugin.failure_policy(),
            timeout: plugin.webhook_timeout(),
        })
    }
}

/// The `namespaceSelector` of a webhook that must not reach `unreached`: every namespace but
/// those. The apiserver matches a Namespace object by its own labels, and any other
/// cluster-scoped object whatever the selector.
fn namespace_selector(unreached: &[String]) -> Value {
    match unreached {
        [] => json!({}),
        names => json!({"matchExpressions": [
            {"key": NAMESPACE_NAME, "operator": "NotIn", "values": names},
        ]}),
    }
}

/// The apiserver's `timeoutSeconds` for a webhook whose calls end within `timeout`: room for
/// the host's own work around the call, within the apiserver's limit of 30.
fn timeout_seconds(timeout: Duration) -> u64 {
    (timeout.as_secs_f64().ceil() as u64 + 2).clamp(1, 30)
}

/// Resolves kinds to their resources, asking discovery once per kind.
struct Resources {
    client: kube::Client,
    known: HashMap<GroupVersionKind, ApiResource>,
}

impl Resources {
    async fn get(&mut self, kind: &GroupVersionKind) -> Result<ApiResource, kube::Error> {
        if let Some(found) = self.known.get(kind) {
            return Ok(found.clone());
        }
        let gvk = kube::core::GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
        let (resource, _) = discovery::pinned_kind(&self.client, &gvk).await?;
        self.known.insert(kind.clone(), resource.clone());
        Ok(resource)
    }
}

/// The webhook (validating or mutating, as `hook` says) of `served` for `hooked`.
async fn webhook(
    served: &Served<'_>,
    (hook, hooked): (&str, &Hooked<'_>),
    (endpoint, ca): (&Endpoint, &[u8]),
    resources: &mut Resources,
) -> Result<Value, kube::Error> {
    let mut written = Vec::with_capacity(hooked.rules.len());
    for rule in hooked.rules {
        let resource = resources.get(&rule.kind).await?;
        let operations: Vec<&str> = rule.operations.iter().map(|o| o.as_str()).collect();
        written.push(json!({
            "apiGroups": [rule.kind.group],
            "apiVersions": [rule.kind.version],
            "resources": [resource.plural],
            "operations": operations,
            "scope": "*",
        }));
    }
    let mut webhook = json!({
        "name": format!("{}.{hook}.webhooks.wasmop.dev", served.name),
        "clientConfig": endpoint.client_config(&format!("/{hook}/{}", served.name), ca),
        "rules": written,
        "namespaceSelector": namespace_selector(&hooked.unreached),
        "failurePolicy": served.policy.as_str(),
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": timeout_seconds(served.timeout),
    });
    if hook == "default" {
        webhook["reinvocationPolicy"] = json!("Never");
    }
    Ok(webhook)
}

/// Writes the configurations and conversions from the loaded plugins while it runs.
pub struct Writer {
    target: Target,
    resources: Resources,
}

impl Writer {
    /// A writer for `target` through `client`.
    pub fn new(client: kube::Client, target: Target) -> Self {
        let resources = Resources {
            client,
            known: HashMap::new(),
        };
        Writer { target, resources }
    }

    fn client(&self) -> kube::Client {
        self.resources.client.clone()
    }

    /// Keeps the objects in step with `plugins` and `tls`'s CA bundle until dropped, trying a
    /// failed write again after [`RETRY`].
    pub async fn run(mut self, mut plugins: Live, tls: Tls) {
        let mut ca = tls.ca_changes();
        loop {
            let loaded = plugins.borrow_and_update().clone();
            let bundle = ca.borrow_and_update().clone();
            let retry = match self.sync(&loaded, &bundle).await {
                Ok(()) => None,
                Err(error) => {
                    tracing::warn!(
                        "webhook configuration not written (trying again in {RETRY:?}): {error}"
                    );
                    Some(RETRY)
                }
            };
            let later = async {
                match retry {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = plugins.changed() => if changed.is_err() { return },
                changed = ca.changed() => if changed.is_err() { return },
                () = later => {}
            }
        }
    }

    /// Writes the objects `loaded` asks for, with `ca` trusted.
    pub async fn sync(
        &mut self,
        loaded: &BTreeMap<String, Arc<Plugin>>,
        ca: &[u8],
    ) -> Result<(), kube::Error> {
        let served: Vec<Served> = loaded.values().filter_map(|p| Served::of(p)).collect();
        let (mut validating, mut mutating) = (Vec::new(), Vec::new());
        for plugin in &served {
            let at = (&self.target.endpoint, ca);
            if !plugin.validate.rules.is_empty() {
                let hooked = ("validate", &plugin.validate);
                validating.push(webhook(plugin, hooked, at, &mut self.resources).await?);
            }
            if !plugin.default.rules.is_empty() {
                let hooked = ("default", &plugin.default);
                mutating.push(webhook(plugin, hooked, at, &mut self.resources).await?);
            }
        }
        let validating_api: Api<ValidatingWebhookConfiguration> = Api::all(self.client());
        self.write(
            &validating_api,
            "ValidatingWebhookConfiguration",
            validating,
        )
        .await?;
        let mutating_api: Api<MutatingWebhookConfiguration> = Api::all(self.client());
        self.write(&mutating_api, "MutatingWebhookConfiguration", mutating)
            .await?;
        self.convert(&served, ca).await
    }

    /// Applies the configuration of `kind` with `webhooks`, or deletes it when there are none.
    async fn write<K>(
        &self,
        api: &Api<K>,
        kind: &str,
        webhooks: Vec<Value>,
    ) -> Result<(), kube::Error>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let name = &self.target.name;
        if webhooks.is_empty() {
            return match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {
                    tracing::info!(%name, kind, "no plugin serves these webhooks: configuration deleted");
                    Ok(())
                }
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                Err(error) => Err(error),
            };
        }
        let names: Vec<&str> = webhooks.iter().filter_map(|w| w["name"].as_str()).collect();
        tracing::info!(%name, kind, webhooks = ?names, "writing the webhook configuration");
        let object = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "wasmop"}},
            "webhooks": webhooks,
        });
        let params = PatchParams::apply(MANAGER).force();
        api.patch(name, &params, &Patch::Apply(&object)).await?;
        Ok(())
    }

    /// The [`CONVERTED_BY`] mark of `plugin`'s conversions by this host.
    fn converted_by(&self, plugin: &str) -> String {
        format!("{}/{plugin}", self.target.name)
    }

    /// Points every CRD a served plugin converts at its webhook — only a CRD with no conversion
    /// or one this host set — and reverts those the host pointed at a plugin no longer served.
    async fn convert(&mut self, served: &[Served<'_>], ca: &[u8]) -> Result<(), kube::Error> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        let mut wanted = BTreeSet::new();
        for plugin in served {
            for kind in plugin.convert {
                let resource = self.resources.get(kind).await?;
                let crd = format!("{}.{}", resource.plural, kind.group);
                if self.take(&api, &crd, plugin.name, ca).await? {
                    wanted.insert(crd);
                }
            }
        }
        for crd in api.list(&ListParams::default()).await? {
            let name = crd.metadata.name.clone().unwrap_or_default();
            if self.owner(&crd).is_none() || wanted.contains(&name) {
                continue;
            }
            let patch = json!({
                "metadata": {
                    "annotations": {CONVERTED_BY: null},
                    "resourceVersion": crd.metadata.resource_version,
                },
                "spec": {"conversion": {"strategy": "None", "webhook": null}},
            });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            tracing::info!(crd = %name, "its converting plugin is gone: conversion reverted to None");
        }
        Ok(())
    }

    /// The plugin this host pointed `crd`'s conversion at, if it did.
    fn owner<'c>(&self, crd: &'c CustomResourceDefinition) -> Option<&'c str> {
        let marked = crd.metadata.annotations.as_ref()?.get(CONVERTED_BY)?;
        marked.strip_prefix(&self.converted_by(""))
    }

    /// Points `crd`'s conversion at `plugin`'s webhook if it has none or this host set it;
    /// whether it now does. Another's conversion is left as it is, and said so in the log.
    async fn take(
        &self,
        api: &Api<CustomResourceDefinition>,
        crd: &str,
        plugin: &str,
        ca: &[u8],
    ) -> Result<bool, kube::Error> {
        let current = api.get(crd).await?;
        let strategy = current
            .spec
            .conversion
            .as_ref()
            .map_or("None", |c| c.strategy.as_str());
        if strategy != "None" && self.owner(&current).is_none() {
            tracing::warn!(
                %crd,
                plugin,
                "not taking over the conversion of {crd}: its strategy is {strategy}, set by \
                 someone other than this host; remove it to let {plugin} convert"
            );
            return Ok(false);
        }
        let path = format!("/convert/{plugin}");
        let patch = json!({
            "metadata": {
                "annotations": {CONVERTED_BY: self.converted_by(plugin)},
                "resourceVersion": current.metadata.resource_version,
            },
            "spec": {"conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": self.target.endpoint.client_config(&path, ca),
                    "conversionReviewVersions": ["v1"],
                },
            }},
        });
        api.patch(crd, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        tracing::info!(%crd, plugin, "conversion webhook set");
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apiserver_waits_longer_than_the_plugin_may_take() {
        assert_eq!(timeout_seconds(Duration::from_secs(2)), 4);
        assert_eq!(timeout_seconds(Duration::from_millis(300)), 3);
        assert_eq!(timeout_seconds(Duration::from_secs(60)), 30);
    }

    #[test]
    fn a_webhook_leaves_out_the_namespaces_it_may_not_reach() {
        assert_eq!(namespace_selector(&[]), json!({}));
        let unreached = ["kube-system".to_owned(), "wasmop".to_owned()];
        let selector = namespace_selector(&unreached);
        let expression = &selector["matchExpressions"][0];
        assert_eq!(expression["key"], "kubernetes.io/metadata.name");
        assert_eq!(expression["operator"], "NotIn");
        assert_eq!(expression["values"], json!(["kube-system", "wasmop"]));
    }

    #[test]
    fn a_client_config_points_at_the_url_or_the_service_with_the_ca() {
        let url = Endpoint::Url("https://127.0.0.1:9443".into());
        let config = url.client_config("/validate/webapp", b"PEM");
        assert_eq!(config["url"], "https://127.0.0.1:9443/validate/webapp");
        assert_eq!(config["caBundle"], "UEVN");
        let service = Endpoint::Service {
            namespace: "operators".into(),
            name: "wasmop-webhooks".into(),
            port: 443,
        };
        let config = service.client_config("/convert/webapp", b"PEM");
        assert_eq!(config["service"]["path"], "/convert/webapp");
        assert_eq!(config["service"]["port"], 443);
        assert!(config.get("url").is_none());
    }
}
