mod types;

use serde::{Deserialize, Serialize};
use wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A @KIND@: its metadata, and its spec and status as crd.yaml's schema types them (`types.rs`,
/// which `wasmop generate` writes from it).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Primary {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// What the @KIND@ should be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<types::@KIND@Spec>,
    /// What the plugin last observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<types::@KIND@Status>,
}

wasmop_guest::custom_resource!(Primary {
    group: "@GROUP@",
    version: "@VERSION@",
    kind: "@KIND@",
    plural: "@PLURAL@",
    scope: Namespaced,
});
