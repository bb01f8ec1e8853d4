//! One language's webapp under test: its namespace, identity and manager, and the objects the
//! scenarios read and write (as the cluster's admin, like a user with kubectl).

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DynamicObject, GroupVersionKind};
use kube::core::ApiResource;
use wasmop::cache::Namespaces;
use wasmop::controller::Stats;
use wasmop::manager::{Manager, ManagerOptions};
use wasmop::runtime::PluginOptions;
use wasmop_envtest::{ControlPlane, shared};

use crate::Language;
use crate::identity::Identity;

/// How long any one expectation may take to hold.
const EVENTUALLY: Duration = Duration::from_secs(60);

/// A running webapp plugin of one language and handles on what it manages.
pub struct Subject {
    /// The language.
    pub language: Language,
    /// The control plane.
    pub plane: &'static ControlPlane,
    /// The namespace the manager watches.
    pub namespace: String,
    /// The operator's identity, whose RBAC scenarios may narrow.
    pub identity: Identity,
    /// WebApps in the namespace.
    pub webapps: Api<DynamicObject>,
    /// Deployments in the namespace.
    pub deployments: Api<Deployment>,
    /// Services in the namespace.
    pub services: Api<Service>,
    /// ConfigMaps in the namespace.
    pub configmaps: Api<ConfigMap>,
    manager: Manager,
}

impl Subject {
    /// Starts a manager running `language`'s webapp in a fresh namespace, as its own identity.
    pub async fn start(language: Language) -> anyhow::Result<Subject> {
        let component = language.component_path()?;
        let plane = shared().await?;
        let crd =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds/webapp.yaml");
        plane.install_crds(&[crd]).await?;
        let namespace = plane
            .create_namespace(&format!("conformance-{}", language.name))
            .await?;
        let (identity, operator) = Identity::create(plane, language.name, &namespace).await?;
        let options = ManagerOptions {
            namespaces: Namespaces::Only(vec![namespace.clone()]),
            ..ManagerOptions::default()
        };
        let mut manager = Manager::new(operator, options)?;
        manager
            .add_plugin(&component, PluginOptions::default())
            .await?;
        let admin = plane.client().await?;
        let kind = GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp");
        let webapps = ApiResource::from_gvk_with_plural(&kind, "webapps");
        Ok(Subject {
            language,
            plane,
            webapps: Api::namespaced_with(admin.clone(), &namespace, &webapps),
            deployments: Api::namespaced(admin.clone(), &namespace),
            services: Api::namespaced(admin.clone(), &namespace),
            configmaps: Api::namespaced(admin, &namespace),
            namespace,
            identity,
            manager,
        })
    }

    /// The plugin's reconcile counts.
    pub fn stats(&self) -> &Stats {
        self.manager
            .controller("webapp")
            .expect("the webapp plugin runs")
            .stats()
    }

    /// Stops the manager.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.manager.stop().await?;
        Ok(())
    }
}

/// Polls `probe` until it returns `Some`, failing after a minute with `what`.
pub async fn eventually<T, F>(what: &str, mut probe: impl FnMut() -> F) -> anyhow::Result<T>
where
    F: Future<Output = anyhow::Result<Option<T>>>,
{
    let poll = async {
        loop {
            if let Some(value) = probe().await? {
                return Ok(value);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(EVENTUALLY, poll)
        .await
        .map_err(|_| anyhow::anyhow!("timed out after {EVENTUALLY:?} waiting for {what}"))?
}
