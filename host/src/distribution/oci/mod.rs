//! Plugins as Wasm OCI artifacts: references pinned by digest, pulled from a registry with
//! oci-client and pushed by `wasmop push`.
//!
//! An artifact is laid out as the CNCF TAG Runtime's Wasm working group specifies ([`artifact`]):
//! an OCI image manifest whose config is `application/vnd.wasm.config.v0+json` and whose one layer
//! is the component, `application/wasm` — what `wkg oci push` and `oras push` of that convention
//! make too.
//!
//! Invariants of a pull: the reference names a digest, and the manifest's bytes hash to it (a
//! reference that names a tag too is refused once the tag names another manifest); the
//! component's bytes hash to the layer's digest; the manifest is at most [`MAX_MANIFEST_BYTES`] and
//! the component at most [`MAX_MODULE_BYTES`] (what a registry sends beyond either is cut off);
//! the whole pull ends within [`FETCH_TIMEOUT`], each connection within [`CONNECT_TIMEOUT`]. Every
//! connection of a pull — to the registry, its token service, and wherever a redirect leads —
//! goes through a [`proxy`] that enforces those caps and, when the pull is made for a tenant,
//! connects only to addresses the operator's policy allows. Credentials reach the registry's own host alone (a redirect
//! elsewhere carries none), and no error repeats what a registry sent: it says the status, the
//! registry's error codes or what the host found wrong.

mod artifact;
mod auth;
mod error;
#[cfg(test)]
mod hostile_tests;
mod proxy;
mod reference;
mod signature;
mod store;

use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::OptionFuture;
use oci_client::Client;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncWrite, AsyncWriteExt};

pub use artifact::{
    CONFIG_MEDIA_TYPE, ENGINE_ANNOTATION, LAYER_MEDIA_TYPE, MAX_PRECOMPILED_BYTES,
    PRECOMPILED_MEDIA_TYPE, Precompiled, component_names,
};
pub use auth::{PullSecretError, auth_from_dockerconfig};
pub use error::OciError;
pub use reference::{OciRef, SCHEME};
pub use signature::{PAYLOAD_MEDIA_TYPE, SIGNATURE_ANNOTATION};
pub use store::{Access, Held, Store};

use super::download::{CONNECT_TIMEOUT, FETCH_TIMEOUT, MAX_MODULE_BYTES};
use proxy::Proxy;
use signature::Signature;
use wasmop_contract::{Ceiling, TrustedKey};

/// The largest manifest a registry may send.
pub const MAX_MANIFEST_BYTES: usize = 1 << 20;

/// How long a connection may sit without a byte read.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How the host reaches registries: which it speaks plain HTTP to, which CAs it trusts beyond
/// the system's, and the policy its connections are checked against (none for the CLI, which
/// acts for the person running it).
#[derive(Debug, Clone, Default)]
pub struct Registries {
    /// Registries (`HOST[:PORT]`) reached over plain HTTP.
    pub plain_http: Vec<String>,
    /// PEM certificates of CAs trusted beyond the system's.
    pub ca_pem: Vec<Vec<u8>>,
    /// Where pulled components are kept, if anywhere.
    pub store: Option<Store>,
    /// The engine a precompiled layer must be for to be pulled (the host's
    /// `Runtime::engine_fingerprint`); none are pulled without it.
    pub engine: Option<String>,
}

/// A component pulled from a registry.
#[derive(Debug)]
pub struct Pulled {
    /// The component's bytes.
    pub module: Vec<u8>,
    /// The manifest's digest (`sha256:…`), as the reference pins it.
    pub digest: String,
    /// What the pull left in the store (the manifest and component), for its source to hold.
    pub held: Held,
    /// The trusted key that signed it, when a signature was asked for.
    pub signed_by: Option<String>,
    /// The component compiled ahead of time for [`Registries::engine`], when the artifact has
    /// such a layer and a trusted key signed it.
    pub precompiled: Option<Taken>,
    /// Why the registry could not be reached, when the component came from the store instead.
    pub unreachable: Option<OciError>,
}

/// A precompiled layer taken with a pull, and all that vouched for it.
#[derive(Debug)]
pub struct Taken {
    /// The layer, in a temporary file written to disk.
    pub file: tempfile::NamedTempFile,
    /// What it was taken on, in order: the manifest's digest, the component's, the layer's, the
    /// name of the key that signed the manifest and the digest of that key's public point, and
    /// the engine it was compiled for.
    pub trusted: Vec<String>,
}

