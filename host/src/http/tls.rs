//! The secure metrics listener's TLS (rustls, ring): the certificate in a directory's `tls.crt`
//! and `tls.key`, as cert-manager mounts a Secret, or a self-signed one generated at start.
//!
//! A certificate from a directory is re-read every [`RELOAD_INTERVAL`] and swapped in when the
//! files changed, so a renewal reaches new connections without a restart; a directory that no
//! longer holds a valid pair is reported and the current certificate kept. A self-signed one is
//! valid for [`SELF_SIGNED_VALIDITY`] and replaced after two thirds of it: the new certificate
//! joins the CA bundle first and is served [`ROTATION_OVERLAP`] later, so a client that reads the
//! bundle (the apiserver, through the webhook configurations) never meets a certificate it
//! does not trust yet.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::crypto::{CryptoProvider, ring};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, ServerConfig};

/// The certificate chain's file in a certificate directory.
pub const CERT_FILE: &str = "tls.crt";

/// The private key's file in a certificate directory.
pub const KEY_FILE: &str = "tls.key";

/// How often a certificate directory is read again.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(10);

/// How long a self-signed certificate is valid; a new one replaces it after two thirds of that.
pub const SELF_SIGNED_VALIDITY: Duration = Duration::from_secs(90 * 24 * 3600);

/// How long a rotated self-signed certificate is trusted beside the old one (in
/// [`Tls::ca_bundle`]) before it is served, so clients learn it first.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(60);

/// The CA's certificate in a certificate directory, as cert-manager writes it beside the pair.
pub const CA_FILE: &str = "ca.crt";

/// How a secure listener serves HTTPS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecureServing {
    /// A directory with `tls.crt` and `tls.key`; a self-signed certificate when `None`.
    pub cert_dir: Option<PathBuf>,
    /// DNS names a self-signed certificate names besides localhost, the loopback addresses and
    /// the hostname (a Service's, for the apiserver to call).
    pub names: Vec<String>,
}

/// The serving certificate could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file of the certificate directory could not be read.
    #[error("cannot read {file}: {source}")]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file holds no usable PEM.
    #[error("{file}: {message}")]
    Pem {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The key does not fit the certificate, or rustls does not support it.
    #[error("the key in {dir} does not serve its certificate: {source}")]
    Key {
        /// The certificate directory.
        dir: PathBuf,
        /// Why.
        source: rustls::Error,
    },
    /// The self-signed certificate could not be generated.
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the server configuration.
    #[error("configuring TLS: {0}")]
    Config(#[source] rustls::Error),
}

/// The TLS side of a secure listener: an acceptor whose certificate may be swapped while it runs.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    resolver: Arc<Resolver>,
    provider: Arc<CryptoProvider>,
    dir: Option<PathBuf>,
    /// The bytes of `tls.crt` and `tls.key` last loaded from `dir`.
    loaded: Arc<Mutex<(Vec<u8>, Vec<u8>)>>,
    /// The PEM a client trusts the served certificate with, published on every change.
    ca: Arc<watch::Sender<Vec<u8>>>,
    /// How a self-signed certificate is renewed; `None` for a directory's.
    rotation: Option<Arc<Rotation>>,
}

/// The renewal of a self-signed certificate: the names it is made for, how long each is valid,
/// how long a new one is trusted before it is served, and the PEM served now.
struct Rotation {
    names: Vec<String>,
    validity: Duration,
    overlap: Duration,
    current: Mutex<Vec<u8>>,
}

impl Tls {
    /// TLS serving the certificate `serving` names, or a fresh self-signed one renewed every
    /// two thirds of [`SELF_SIGNED_VALIDITY`].
    pub async fn load(serving: &SecureServing) -> Result<Tls, TlsError> {
        Tls::rotating(serving, SELF_SIGNED_VALIDITY, ROTATION_OVERLAP).await
    }

    /// [`Tls::load`], a self-signed certificate being valid for `validity` and a new one trusted
    /// for `overlap` before it is served.
    pub async fn rotating(
        serving: &SecureServing,
        validity: Duration,
        overlap: Duration,
    ) -> Result<Tls, TlsError> {
        let provider = Arc::new(ring::default_provider());
        let (key, files, ca, rotation) = match &serving.cert_dir {
            Some(dir) => {
                let files = read(dir).await?;
                let ca = authority(dir, &files.0).await;
                (certified(dir, &files, &provider)?, files, ca, None)
            }
            None => {
                let (key, pem) = self_signed(&provider, &serving.names, validity)?;
                let rotation = Rotation {
                    names: serving.names.clone(),
                    validity,
                    overlap,
                    current: Mutex::new(pem.clone()),
                };
                (key, Default::default(), pem, Some(Arc::new(rotation)))
            }
        };
        let resolver = Arc::new(Resolver(RwLock::new(Arc::new(key))));
        let mut config = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_no_client_auth()
            .with_cert_resolver(resolver.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tls = Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            resolver,
            provider,
            dir: serving.cert_dir.clone(),
            loaded: Arc::new(Mutex::new(files)),
            ca: Arc::new(watch::Sender::new(ca)),
            rotation,
        };
        let fingerprint = tls.fingerprint();
        match &tls.dir {
            Some(dir) => {
                tracing::info!(dir = %dir.display(), %fingerprint, "serving the certificate of a directory")
            }
            None => tracing::info!(
                %fingerprint,
                "serving a self-signed certificate generated at start"
            ),
        }
        Ok(tls)
    }

