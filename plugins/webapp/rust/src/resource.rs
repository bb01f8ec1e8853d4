//! The `WebApp` custom resource (`example.wasmop.dev/v1alpha1`), as `deploy/crds/webapp.yaml`
//! declares it.

use serde::{Deserialize, Serialize};
use wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};

/// A web application: an image served on a port by some replicas.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WebApp {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// What the user asks for.
    pub spec: WebAppSpec,
    /// What the plugin observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WebAppStatus>,
}

wasmop_guest::custom_resource!(WebApp {
    group: "example.wasmop.dev",
    version: "v1alpha1",
    kind: "WebApp",
    plural: "webapps",
    scope: Namespaced,
});

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