/// How a pull checks the artifact's signatures against keys the operator trusts.
#[derive(Debug, Clone, Copy)]
pub enum SignatureCheck<'a> {
    /// Not at all: the component loads unsigned, and no precompiled layer is taken.
    No,
    /// Only to take a precompiled layer for the host's engine: one of the keys must have signed
    /// the artifact for that layer to be used; the component loads either way.
    ForPrecompiled(&'a [TrustedKey]),
    /// One of the keys must have signed the pinned digest, or the pull fails.
    Required(&'a [TrustedKey]),
}

impl<'a> SignatureCheck<'a> {
    /// Signatures by one of `required` when given; otherwise by one of `trusted`, only to take
    /// a precompiled layer (none checked when nothing is trusted).
    pub fn new(required: Option<&'a [TrustedKey]>, trusted: &'a [TrustedKey]) -> Self {
        match required {
            Some(keys) => SignatureCheck::Required(keys),
            None if trusted.is_empty() => SignatureCheck::No,
            None => SignatureCheck::ForPrecompiled(trusted),
        }
    }

    fn required(&self) -> bool {
        matches!(self, SignatureCheck::Required(_))
    }

    fn keys(&self) -> Option<&'a [TrustedKey]> {
        match *self {
            SignatureCheck::No => None,
            SignatureCheck::ForPrecompiled(keys) | SignatureCheck::Required(keys) => Some(keys),
        }
    }
}

/// What one pull brought: the component and, when asked for, the digest's signatures.
struct Fetched {
    module: Vec<u8>,
    /// The component's digest.
    component: String,
    signatures: Vec<Signature>,
    precompiled: Option<Taken>,
}

