//! Where a `WasmReconciler`'s component comes from — a ConfigMap's `binaryData` key, a Secret's
//! key, or a URL — and fetching it with its digest checked.
//!
//! Every source must come with the module's sha256, so what runs is exactly what was reviewed:
//! whoever can write the ConfigMap, Secret or URL cannot swap the code. A module whose digest
//! differs is refused before it is compiled. Downloads connect within [`CONNECT_TIMEOUT`], finish
//! within [`FETCH_TIMEOUT`], are capped at [`MAX_MODULE_BYTES`] and follow no redirect; a failed
//! download is reported by its status alone, never by the body the server sent.

use std::collections::BTreeMap;
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::{ByteString, NamespaceResourceScope};
use kube::Api;

use super::digest;

/// The largest module a URL may serve.
pub const MAX_MODULE_BYTES: usize = 64 << 20;

/// How long connecting to a module's server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a whole download may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(120);

/// A key of a ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct KeyRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The key holding the component.
    pub key: String,
}

/// `spec.module` of a `WasmReconciler`: exactly one of `configMap`, `secret`, `url`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleRef {
    /// A ConfigMap's `binaryData` key.
    pub config_map: Option<KeyRef>,
    /// A Secret's key.
    pub secret: Option<KeyRef>,
    /// An `http(s)` URL.
    pub url: Option<String>,
    /// The module's sha256 in hex; required.
    pub sha256: Option<String>,
}

/// A module could not be fetched, or is not the one asked for.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    /// The reference is not exactly one source, or has no digest.
    #[error("spec.module: {0}")]
    Invalid(&'static str),
    /// The ConfigMap, Secret or key is not there.
    #[error("{0}")]
    Missing(String),
    /// The URL could not be fetched.
    #[error("fetching {url}: {message}")]
    Fetch {
        /// The URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The module is not the one the digest names.
    #[error("the module's sha256 is {actual}, not {expected} as spec.module.sha256 requires")]
    Digest {
        /// The digest asked for.
        expected: String,
        /// The module's.
        actual: String,
    },
}

impl ModuleRef {
    /// Fetches the module and checks its digest.
    pub async fn fetch(&self, client: &kube::Client) -> Result<Vec<u8>, ModuleError> {
        if self.sha256.is_none() {
            return Err(ModuleError::Invalid("pin the module with its sha256"));
        }
        let bytes = match (&self.config_map, &self.secret, &self.url) {
            (Some(key), None, None) => {
                from_key(client, key, "binaryData", |c: ConfigMap| c.binary_data).await?
            }
            (None, Some(key), None) => from_key(client, key, "data", |s: Secret| s.data).await?,
            (None, None, Some(url)) => from_url(url).await?,
            _ => {
                return Err(ModuleError::Invalid(
                    "set exactly one of configMap, secret, url",
                ));
            }
        };
        self.check(&bytes)?;
        Ok(bytes)
    }

    fn check(&self, bytes: &[u8]) -> Result<(), ModuleError> {
        let Some(expected) = &self.sha256 else {
            return Ok(());
        };
        let actual = digest(bytes);
        let actual = actual.trim_start_matches("sha256:");
        if actual.eq_ignore_ascii_case(expected.trim_start_matches("sha256:")) {
            return Ok(());
        }
        Err(ModuleError::Digest {
            expected: expected.clone(),
            actual: actual.to_owned(),
        })
    }
}

/// The bytes under `key.key` of the object `key` names, taken from its map by `data`.
async fn from_key<K>(
    client: &kube::Client,
    key: &KeyRef,
    field: &str,
    data: impl FnOnce(K) -> Option<BTreeMap<String, ByteString>>,
) -> Result<Vec<u8>, ModuleError>
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(client.clone(), &key.namespace);
    let what = format!("{} {}/{}", K::kind(&()), key.namespace, key.name);
    let object = api
        .get_opt(&key.name)
        .await
        .map_err(|e| ModuleError::Missing(format!("reading {what}: {e}")))?
        .ok_or_else(|| ModuleError::Missing(format!("{what} does not exist")))?;
    data(object)
        .and_then(|mut data| data.remove(&key.key))
        .map(|bytes| bytes.0)
        .ok_or_else(|| ModuleError::Missing(format!("{what} has no {field} key {:?}", key.key)))
}

async fn from_url(url: &str) -> Result<Vec<u8>, ModuleError> {
    let failed = |message: String| ModuleError::Fetch {
        url: url.to_owned(),
        message,
    };
    let uri: hyper::Uri = url.parse().map_err(|e| failed(format!("{e}")))?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| failed(format!("no TLS roots: {e}")))?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build(https);
    let download = async {
        let response = client.get(uri).await.map_err(|e| failed(format!("{e}")))?;
        if !response.status().is_success() {
            // A redirect is not followed, and the body is never echoed.
            return Err(failed(format!("the server answered {}", response.status())));
        }
        let body = Limited::new(response.into_body(), MAX_MODULE_BYTES)
            .collect()
            .await
            .map_err(|e| failed(format!("{e} (at most {MAX_MODULE_BYTES} bytes)")))?;
        Ok(body.to_bytes().to_vec())
    };
    tokio::time::timeout(FETCH_TIMEOUT, download)
        .await
        .unwrap_or_else(|_| Err(failed(format!("not done within {FETCH_TIMEOUT:?}"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn digests_must_match_and_urls_need_one() {
        let module = ModuleRef {
            sha256: Some(
                digest(b"component")
                    .trim_start_matches("sha256:")
                    .to_owned(),
            ),
            ..ModuleRef::default()
        };
        assert!(module.check(b"component").is_ok());
        let refused = module.check(b"another").unwrap_err().to_string();
        assert!(refused.contains("spec.module.sha256"), "{refused}");
        let unpinned = ModuleRef {
            url: Some("https://example.com/webapp.wasm".into()),
            ..ModuleRef::default()
        };
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let error = unpinned.fetch(&client).await.unwrap_err();
        assert!(error.to_string().contains("sha256"), "{error}");
        let unpinned_key = ModuleRef {
            config_map: Some(KeyRef {
                namespace: "a".into(),
                name: "b".into(),
                key: "c".into(),
            }),
            ..ModuleRef::default()
        };
        let error = unpinned_key.fetch(&client).await.unwrap_err();
        assert!(error.to_string().contains("sha256"), "{error}");
        let empty = ModuleRef {
            sha256: Some("0".repeat(64)),
            ..ModuleRef::default()
        };
        let empty = empty.fetch(&client).await.unwrap_err();
        assert!(empty.to_string().contains("exactly one"), "{empty}");
    }
}