    /// The PEM that makes a client trust the certificate served now: the directory's `ca.crt`
    /// when it has one, else its `tls.crt`; the self-signed certificate itself.
    pub fn ca_bundle(&self) -> Vec<u8> {
        self.ca.borrow().clone()
    }

    /// The CA bundle, marked changed whenever a reload changes it.
    pub fn ca_changes(&self) -> watch::Receiver<Vec<u8>> {
        self.ca.subscribe()
    }

    /// The acceptor for new connections.
    pub(super) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// The leaf certificate served now.
    pub fn certificate(&self) -> CertificateDer<'static> {
        let current = self.resolver.0.read().expect("certificate lock poisoned");
        current.cert[0].clone()
    }

    /// The SHA-256 of the leaf certificate served now, in hex.
    pub fn fingerprint(&self) -> String {
        Sha256::digest(self.certificate())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// Reads the certificate directory again and serves its pair if it changed; whether it did.
    pub async fn reload(&self) -> Result<bool, TlsError> {
        let Some(dir) = &self.dir else {
            return Ok(false);
        };
        let files = read(dir).await?;
        if *self.loaded.lock().expect("loaded files lock poisoned") == files {
            return Ok(false);
        }
        let key = certified(dir, &files, &self.provider)?;
        let ca = authority(dir, &files.0).await;
        *self.resolver.0.write().expect("certificate lock poisoned") = Arc::new(key);
        *self.loaded.lock().expect("loaded files lock poisoned") = files;
        self.ca.send_if_modified(|now| {
            let changed = *now != ca;
            *now = ca;
            changed
        });
        Ok(true)
    }

    /// Replaces a self-signed certificate with a new one: trusted beside the old one at once,
    /// served after the overlap. Does nothing for a directory's certificate.
    pub async fn rotate(&self) -> Result<(), TlsError> {
        let Some(rotation) = &self.rotation else {
            return Ok(());
        };
        let (key, pem) = self_signed(&self.provider, &rotation.names, rotation.validity)?;
        let old = rotation.current.lock().expect("PEM lock poisoned").clone();
        self.ca.send_replace([old, pem.clone()].concat());
        tokio::time::sleep(rotation.overlap).await;
        *self.resolver.0.write().expect("certificate lock poisoned") = Arc::new(key);
        *rotation.current.lock().expect("PEM lock poisoned") = pem;
        tracing::info!(fingerprint = %self.fingerprint(), "self-signed certificate rotated");
        Ok(())
    }

    /// Keeps the certificate current, forever: a directory's is read again every
    /// [`RELOAD_INTERVAL`], a self-signed one rotated after two thirds of its validity.
    pub(super) async fn watch(&self) {
        if let Some(rotation) = &self.rotation {
            loop {
                tokio::time::sleep(rotation.validity * 2 / 3).await;
                if let Err(error) = self.rotate().await {
                    tracing::warn!("keeping the current self-signed certificate: {error}");
                }
            }
        }
        loop {
            tokio::time::sleep(RELOAD_INTERVAL).await;
            match self.reload().await {
                Ok(true) => {
                    tracing::info!(fingerprint = %self.fingerprint(), "certificate reloaded")
                }
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!("keeping the current certificate: {error}")
                }
            }
        }
    }
}

/// Hands every handshake the current certificate.
#[derive(Debug)]
struct Resolver(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().expect("certificate lock poisoned").clone())
    }
}

/// The bytes of `dir`'s `tls.crt` and `tls.key`.
async fn read(dir: &Path) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    let read = |name| async move {
        let file = dir.join(name);
        tokio::fs::read(&file)
            .await
            .map_err(|source| TlsError::Read { file, source })
    };
    Ok((read(CERT_FILE).await?, read(KEY_FILE).await?))
}