impl Registries {
    /// Pulls the component `reference` names with `auth`; for a tenant, with `policy` checking
    /// every address connected to; its signatures checked as `verify` says.
    /// When the registry cannot be reached, the component (and signatures) pulled from the
    /// same repository before with the same access are given, if the store holds them, and
    /// checked the same way.
    pub async fn pull(
        &self,
        reference: &OciRef,
        auth: &RegistryAuth,
        policy: Option<&Ceiling>,
        verify: SignatureCheck<'_>,
    ) -> Result<Pulled, OciError> {
        let access = Access::of(reference.registry(), auth);
        let fetch = self.fetch(reference, auth, &access, policy, verify);
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, fetch)
            .await
            .unwrap_or(Err(OciError::Unreachable("did not answer in time")))
            .map_err(|error| self.hinted(reference.registry(), error));
        let (fetched, unreachable) = match fetched {
            Ok(fetched) => (fetched, None),
            Err(error @ OciError::Unreachable(_)) => {
                match self.stored(reference, &access, verify).await {
                    Some(stored) => {
                        tracing::warn!(reference = %reference, "{error}; loading the component pulled before");
                        (stored, Some(error))
                    }
                    None => return Err(error),
                }
            }
            Err(error) => return Err(error),
        };
        let verified_by = |keys: &[TrustedKey]| {
            signature::verified_by(&fetched.signatures, reference.digest(), keys)
                .map(|key| key.name().to_owned())
        };
        let signed_by = match verify {
            SignatureCheck::Required(keys) => Some(verified_by(keys)?),
            SignatureCheck::ForPrecompiled(keys) if fetched.precompiled.is_some() => {
                verified_by(keys).ok()
            }
            _ => None,
        };
        Ok(Pulled {
            module: fetched.module,
            digest: reference.digest().to_owned(),
            held: Held {
                reference: reference.clone(),
                component: fetched.component,
            },
            precompiled: fetched.precompiled.filter(|_| signed_by.is_some()),
            signed_by,
            unreachable,
        })
    }

    /// The component of `reference` the store holds for `access`, if it holds its manifest too
    /// (and the signatures kept with it, when they are required).
    async fn stored(
        &self,
        reference: &OciRef,
        access: &Access,
        verify: SignatureCheck<'_>,
    ) -> Option<Fetched> {
        let store = self.store.as_ref()?;
        let manifest = store.manifest(reference, access).await?;
        let layer = artifact::component_layer(reference, &manifest).ok()?;
        let module = store.blob(reference, &layer.digest, access).await?;
        let signatures = match verify.required() {
            true => store.signatures(reference).await,
            false => Vec::new(),
        };
        Some(Fetched {
            module,
            component: layer.digest,
            signatures,
            precompiled: None,
        })
    }

    async fn fetch(
        &self,
        reference: &OciRef,
        auth: &RegistryAuth,
        access: &Access,
        policy: Option<&Ceiling>,
        verify: SignatureCheck<'_>,
    ) -> Result<Fetched, OciError> {
        let anywhere = Ceiling {
            modules: wasmop_contract::ModuleSources {
                namespaces: None,
                private_addresses: true,
            },
            ..Ceiling::default()
        };
        let proxy = Proxy::start(policy.unwrap_or(&anywhere).clone()).await?;
        let client = self.client(Some(&proxy))?;
        let pull = Pull {
            client: &client,
            proxy: &proxy,
            reference,
            auth,
        };
        pull.check_tag().await?;
        let manifest = pull
            .manifest(reference.oci(), artifact::MANIFEST_MEDIA_TYPES)
            .await?;
        let layer = artifact::component_layer(reference, &manifest)?;
        let precompiled_layer = match (verify, &self.engine) {
            (SignatureCheck::No, _) | (_, None) => None,
            (_, Some(engine)) => artifact::precompiled_layer(&manifest, engine),
        };
        let signatures = match (verify, &precompiled_layer) {
            (SignatureCheck::Required(_), _) => pull.signatures().await?,
            // Unsigned loads are allowed: a signature that cannot be read costs a compile.
            (SignatureCheck::ForPrecompiled(_), Some(_)) => {
                pull.signatures().await.unwrap_or_default()
            }
            _ => Vec::new(),
        };
        // Native code is downloaded only once a trusted key is seen to have signed the artifact.
        let signer = verify
            .keys()
            .and_then(|keys| signature::verified_by(&signatures, reference.digest(), keys).ok());
        let precompiled = match (precompiled_layer, signer, &self.engine) {
            (Some(precompiled), Some(key), Some(engine)) => {
                let spool = self.store.as_ref().map(Store::dir);
                let spool = spool.map_or_else(std::env::temp_dir, Path::to_owned);
                let blob = pull
                    .spooled(&precompiled, "precompiled component", &spool)
                    .await;
                let trusted = vec![
                    reference.digest().to_owned(),
                    layer.digest.clone(),
                    precompiled.digest.clone(),
                    key.name().to_owned(),
                    super::digest(&key.public_point()),
                    engine.clone(),
                ];
                let taken = blob.map(|file| Taken { file, trusted });
                match verify.required() {
                    true => Some(taken?),
                    false => taken.ok(),
                }
            }
            _ => None,
        };
        let store = self.store.as_ref();
        let held = OptionFuture::from(store.map(|s| s.blob(reference, &layer.digest, access)));
        let module = match held.await.flatten() {
            Some(module) => module,
            None => pull.blob(&layer, "component").await?,
        };
        if let Some(store) = store {
            store
                .keep(reference, access, &manifest, &layer.digest, &module)
                .await;
            if verify.required() {
                store.keep_signatures(reference, &signatures).await;
            }
        }
        Ok(Fetched {
            module,
            component: layer.digest,
            signatures,
            precompiled,
        })
    }

    /// Pushes `module` (with its `precompiled` form, if given) as a Wasm artifact to
    /// `reference` (a tag or a bare repository) with `auth`, and returns the manifest's digest
    /// to pin.
    pub async fn push(
        &self,
        reference: &oci_client::Reference,
        module: Vec<u8>,
        precompiled: Option<Precompiled>,
        auth: &RegistryAuth,
    ) -> Result<String, OciError> {
        let artifact = artifact::Artifact::of(module, precompiled)?;
        let digest = artifact.digest();
        let (blobs, manifest) = artifact.into_parts();
        upload(&self.client(None)?, reference, blobs, manifest, auth)
            .await
            .map_err(|error| self.hinted(reference.resolve_registry(), error))?;
        Ok(digest)
    }

    /// Signs the artifact `reference` pins with `key` as cosign does, adding the signature to
    /// the ones its repository holds; returns the reference of the signature manifest.
    pub async fn sign(
        &self,
        reference: &OciRef,
        key: &p256::ecdsa::SigningKey,
        auth: &RegistryAuth,
    ) -> Result<String, OciError> {
        let client = self.client(None)?;
        let registry = |e| self.hinted(reference.registry(), OciError::registry(e, None));
        client
            .fetch_manifest_digest(reference.oci(), auth)
            .await
            .map_err(registry)?;
        let tagged = reference.tagged(&signature::tag(reference.digest()));
        let existing = match client
            .pull_manifest_raw(&tagged, auth, signature::MANIFEST_MEDIA_TYPES)
            .await
            .map_err(registry)
        {
            Ok((raw, _)) => Some(raw.to_vec()),
            Err(OciError::NotFound) => None,
            Err(error) => return Err(error),
        };
        let signed = Signature::sign(reference, key);
        let (manifest, blobs) = signature::manifest(existing.as_deref(), &signed)?;
        upload(&client, &tagged, blobs, manifest, auth)
            .await
            .map_err(|error| self.hinted(reference.registry(), error))?;
        Ok(tagged.whole())
    }

    /// `error`, saying how to reach a registry that serves plain HTTP when a connection to
    /// `registry` over HTTPS failed.
    fn hinted(&self, registry: &str, error: OciError) -> OciError {
        let over_https = !self.plain_http.iter().any(|named| named == registry);
        match error {
            OciError::Unreachable(error::NOT_CONNECTED) if over_https => {
                OciError::Unreachable(error::NOT_CONNECTED_OVER_HTTPS)
            }
            error => error,
        }
    }

    fn client(&self, proxy: Option<&Proxy>) -> Result<Client, OciError> {
        install_crypto_provider();
        let mut config = ClientConfig {
            protocol: match self.plain_http.is_empty() {
                true => ClientProtocol::Https,
                false => ClientProtocol::HttpsExcept(self.plain_http.clone()),
            },
            extra_root_certificates: self
                .ca_pem
                .iter()
                .map(|pem| Certificate {
                    encoding: CertificateEncoding::Pem,
                    data: pem.clone(),
                })
                .collect(),
            platform_resolver: None,
            max_concurrent_download: 1,
            connect_timeout: Some(CONNECT_TIMEOUT),
            read_timeout: Some(READ_TIMEOUT),
            user_agent: concat!("wasmop/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        if let Some(proxy) = proxy {
            config.https_proxy = Some(proxy.url().to_owned());
            config.http_proxy = Some(proxy.url().to_owned());
        }
        Client::try_from(config).map_err(|e| OciError::Client(e.to_string()))
    }
}

