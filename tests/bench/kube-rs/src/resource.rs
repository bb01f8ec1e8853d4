//! The `WebApp` custom resource (`example.wasmop.dev/v1alpha1`), as `deploy/crds/webapp.yaml`
//! declares it, or in the group `WEBAPP_GROUP` names (the consolidation benchmark runs one operator
//! per group). The workspace's kube has no `derive` feature, so the type implements
//! [`kube::Resource`] by hand rather than through `#[derive(CustomResource)]`.

use std::borrow::Cow;
use std::sync::LazyLock;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use serde::{Deserialize, Serialize};

/// The environment variable naming the API group to serve WebApps from, when not the default.
const GROUP_ENV: &str = "WEBAPP_GROUP";

/// The API group, read once from [`GROUP_ENV`].
static GROUP: LazyLock<String> = LazyLock::new(|| {
    std::env::var(GROUP_ENV)
        .ok()
        .filter(|group| !group.is_empty())
        .unwrap_or_else(|| "example.wasmop.dev".to_owned())
});

/// `group/version`, made once.
static API_VERSION: LazyLock<String> = LazyLock::new(|| format!("{}/v1alpha1", GROUP.as_str()));

/// A web application: an image served on a port by some replicas.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WebApp {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// What the user asks for.
    pub spec: WebAppSpec,
    /// What the operator observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WebAppStatus>,
}

impl kube::Resource for WebApp {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind((): &()) -> Cow<'_, str> {
        "WebApp".into()
    }

    fn group((): &()) -> Cow<'_, str> {
        GROUP.as_str().into()
    }

    fn version((): &()) -> Cow<'_, str> {
        "v1alpha1".into()
    }

    fn api_version((): &()) -> Cow<'_, str> {
        API_VERSION.as_str().into()
    }

    fn plural((): &()) -> Cow<'_, str> {
        "webapps".into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The desired state of a [`WebApp`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebAppSpec {
    /// The container image to run.
    pub image: String,
    /// How many pods to run.
    #[serde(default = "default_replicas")]
    pub replicas: i32,
    /// The port the container listens on and the Service exposes.
    #[serde(default = "default_port")]
    pub port: i32,
}

impl Default for WebAppSpec {
    fn default() -> Self {
        Self {
            image: String::new(),
            replicas: default_replicas(),
            port: default_port(),
        }
    }
}

fn default_replicas() -> i32 {
    1
}

fn default_port() -> i32 {
    8080
}

/// The observed state of a [`WebApp`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebAppStatus {
    /// The metadata.generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pods of the Deployment that are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Standard conditions; `Ready` says whether all replicas are ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

#[cfg(test)]
mod tests {
    use kube::Resource;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_resource_is_namespaced_under_its_group() {
        assert_eq!(
            WebApp::url_path(&(), Some("shop")),
            "/apis/example.wasmop.dev/v1alpha1/namespaces/shop/webapps"
        );
        assert_eq!(WebApp::api_version(&()), "example.wasmop.dev/v1alpha1");
    }

    #[test]
    fn the_spec_defaults_as_the_crd_does() {
        let app: WebApp = serde_json::from_value(json!({
            "metadata": { "name": "shop" },
            "spec": { "image": "nginx" },
        }))
        .unwrap();
        assert_eq!(app.spec.replicas, 1);
        assert_eq!(app.spec.port, 8080);
        assert_eq!(app.status, None);
    }
}
