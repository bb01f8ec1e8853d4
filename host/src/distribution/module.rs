//! Where a `WasmReconciler`'s component comes from — a ConfigMap's `binaryData` key, a Secret's
//! key, a URL, or an OCI registry ([`super::oci`]) — and fetching it with its digest checked.
//!
//! Every source must come with a digest, so what runs is exactly what was reviewed: whoever can
//! write the ConfigMap, Secret, URL or registry cannot swap the code. For the first three it is
//! the module's sha256; an OCI reference pins its manifest, which pins the component (a sha256
//! given too must then match the component). A module whose digest differs is refused before it
//! is compiled. Downloads connect within [`CONNECT_TIMEOUT`], finish
//! within [`FETCH_TIMEOUT`], are capped at [`MAX_MODULE_BYTES`] and follow no redirect; a failed
//! download is reported by its status alone, never by the body the server sent.
//!
//! A read is one the host performs for whoever wrote the `WasmReconciler`, so it passes the
//! capability check first: a ConfigMap, Secret or registry pull secret only in a namespace the
//! operator's policy lists (`modules.namespaces`), a URL or registry only on addresses it allows
//! (`modules.private-addresses`, see [`CheckedAddresses`]). And it answers nothing about what it read: a missing object, a missing
//! key and a read the apiserver refused give one message, and a module that does not match its
//! pin is never described by its own digest.

use std::collections::BTreeMap;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::{ByteString, NamespaceResourceScope};
use kube::Api;

use super::address::{AddressError, CheckedAddresses};
use super::digest;
use super::download::{CONNECT_TIMEOUT, FETCH_TIMEOUT, MAX_MODULE_BYTES};
use super::oci::{
    Held, OciError, OciRef, PullSecretError, Registries, SignatureCheck, Taken,
    auth_from_dockerconfig,
};
use wasmop_contract::capability::{self, Power, Subject};
use wasmop_contract::{Ceiling, KeyError, boundary};

/// The longest module URL (it is quoted in errors, and so in the `WasmReconciler`'s status).
const MAX_URL: usize = 2048;

/// A key of a ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct KeyRef {
    /// Its namespace (a namespaced `WasmReconciler` may leave it out: its own).
    #[serde(default)]
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The key holding the component.
    pub key: String,
}

impl KeyRef {
    /// Checks the namespace (a DNS label), the name (an object name) and the key (1-253 letters,
    /// digits, `-`, `_` or `.`, as ConfigMap and Secret keys are).
    fn validate(&self) -> Result<(), ModuleError> {
        if !boundary::dns_label(&self.namespace) {
            return Err(ModuleError::Invalid(
                "the namespace must be a namespace name",
            ));
        }
        if boundary::name(&self.name).is_err() {
            return Err(ModuleError::Invalid("the name must be an object name"));
        }
        let key_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
        if !(1..=253).contains(&self.key.len()) || !self.key.bytes().all(key_char) {
            return Err(ModuleError::Invalid(
                "the key must be 1-253 letters, digits, '-', '_' or '.'",
            ));
        }
        Ok(())
    }
}

/// A Secret in a namespace.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct SecretRef {
    /// Its namespace (a namespaced `WasmReconciler` may leave it out: its own).
    #[serde(default)]
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// `spec.module.oci`: a component in an OCI registry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OciSource {
    /// `REGISTRY/REPOSITORY[:TAG]@sha256:<digest>`.
    pub reference: String,
    /// A `kubernetes.io/dockerconfigjson` Secret holding the registry's credentials.
    pub pull_secret: Option<SecretRef>,
    /// The signature the module must carry.
    pub verify: Option<Verify>,
}

/// `spec.module.oci.verify`: the keys of the operator's policy the module must be signed by one
/// of (all the policy trusts when it names none).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct Verify {
    /// Names of keys under the policy's `signatures.keys`.
    #[serde(default)]
    pub keys: Vec<String>,
}

/// `spec.module` of a `WasmReconciler`: exactly one of `configMap`, `secret`, `url`, `oci`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleRef {
    /// A ConfigMap's `binaryData` key.
    pub config_map: Option<KeyRef>,
    /// A Secret's key.
    pub secret: Option<KeyRef>,
    /// An `http(s)` URL.
    pub url: Option<String>,
    /// A component in an OCI registry.
    pub oci: Option<OciSource>,
    /// The module's sha256 in hex; required but for `oci`, whose reference pins it.
    pub sha256: Option<String>,
}