/// Pushes `blobs`, then the image `manifest` naming them, to `reference` with `auth`.
async fn upload(
    client: &Client,
    reference: &oci_client::Reference,
    blobs: Vec<Vec<u8>>,
    manifest: Vec<u8>,
    auth: &RegistryAuth,
) -> Result<(), OciError> {
    let registry = |e| OciError::registry(e, None);
    client
        .store_auth_if_needed(reference.resolve_registry(), auth)
        .await;
    client
        .auth(reference, auth, oci_client::RegistryOperation::Push)
        .await
        .map_err(registry)?;
    for blob in blobs {
        let digest = crate::distribution::digest(&blob);
        client
            .push_blob(reference, blob, &digest)
            .await
            .map_err(registry)?;
    }
    client
        .push_manifest_raw(reference, manifest, artifact::content_type())
        .await
        .map_err(registry)?;
    Ok(())
}

/// One pull's requests, each through the pull's proxy and within its caps.
struct Pull<'a> {
    client: &'a Client,
    proxy: &'a Proxy,
    reference: &'a OciRef,
    auth: &'a RegistryAuth,
}

impl Pull<'_> {
    fn failed(&self, error: oci_client::errors::OciDistributionError) -> OciError {
        OciError::registry(error, Some(self.proxy))
    }

    /// Refuses the reference when its tag (if it names one) now names another manifest.
    async fn check_tag(&self) -> Result<(), OciError> {
        let Some(tag) = self.reference.oci().tag() else {
            return Ok(());
        };
        self.proxy.allow(MAX_MANIFEST_BYTES);
        let now = self
            .client
            .fetch_manifest_digest(&self.reference.tagged(tag), self.auth)
            .await
            .map_err(|e| self.failed(e))?;
        match now == self.reference.digest() {
            true => Ok(()),
            false => Err(OciError::TagMoved(tag.to_owned())),
        }
    }

    /// The raw manifest `reference` names, at most [`MAX_MANIFEST_BYTES`].
    async fn manifest(
        &self,
        reference: &oci_client::Reference,
        media_types: &[&str],
    ) -> Result<Vec<u8>, OciError> {
        self.proxy.allow(MAX_MANIFEST_BYTES);
        let (raw, _) = self
            .client
            .pull_manifest_raw(reference, self.auth, media_types)
            .await
            .map_err(|e| self.failed(e))?;
        match raw.len() <= MAX_MANIFEST_BYTES {
            true => Ok(raw.to_vec()),
            false => Err(OciError::TooLarge("manifest", MAX_MANIFEST_BYTES)),
        }
    }

    /// The blob `layer` describes, checked against its size and digest.
    async fn blob(&self, layer: &OciDescriptor, what: &'static str) -> Result<Vec<u8>, OciError> {
        let size = usize::try_from(layer.size).unwrap_or(usize::MAX);
        let buffer = Vec::with_capacity(size.min(MAX_MODULE_BYTES));
        self.pull_into(layer, what, buffer).await
    }

    /// The blob `layer` describes, written as it arrives into a temporary file in `dir` (so a
    /// large blob never sits in memory) and to disk, checked against its size and digest.
    async fn spooled(
        &self,
        layer: &OciDescriptor,
        what: &'static str,
        dir: &Path,
    ) -> Result<tempfile::NamedTempFile, OciError> {
        let spool = |e: std::io::Error| OciError::Spool(what, format!("{}: {e}", dir.display()));
        tokio::fs::create_dir_all(dir).await.map_err(spool)?;
        let temporary = tempfile::NamedTempFile::new_in(dir).map_err(spool)?;
        let file = temporary.as_file().try_clone().map_err(spool)?;
        let file = self
            .pull_into(layer, what, tokio::fs::File::from_std(file))
            .await?;
        let file = file.into_std().await;
        let written = tokio::task::spawn_blocking(move || crate::disk::written_back(&file));
        written
            .await
            .map_err(std::io::Error::other)
            .flatten()
            .map_err(spool)?;
        Ok(temporary)
    }

    /// Pulls the blob `layer` describes into `sink`, at most its declared size (and
    /// [`MAX_PRECOMPILED_BYTES`]); fails unless what arrived has its size and digest.
    async fn pull_into<W: AsyncWrite + Unpin>(
        &self,
        layer: &OciDescriptor,
        what: &'static str,
        sink: W,
    ) -> Result<W, OciError> {
        let size = usize::try_from(layer.size).unwrap_or(usize::MAX);
        self.proxy.allow(size);
        let mut out = Capped::new(sink, size);
        self.client
            .pull_blob(self.reference.oci(), layer, &mut out)
            .await
            .or_else(|e| match out.overflowed {
                true => Ok(()),
                false => Err(self.failed(e).about(what)),
            })?;
        if out.overflowed {
            return Err(OciError::TooLarge(what, size));
        }
        let spooled = |e: std::io::Error| OciError::Spool(what, e.to_string());
        out.inner.flush().await.map_err(spooled)?;
        let found = match crate::distribution::digest_of(out.hasher) {
            _ if out.written != size => format!("it is {} bytes, not {size}", out.written),
            found if found != layer.digest => format!("its bytes hash to {found}"),
            _ => return Ok(out.inner),
        };
        Err(OciError::digest(what, &layer.digest, found))
    }

    /// The cosign signatures of the pinned digest in its repository (none when it has none).
    async fn signatures(&self) -> Result<Vec<Signature>, OciError> {
        let tagged = self
            .reference
            .tagged(&signature::tag(self.reference.digest()));
        let raw = match self
            .manifest(&tagged, signature::MANIFEST_MEDIA_TYPES)
            .await
        {
            Err(OciError::NotFound) => return Ok(Vec::new()),
            raw => raw?,
        };
        let mut found = Vec::new();
        for (layer, signature) in signature::layers(&raw)? {
            let payload = self.blob(&layer, "signature payload").await?;
            found.push(Signature::of(&payload, signature));
        }
        Ok(found)
    }
}

