//! The `WebApp` custom resource (`example.wasmop.dev/v1alpha1`), as `deploy/crds/webapp.yaml`
//! declares it, or in the group a build names with `WEBAPP_GROUP`.

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

/// The API group WebApps are served in; a build with `WEBAPP_GROUP` set serves that group instead
/// (the consolidation benchmark builds one plugin per group, each its own operator).
pub const GROUP: &str = match option_env!("WEBAPP_GROUP") {
    Some(group) => group,
    None => "example.wasmop.dev",
};
/// The version WebApps are stored in.
pub const VERSION: &str = "v1alpha1";
const API_VERSION_BYTES: [u8; GROUP.len() + 1 + VERSION.len()] = joined(GROUP, VERSION);

impl wasmop_guest::k8s_openapi::Resource for WebApp {
    const API_VERSION: &'static str = match core::str::from_utf8(&API_VERSION_BYTES) {
        Ok(api_version) => api_version,
        Err(_) => panic!("a group and version join into UTF-8"),
    };
    const GROUP: &'static str = GROUP;
    const KIND: &'static str = "WebApp";
    const VERSION: &'static str = VERSION;
    const URL_PATH_SEGMENT: &'static str = "webapps";
    type Scope = wasmop_guest::k8s_openapi::NamespaceResourceScope;
}

impl wasmop_guest::k8s_openapi::Metadata for WebApp {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// `group/version`, at compile time.
const fn joined<const N: usize>(group: &str, version: &str) -> [u8; N] {
    let (group, version) = (group.as_bytes(), version.as_bytes());
    let mut out = [b'/'; N];
    let mut i = 0;
    while i < group.len() {
        out[i] = group[i];
        i += 1;
    }
    let mut j = 0;
    while j < version.len() {
        out[group.len() + 1 + j] = version[j];
        j += 1;
    }
    out
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
    /// The port the container listens on and the Service exposes; [`WebAppSpec::port`] when
    /// absent (the defaulting webhook writes it, and a write of the spec never adds it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

impl WebAppSpec {
    /// The port served: the one named, or 8080.
    pub fn port(&self) -> i32 {
        self.port.unwrap_or(DEFAULT_PORT)
    }
}

impl Default for WebAppSpec {
    fn default() -> Self {
        Self {
            image: String::new(),
            replicas: default_replicas(),
            port: None,
        }
    }
}

fn default_replicas() -> i32 {
    1
}

/// The port a WebApp naming none serves.
pub const DEFAULT_PORT: i32 = 8080;

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
    use super::*;
    use wasmop_guest::k8s_openapi::Resource;

    #[test]
    fn the_api_version_joins_group_and_version() {
        assert_eq!(WebApp::API_VERSION, format!("{GROUP}/{VERSION}"));
        if option_env!("WEBAPP_GROUP").is_none() {
            assert_eq!(WebApp::API_VERSION, "example.wasmop.dev/v1alpha1");
        }
    }
}