/// Where a validated reference fetches from.
enum Source<'a> {
    ConfigMap(&'a KeyRef),
    Secret(&'a KeyRef),
    Url(&'a str),
    Oci(&'a OciSource, OciRef),
}

/// A module could not be fetched, or is not the one asked for.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    /// The reference is not exactly one source, or has no digest.
    #[error("spec.module: {0}")]
    Invalid(&'static str),
    /// The operator's policy does not allow reading modules from the ConfigMap's or Secret's
    /// namespace.
    #[error(
        "spec.module: the operator's policy does not allow reading modules from namespace \
         {namespace} (list it under modules.namespaces in the --policy file)"
    )]
    Namespace {
        /// The namespace named.
        namespace: String,
    },
    /// A namespaced `WasmReconciler` named a ConfigMap, Secret or pull secret outside its own
    /// namespace.
    #[error(
        "spec.module: a WasmReconciler in namespace {home} reads its module and pull secret only \
         there, not in namespace {namespace}"
    )]
    Confined {
        /// The namespace named.
        namespace: String,
        /// The object's own namespace.
        home: String,
    },
    /// The ConfigMap, Secret or key is not there, or the apiserver did not give it: one message
    /// for all, so the status tells nobody which objects or keys exist.
    #[error("spec.module: the module source could not be read")]
    Unreadable,
    /// The URL's host is not one the operator's policy allows.
    #[error("fetching {url}: {source}")]
    Address {
        /// The URL.
        url: String,
        /// Why its host is refused.
        source: AddressError,
    },
    /// The URL could not be fetched.
    #[error("fetching {url}: {message}")]
    Fetch {
        /// The URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The URL serves more than [`MAX_MODULE_BYTES`]; refused before, or as soon as, the rest
    /// would pass the limit.
    #[error("fetching {url}: the module is larger than the limit of {MAX_MODULE_BYTES} bytes")]
    TooLarge {
        /// The URL.
        url: String,
    },
    /// The module is not the one the digest names (whose own digest is never told).
    #[error("the module does not match spec.module.sha256")]
    Digest,
    /// The registry pull failed.
    #[error("pulling {reference}: {source}")]
    Oci {
        /// The reference.
        reference: String,
        /// Why.
        source: OciError,
    },
    /// The pull secret gives no credentials for the registry.
    #[error("spec.module.oci.pullSecret: {0}")]
    PullSecret(#[from] PullSecretError),
    /// `spec.module.oci.verify` names a key the operator does not trust.
    #[error("spec.module.oci.verify: {0}")]
    Verify(#[from] KeyError),
    /// The module would run unsigned, which the operator's policy does not allow.
    #[error("spec.module: the module {0}")]
    Unsigned(String),
}

/// A fetched module.
#[derive(Debug)]
pub struct Fetched {
    /// The component.
    pub bytes: Vec<u8>,
    /// The trusted key that signed it, if one was asked for.
    pub signed_by: Option<String>,
    /// The component compiled ahead of time for the host's engine, from a layer the signature
    /// covers, with all that vouched for it.
    pub precompiled: Option<Taken>,
    /// Why the registry could not be reached, when the module is the copy pulled before.
    pub unreachable: Option<String>,
    /// What a registry pull left in the pulled store, for the object to hold.
    pub held: Option<Held>,
    /// The digest the reference pinned it by (`sha256:…`): an OCI artifact's manifest digest,
    /// else the module's own.
    pub pinned: String,
}

impl ModuleRef {
    /// The reference with each ConfigMap, Secret and pull secret that names no namespace read in
    /// `home`, a namespaced `WasmReconciler`'s own namespace.
    pub fn at_home(mut self, home: &str) -> Self {
        let keys = [self.config_map.as_mut(), self.secret.as_mut()];
        let namespaces = keys.into_iter().flatten().map(|key| &mut key.namespace);
        let secret = self.oci.as_mut().and_then(|oci| oci.pull_secret.as_mut());
        for namespace in namespaces.chain(secret.map(|secret| &mut secret.namespace)) {
            if namespace.is_empty() {
                home.clone_into(namespace);
            }
        }
        self
    }

    /// Fetches the module, from a source the operator's `policy` allows (registries reached as
    /// `registries` says; ConfigMaps and Secrets only in `home`, the namespace of a namespaced
    /// `WasmReconciler`), and checks its digest and, where asked for, its signature; a module
    /// no trusted key is to verify must pass the capability check as [`Power::Unsigned`].
    pub async fn fetch(
        &self,
        client: &kube::Client,
        policy: &Ceiling,
        registries: &Registries,
        home: Option<&str>,
    ) -> Result<Fetched, ModuleError> {
        let source = self.source()?;
        let keys = match &source {
            Source::Oci(oci, _) => {
                let named = oci.verify.clone().unwrap_or_default().keys;
                policy.signatures.keys_for(&named)?
            }
            _ => None,
        };
        if keys.is_none() {
            capability::check(Subject::tenant(policy, home), Power::Unsigned)
                .map_err(|denied| ModuleError::Unsigned(denied.to_string()))?;
        }
        let fetched = match source {
            Source::ConfigMap(key) => {
                let subject = Subject::tenant(policy, home);
                unsigned(from_key(client, subject, key, |c: ConfigMap| c.binary_data).await?)
            }
            Source::Secret(key) => {
                let subject = Subject::tenant(policy, home);
                unsigned(from_key(client, subject, key, |s: Secret| s.data).await?)
            }
            Source::Url(url) => unsigned(from_url(url, policy).await?),
            Source::Oci(oci, reference) => {
                let pull = Pull {
                    client,
                    policy,
                    home,
                    registries,
                    verify: SignatureCheck::new(keys.as_deref(), &policy.signatures.keys),
                };
                pull.run(&reference, oci.pull_secret.as_ref()).await?
            }
        };
        self.check(&fetched.bytes)?;
        Ok(fetched)
    }

    /// Checks the reference before anything is fetched: exactly one source, pinned by a sha256 of
    /// 64 hex digits; a ConfigMap or Secret named by a namespace, name and key that cannot change
    /// the path of the request that reads it; a URL that is `http` or `https`.
    pub fn validate(&self) -> Result<(), ModuleError> {
        self.source().map(|_| ())
    }

    /// The one source, checked as [`ModuleRef::validate`] says.
    fn source(&self) -> Result<Source<'_>, ModuleError> {
        match (&self.sha256, &self.oci) {
            (None, Some(_)) => {}
            (None, None) => return Err(ModuleError::Invalid("pin the module with its sha256")),
            (Some(sha256), _) => {
                let hex = sha256.strip_prefix("sha256:").unwrap_or(sha256);
                if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(ModuleError::Invalid("sha256 must be 64 hex digits"));
                }
            }
        }
        match (&self.config_map, &self.secret, &self.url, &self.oci) {
            (Some(key), None, None, None) => key.validate().map(|()| Source::ConfigMap(key)),
            (None, Some(key), None, None) => key.validate().map(|()| Source::Secret(key)),
            (None, None, None, Some(oci)) => oci.validate(),
            (None, None, Some(url), None) => match url.parse::<hyper::Uri>() {
                Ok(uri)
                    if url.len() <= MAX_URL
                        && matches!(uri.scheme_str(), Some("http" | "https")) =>
                {
                    Ok(Source::Url(url))
                }
                _ => Err(ModuleError::Invalid(
                    "url must be an http or https URL of at most 2048 bytes",
                )),
            },
            _ => Err(ModuleError::Invalid(
                "set exactly one of configMap, secret, url, oci",
            )),
        }
    }

    fn check(&self, bytes: &[u8]) -> Result<(), ModuleError> {
        let Some(expected) = &self.sha256 else {
            return Ok(());
        };
        let actual = digest(bytes);
        let actual = actual.trim_start_matches("sha256:");
        match actual.eq_ignore_ascii_case(expected.trim_start_matches("sha256:")) {
            true => Ok(()),
            false => Err(ModuleError::Digest),
        }
    }
}

