use serde::{Deserialize, Serialize};
use wasmop_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wasmop_guest::serde_json::{Map, Value};

/// A @KIND@: its metadata, and every other field as it is.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Primary {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The rest of the object (`spec`, `status`, …).
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

wasmop_guest::custom_resource!(Primary {
    group: "@GROUP@",
    version: "@VERSION@",
    kind: "@KIND@",
    plural: "@PLURAL@",
    scope: Namespaced,
});