/// The pair in `files` (PEM of `tls.crt`, `tls.key`), checked to belong together.
fn certified(
    dir: &Path,
    (cert, key): &(Vec<u8>, Vec<u8>),
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let pem = |name: &str, message: String| TlsError::Pem {
        file: dir.join(name),
        message,
    };
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(CERT_FILE, e.to_string()))?;
    if chain.is_empty() {
        return Err(pem(CERT_FILE, "no CERTIFICATE block".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| pem(KEY_FILE, e.to_string()))?;
    CertifiedKey::from_der(chain, key, provider).map_err(|source| TlsError::Key {
        dir: dir.to_owned(),
        source,
    })
}

/// What a client of `dir`'s certificate trusts: its `ca.crt` if readable, else `cert` itself.
async fn authority(dir: &Path, cert: &[u8]) -> Vec<u8> {
    match tokio::fs::read(dir.join(CA_FILE)).await {
        Ok(ca) if !ca.is_empty() => ca,
        _ => cert.to_vec(),
    }
}

/// A self-signed certificate for `localhost`, the loopback addresses, the pod's hostname and
/// `extra` names, valid from an hour ago (for skewed clocks) for `validity`, with its PEM.
fn self_signed(
    provider: &CryptoProvider,
    extra: &[String],
    validity: Duration,
) -> Result<(CertifiedKey, Vec<u8>), TlsError> {
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".into(), "::1".into()];
    let hostname = std::env::var("HOSTNAME").unwrap_or_default();
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
    if !hostname.is_empty() && hostname.chars().all(valid) {
        names.push(hostname);
    }
    names.extend(extra.iter().cloned());
    let mut params = rcgen::CertificateParams::new(names)?;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::HOUR;
    params.not_after = now + validity;
    let signing_key = rcgen::KeyPair::generate()?;
    let cert = params.self_signed(&signing_key)?;
    let key = PrivateKeyDer::Pkcs8(signing_key.serialize_der().into());
    let certified = CertifiedKey::from_der(vec![cert.der().clone()], key, provider)
        .map_err(TlsError::Config)?;
    Ok((certified, cert.pem().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a fresh self-signed pair into `dir`; returns the certificate.
    fn write_pair(dir: &Path) -> CertificateDer<'static> {
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(dir.join(CERT_FILE), generated.cert.pem()).unwrap();
        std::fs::write(dir.join(KEY_FILE), generated.signing_key.serialize_pem()).unwrap();
        generated.cert.der().clone()
    }

    #[tokio::test]
    async fn a_directory_pair_is_served_and_reloaded_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_pair(dir.path());
        let serving = SecureServing {
            cert_dir: Some(dir.path().to_owned()),
            ..SecureServing::default()
        };
        let tls = Tls::load(&serving).await.unwrap();
        assert_eq!(tls.certificate(), first);
        assert!(
            !tls.reload().await.unwrap(),
            "unchanged files are not reloaded"
        );

        assert_eq!(
            CertificateDer::from_pem_slice(&tls.ca_bundle()).unwrap(),
            first,
            "without ca.crt the certificate is trusted as it is"
        );

        let second = write_pair(dir.path());
        std::fs::write(dir.path().join(CA_FILE), "the CA's PEM").unwrap();
        assert!(tls.reload().await.unwrap());
        assert_eq!(tls.certificate(), second);
        assert_eq!(tls.ca_bundle(), b"the CA's PEM", "ca.crt is the bundle");

        std::fs::write(dir.path().join(KEY_FILE), "not a key").unwrap();
        let error = tls.reload().await.unwrap_err().to_string();
        assert!(error.contains(KEY_FILE), "{error}");
        assert_eq!(
            tls.certificate(),
            second,
            "a bad pair keeps the current one"
        );
    }

    #[tokio::test]
    async fn a_missing_or_mismatched_pair_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let serving = SecureServing {
            cert_dir: Some(dir.path().to_owned()),
            ..SecureServing::default()
        };
        let error = Tls::load(&serving).await.err().unwrap().to_string();
        assert!(error.contains(CERT_FILE), "{error}");

        write_pair(dir.path());
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(dir.path().join(KEY_FILE), other.serialize_pem()).unwrap();
        let error = Tls::load(&serving).await.err().unwrap().to_string();
        assert!(error.contains("does not serve its certificate"), "{error}");
    }

    #[tokio::test]
    async fn a_self_signed_certificate_is_trusted_before_it_is_served_when_rotated() {
        let serving = SecureServing::default();
        let overlap = Duration::from_millis(300);
        let tls = Tls::rotating(&serving, Duration::from_secs(3600), overlap)
            .await
            .unwrap();
        let first = tls.certificate();
        let mut bundles = tls.ca_changes();
        let rotating = tokio::spawn({
            let tls = tls.clone();
            async move { tls.rotate().await }
        });
        bundles.changed().await.unwrap();
        let during: Vec<_> = CertificateDer::pem_slice_iter(&bundles.borrow_and_update())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            during.len(),
            2,
            "the old and the new certificate are trusted"
        );
        assert_eq!(during[0], first);
        assert_eq!(
            tls.certificate(),
            first,
            "the old one is served during the overlap"
        );
        rotating.await.unwrap().unwrap();
        assert_eq!(tls.certificate(), during[1], "then the new one is served");
        assert_ne!(during[1], first);
    }

    #[tokio::test]
    async fn without_a_directory_a_self_signed_certificate_is_made() {
        let serving = SecureServing {
            names: vec!["wasmop-webhooks.operators.svc".into()],
            ..SecureServing::default()
        };
        let tls = Tls::load(&serving).await.unwrap();
        assert_eq!(tls.fingerprint().len(), 64);
        assert!(!tls.reload().await.unwrap());
        let ca = tls.ca_bundle();
        let trusted = CertificateDer::from_pem_slice(&ca).unwrap();
        assert_eq!(
            trusted,
            tls.certificate(),
            "a self-signed certificate is its own CA"
        );
        let name = b"wasmop-webhooks.operators.svc";
        assert!(
            trusted.windows(name.len()).any(|w| w == name),
            "the extra name is among the certificate's DNS names"
        );
    }
}