impl OciSource {
    /// The parsed reference and the pull secret, each checked as it will be used.
    fn validate(&self) -> Result<Source<'_>, ModuleError> {
        let reference = OciRef::parse(&self.reference).map_err(|e| match e {
            OciError::Reference(why) => ModuleError::Invalid(why),
            _ => ModuleError::Invalid("oci.reference is invalid"),
        })?;
        if let Some(secret) = &self.pull_secret {
            let as_key = KeyRef {
                namespace: secret.namespace.clone(),
                name: secret.name.clone(),
                key: ".dockerconfigjson".to_owned(),
            };
            as_key.validate()?;
        }
        Ok(Source::Oci(self, reference))
    }
}

fn unsigned(bytes: Vec<u8>) -> Fetched {
    Fetched {
        pinned: digest(&bytes),
        bytes,
        signed_by: None,
        precompiled: None,
        unreachable: None,
        held: None,
    }
}

/// A pull for a tenant: every connection checked against `policy`, the module's signatures as
/// `verify` says.
struct Pull<'a> {
    client: &'a kube::Client,
    policy: &'a Ceiling,
    /// The namespace of a namespaced `WasmReconciler`, the only one its pull secret may be in.
    home: Option<&'a str>,
    registries: &'a Registries,
    verify: SignatureCheck<'a>,
}