/// Makes ring rustls's process-wide provider (the one the host's other TLS uses), once.
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let ring = tokio_rustls::rustls::crypto::ring::default_provider();
        let _ = ring.install_default();
    });
}

/// A writer that passes at most `limit` bytes on to `inner`, hashing them as they go, and fails
/// the write that would pass the limit.
struct Capped<W> {
    inner: W,
    hasher: Sha256,
    written: usize,
    limit: usize,
    overflowed: bool,
}

impl<W> Capped<W> {
    fn new(inner: W, limit: usize) -> Self {
        Capped {
            inner,
            hasher: Sha256::new(),
            written: 0,
            limit: limit.min(MAX_PRECOMPILED_BYTES),
            overflowed: false,
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Capped<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.written + buf.len() > this.limit {
            this.overflowed = true;
            let message = format!("the blob is longer than its {} bytes", this.limit);
            return Poll::Ready(Err(std::io::Error::other(message)));
        }
        let written = std::task::ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        this.hasher.update(&buf[..written]);
        this.written += written;
        Poll::Ready(Ok(written))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn reference(registry: &str) -> OciRef {
        let digest = crate::distribution::digest(b"manifest");
        OciRef::parse(&format!("{registry}/webapp@{digest}")).unwrap()
    }

    #[tokio::test]
    async fn a_tenants_pull_reaches_no_address_the_policy_refuses() {
        let registries = Registries::default();
        let anonymous = RegistryAuth::Anonymous;
        for registry in ["127.0.0.1:5000", "169.254.169.254", "localhost:5000"] {
            let pulled = registries
                .pull(
                    &reference(registry),
                    &anonymous,
                    Some(&Ceiling::default()),
                    SignatureCheck::No,
                )
                .await;
            let error = pulled.unwrap_err();
            assert!(matches!(error, OciError::Refused(_)), "{registry}: {error}");
            assert!(
                error.to_string().contains("modules.private-addresses"),
                "{error}"
            );
        }
    }

    /// A server that answers every request with an endless body.
    async fn endless() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let _ = stream.read(&mut [0u8; 4096]).await;
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/vnd.oci.image.manifest.v1+json\r\n\r\n";
                    let _ = stream.write_all(head.as_bytes()).await;
                    let chunk = vec![b' '; 64 << 10];
                    while stream.write_all(&chunk).await.is_ok() {}
                });
            }
        });
        address
    }

    #[tokio::test]
    async fn an_endless_manifest_is_cut_off_at_its_cap() {
        let registry = endless().await;
        let registries = Registries {
            plain_http: vec![registry.clone()],
            ..Registries::default()
        };
        let policy = Ceiling {
            modules: wasmop_contract::ModuleSources {
                namespaces: None,
                private_addresses: true,
            },
            ..Ceiling::default()
        };
        let pulled = registries
            .pull(
                &reference(&registry),
                &RegistryAuth::Anonymous,
                Some(&policy),
                SignatureCheck::No,
            )
            .await;
        let error = pulled.unwrap_err();
        assert!(error.to_string().contains("sent more than"), "{error}");
    }

    #[tokio::test]
    async fn a_plain_http_registry_reached_over_https_names_the_setting_that_reaches_it() {
        let registry = endless().await;
        let module = b"\0asm\x0d\0\x01\0".to_vec();
        let tagged: oci_client::Reference = format!("{registry}/team/webapp:1").parse().unwrap();
        let https = Registries::default();
        let error = https
            .push(&tagged, module.clone(), None, &RegistryAuth::Anonymous)
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("the registry {}", error::NOT_CONNECTED_OVER_HTTPS),
        );
        let key = p256::ecdsa::SigningKey::from_slice(&[7; 32]).unwrap();
        let pinned = OciRef::parse(&format!("{registry}/team/webapp@sha256:{}", "0".repeat(64)));
        let error = https
            .sign(&pinned.unwrap(), &key, &RegistryAuth::Anonymous)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("--registry-plain-http"),
            "{error}"
        );

        let named = Registries {
            plain_http: vec![registry.clone()],
            ..Registries::default()
        };
        let error = named
            .push(&tagged, module, None, &RegistryAuth::Anonymous)
            .await
            .unwrap_err();
        assert!(!error.to_string().contains("HTTPS"), "{error}");
    }
}