impl Pull<'_> {
    /// Pulls the component `reference` names, with the credentials of `secret` if given.
    async fn run(
        &self,
        reference: &OciRef,
        secret: Option<&SecretRef>,
    ) -> Result<Fetched, ModuleError> {
        let auth = match secret {
            None => oci_client::secrets::RegistryAuth::Anonymous,
            Some(secret) => {
                let key = KeyRef {
                    namespace: secret.namespace.clone(),
                    name: secret.name.clone(),
                    key: ".dockerconfigjson".to_owned(),
                };
                let subject = Subject::tenant(self.policy, self.home);
                let json = from_key(self.client, subject, &key, |s: Secret| {
                    (s.type_.as_deref() == Some("kubernetes.io/dockerconfigjson"))
                        .then_some(s.data)
                        .flatten()
                })
                .await?;
                auth_from_dockerconfig(&json, reference.registry())?
            }
        };
        let pulled = self
            .registries
            .pull(reference, &auth, Some(self.policy), self.verify)
            .await;
        let pulled = pulled.map_err(|source| ModuleError::Oci {
            reference: reference.to_string(),
            source,
        })?;
        Ok(Fetched {
            bytes: pulled.module,
            signed_by: pulled.signed_by,
            precompiled: pulled.precompiled,
            unreachable: pulled.unreachable.map(|error| error.to_string()),
            held: Some(pulled.held),
            pinned: pulled.digest,
        })
    }
}

/// The bytes under `key.key` of the object `key` names, taken from its map by `data`, if
/// `subject` (a tenant under the operator's policy) may read modules from its namespace.
async fn from_key<K>(
    client: &kube::Client,
    subject: Subject<'_>,
    key: &KeyRef,
    data: impl FnOnce(K) -> Option<BTreeMap<String, ByteString>>,
) -> Result<Vec<u8>, ModuleError>
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    capability::check(subject, Power::ModuleObject(&key.namespace)).map_err(|_| {
        let namespace = key.namespace.clone();
        match subject.home {
            Some(home) => ModuleError::Confined {
                namespace,
                home: home.to_owned(),
            },
            None => ModuleError::Namespace { namespace },
        }
    })?;
    let api: Api<K> = Api::namespaced(client.clone(), &key.namespace);
    let object = api.get_opt(&key.name).await.ok().flatten();
    object
        .and_then(data)
        .and_then(|mut data| data.remove(&key.key))
        .map(|bytes| bytes.0)
        .ok_or(ModuleError::Unreadable)
}

/// The body's length as the server declares it, to read it into one buffer of that size.
fn declared_length(headers: &hyper::HeaderMap) -> Option<usize> {
    let length = headers.get(hyper::header::CONTENT_LENGTH)?;
    length.to_str().ok()?.parse().ok()
}

/// Downloads `url` into one buffer (never a copy of it), connecting only to addresses of its host that `policy` allows.
async fn from_url(url: &str, policy: &Ceiling) -> Result<Vec<u8>, ModuleError> {
    let failed = |message: String| ModuleError::Fetch {
        url: url.to_owned(),
        message,
    };
    let uri: hyper::Uri = url.parse().map_err(|e| failed(format!("{e}")))?;
    let download = async {
        let addresses = CheckedAddresses::resolve(&uri, policy)
            .await
            .map_err(|source| ModuleError::Address {
                url: url.to_owned(),
                source,
            })?;
        let mut http = HttpConnector::new_with_resolver(addresses);
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let builder = Client::builder(TokioExecutor::new());
        // A plain http URL needs no CA certificates, which a minimal image may not have.
        let response = if uri.scheme_str() == Some("http") {
            builder.build::<_, Empty<Bytes>>(http).get(uri).await
        } else {
            let https = hyper_rustls::HttpsConnectorBuilder::new()
                .with_native_roots()
                .map_err(|e| failed(format!("no TLS roots: {e}")))?
                .https_only()
                .enable_http1()
                .wrap_connector(http);
            builder.build::<_, Empty<Bytes>>(https).get(uri).await
        };
        let response = response.map_err(|e| failed(format!("{e}")))?;
        if !response.status().is_success() {
            // A redirect is not followed, and the body is never echoed.
            return Err(failed(format!("the server answered {}", response.status())));
        }
        let too_large = || ModuleError::TooLarge {
            url: url.to_owned(),
        };
        let declared = declared_length(response.headers());
        if declared.is_some_and(|length| length > MAX_MODULE_BYTES) {
            return Err(too_large());
        }
        let mut body = response.into_body();
        let mut module = Vec::with_capacity(declared.unwrap_or(0));
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| failed(format!("{e}")))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if module.len() + data.len() > MAX_MODULE_BYTES {
                return Err(too_large());
            }
            module.extend_from_slice(&data);
        }
        Ok(module)
    };
    tokio::time::timeout(FETCH_TIMEOUT, download)
        .await
        .unwrap_or_else(|_| Err(failed(format!("not done within {FETCH_TIMEOUT:?}"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmop_contract::TrustedKey;

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
        let read = digest(b"another");
        assert!(
            !refused.contains(read.trim_start_matches("sha256:")),
            "{refused}"
        );
        let unpinned = ModuleRef {
            url: Some("https://example.com/webapp.wasm".into()),
            ..ModuleRef::default()
        };
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let error = unpinned
            .fetch(&client, &Ceiling::default(), &Registries::default(), None)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("sha256"), "{error}");
        let unpinned_key = ModuleRef {
            config_map: Some(KeyRef {
                namespace: "a".into(),
                name: "b".into(),
                key: "c".into(),
            }),
            ..ModuleRef::default()
        };
        let error = unpinned_key
            .fetch(&client, &Ceiling::default(), &Registries::default(), None)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("sha256"), "{error}");
        let empty = ModuleRef {
            sha256: Some("0".repeat(64)),
            ..ModuleRef::default()
        };
        let empty = empty
            .fetch(&client, &Ceiling::default(), &Registries::default(), None)
            .await
            .unwrap_err();
        assert!(empty.to_string().contains("exactly one"), "{empty}");
    }

    #[tokio::test]
    async fn objects_are_read_only_from_namespaces_the_policy_lists() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let secret = ModuleRef {
            secret: Some(KeyRef {
                namespace: "kube-system".into(),
                name: "token".into(),
                key: "password".into(),
            }),
            sha256: Some("0".repeat(64)),
            ..ModuleRef::default()
        };
        let refused = secret
            .fetch(&client, &Ceiling::default(), &Registries::default(), None)
            .await;
        let refused = refused.unwrap_err();
        assert!(
            matches!(refused, ModuleError::Namespace { .. }),
            "{refused}"
        );
        assert!(
            refused.to_string().contains("modules.namespaces"),
            "{refused}"
        );
        let allowed = Ceiling {
            modules: wasmop_contract::ModuleSources {
                namespaces: Some(vec!["kube-system".into()]),
                private_addresses: false,
            },
            ..Ceiling::default()
        };
        // Allowed, the read is tried: the apiserver is unreachable, which says what a missing
        // object or key says.
        let unread = secret
            .fetch(&client, &allowed, &Registries::default(), None)
            .await
            .unwrap_err();
        assert_eq!(unread.to_string(), ModuleError::Unreadable.to_string());
    }

    #[tokio::test]
    async fn a_policy_that_requires_signatures_runs_no_module_unverified() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let pem = "-----BEGIN PUBLIC KEY-----\n\
            MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEW7LikAeRMLlfBEqv///tRgkfcIcR\n\
            0t2Mcqh4RHnAPsfmG3VfMK1rhCXhmLLGEqiZoOiJzvB1CfmOFRIIIHkC5g==\n\
            -----END PUBLIC KEY-----\n";
        let key = TrustedKey::from_pem("release", pem).unwrap();
        let policy = Ceiling {
            modules: wasmop_contract::ModuleSources {
                namespaces: Some(vec!["plugins".into()]),
                private_addresses: false,
            },
            signatures: wasmop_contract::Signatures {
                keys: vec![key],
                require: true,
            },
            ..Ceiling::default()
        };
        let config_map = ModuleRef {
            config_map: Some(KeyRef {
                namespace: "plugins".into(),
                name: "webapp".into(),
                key: "webapp.wasm".into(),
            }),
            sha256: Some("0".repeat(64)),
            ..ModuleRef::default()
        };
        let refused = config_map
            .fetch(&client, &policy, &Registries::default(), None)
            .await;
        let refused = refused.unwrap_err();
        assert!(matches!(refused, ModuleError::Unsigned(_)), "{refused}");
        assert!(
            refused.to_string().contains("signatures.require"),
            "{refused}"
        );
        let oci = |keys: &[&str]| ModuleRef {
            oci: Some(OciSource {
                reference: format!("registry.example/webapp@sha256:{}", "a".repeat(64)),
                pull_secret: None,
                verify: Some(Verify {
                    keys: keys.iter().map(|k| k.to_string()).collect(),
                }),
            }),
            ..ModuleRef::default()
        };
        let unknown = oci(&["dev"])
            .fetch(&client, &policy, &Registries::default(), None)
            .await;
        let unknown = unknown.unwrap_err().to_string();
        assert!(
            unknown.contains("`dev`") && unknown.contains("release"),
            "{unknown}"
        );
    }

    #[test]
    fn key_refs_cannot_change_the_path_of_the_read() {
        let pinned = |config_map: KeyRef| ModuleRef {
            config_map: Some(config_map),
            sha256: Some("a".repeat(64)),
            ..ModuleRef::default()
        };
        let key = |namespace: &str, name: &str, key: &str| KeyRef {
            namespace: namespace.into(),
            name: name.into(),
            key: key.into(),
        };
        assert!(
            pinned(key("team-a", "webapp", "webapp.wasm"))
                .validate()
                .is_ok()
        );
        // Each read something else with the operator's credentials: `GET
        // /api/v1/namespaces/kube-system/secrets/token` for the first.
        for (namespace, name, k) in [
            ("kube-system/secrets/token?", "x", "k"),
            ("team-a", "../../secrets/token", "k"),
            ("team-a", "x?resourceVersion=0", "k"),
            ("team-a", "x", "a/b"),
            ("team-a", "x", ""),
        ] {
            let error = pinned(key(namespace, name, k)).validate().unwrap_err();
            assert!(matches!(error, ModuleError::Invalid(_)), "{error}");
        }
        let unhexed = ModuleRef {
            sha256: Some("z".repeat(64)),
            ..pinned(key("a", "b", "c"))
        };
        assert!(
            unhexed
                .validate()
                .unwrap_err()
                .to_string()
                .contains("64 hex digits")
        );
    }

    /// Serves `head` and then `body_bytes` bytes of zeros to the first request on loopback.
    async fn serving(head: &'static str, body_bytes: usize) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let _ = stream.read(&mut [0u8; 4096]).await;
            stream.write_all(head.as_bytes()).await.unwrap();
            let chunk = vec![0u8; 1 << 16];
            for _ in 0..body_bytes.div_ceil(chunk.len()) {
                if stream.write_all(&chunk).await.is_err() {
                    return;
                }
            }
        });
        format!("http://127.0.0.1:{port}/module.wasm")
    }

    #[tokio::test]
    async fn a_url_serving_more_than_the_limit_is_refused_as_too_large() {
        let policy = Ceiling {
            modules: wasmop_contract::ModuleSources {
                namespaces: None,
                private_addresses: true,
            },
            ..Ceiling::default()
        };
        let declared = "HTTP/1.1 200 OK\r\ncontent-length: 1073741824\r\n\r\n";
        let url = serving(declared, 0).await;
        let refused = from_url(&url, &policy).await.unwrap_err();
        assert!(matches!(refused, ModuleError::TooLarge { .. }), "{refused}");
        let undeclared = "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n";
        let url = serving(undeclared, MAX_MODULE_BYTES + (1 << 16)).await;
        let refused = from_url(&url, &policy).await.unwrap_err();
        assert!(matches!(refused, ModuleError::TooLarge { .. }), "{refused}");
        assert!(
            refused.to_string().contains("larger than the limit"),
            "{refused}"
        );
    }
}
