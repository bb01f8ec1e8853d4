//! A real OCI registry: CNCF Distribution's `registry`, for tests that push and pull Wasm OCI
//! artifacts, and the node's image registry.
//!
//! [`Registry::start`] builds (once per machine, `tests/k8s/build.sh --registry`) or reuses the
//! pinned `registry`, writes its configuration into a directory of its own and serves on a free
//! loopback port; it returns once `GET /v2/` answers. A node runs one more, anonymous, at
//! [`REGISTRY_ADDRESS`] on its bridge, where both its containerd and its pods reach it. [`RegistryAuth::Anonymous`] serves plain
//! HTTP to anyone; [`RegistryAuth::Htpasswd`] serves TLS with a freshly generated CA (for clients
//! to trust, see [`Registry::ca_file`]) and asks for the one user's password (HTTP basic auth,
//! checked against a bcrypt htpasswd file); [`RegistryAuth::Token`] serves TLS the same way but
//! takes only bearer tokens, which its token service ([`crate::token`]) grants the one user. Dropping it stops the registry and removes its
//! storage, as for every server of this crate.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use crate::certs;
use crate::network::REGISTRY_ADDRESS;
use crate::ports::free_ports;
use crate::supervisor::Supervised;
use crate::token::{self, TokenService};
use crate::{Binaries, Error};

const READY_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(25);
const START_ATTEMPTS: u32 = 3;
/// The htpasswd realm, which clients see in `WWW-Authenticate`.
const REALM: &str = "wasmop-envtest";
/// bcrypt's lowest cost: the registry checks the password on every request, and the hash only
/// ever guards a test's throwaway password.
const BCRYPT_COST: u32 = 4;
/// The registry would otherwise export traces to an OTLP collector on localhost.
const ENV: [(&str, &str); 1] = [("OTEL_TRACES_EXPORTER", "none")];

/// Who may use a [`Registry`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryAuth {
    /// Anyone, over plain HTTP.
    Anonymous,
    /// Only `user` with `password` (HTTP basic auth), over TLS with a fresh CA.
    Htpasswd {
        /// The one user name (without `:`).
        user: String,
        /// Its password (at most 72 bytes, bcrypt's limit).
        password: String,
    },
    /// Only bearer tokens from its token service, which grants them to `user` with `password`
    /// (HTTP basic auth to the service), over TLS with a fresh CA.
    Token {
        /// The one user name.
        user: String,
        /// Its password.
        password: String,
    },
}

/// A running CNCF Distribution registry on loopback; dropping it stops it and removes its files.
#[derive(Debug)]
pub struct Registry {
    address: String,
    ca_pem: Option<String>,
    ca_file: Option<PathBuf>,
    credentials: Option<(String, String)>,
    token: Option<TokenService>,
    process: Supervised,
}

impl Registry {
    /// Starts a registry (building it first if this machine has none) and returns once `GET /v2/`
    /// answers: 200 when anonymous, 401 with htpasswd.
    pub async fn start(auth: RegistryAuth) -> Result<Self, Error> {
        let binaries = Binaries::locate_registry().await?;
        let mut attempt = 1;
        loop {
            let [port] = free_ports()?;
            let address = format!("127.0.0.1:{port}");
            match Self::start_with(&binaries, &auth, address).await {
                Err(e) if e.is_port_clash() && attempt < START_ATTEMPTS => attempt += 1,
                result => return result,
            }
        }
    }

    /// Starts the node's registry: anonymous, plain HTTP, at [`REGISTRY_ADDRESS`] on the node's
    /// bridge (which must exist), with `binaries` holding the `registry`.
    pub(crate) async fn start_on_node(binaries: &Binaries) -> Result<Self, Error> {
        Self::start_with(
            binaries,
            &RegistryAuth::Anonymous,
            REGISTRY_ADDRESS.to_owned(),
        )
        .await
    }

    async fn start_with(
        binaries: &Binaries,
        auth: &RegistryAuth,
        address: String,
    ) -> Result<Self, Error> {
        let started = Instant::now();
        // Removed on an early error; once the registry runs, its supervisor removes it.
        let temp = tempfile::Builder::new()
            .prefix("wasmop-registry-")
            .tempdir()
            .map_err(Error::io("creating the registry's directory"))?;
        let dir = temp.path().to_owned();
        let mut config = Config {
            root: dir.join("storage"),
            address: address.clone(),
            secret: certs::random_hex(16)?,
            tls: None,
            htpasswd: None,
            token: None,
        };
        let (mut ca_pem, mut ca_file, mut credentials, mut token) = (None, None, None, None);
        if let RegistryAuth::Htpasswd { user, password } | RegistryAuth::Token { user, password } =
            auth
        {
            let serving = certs::serving(
                "wasmop-envtest-registry",
                vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
            )?;
            let (cert, key, ca) = (
                dir.join("registry.crt"),
                dir.join("registry.key"),
                dir.join("ca.crt"),
            );
            certs::write(&cert, &serving.cert_pem)?;
            certs::write(&key, &serving.key_pem)?;
            certs::write(&ca, &serving.ca_pem)?;
            config.tls = Some((cert, key));
            if matches!(auth, RegistryAuth::Token { .. }) {
                let service = TokenService::start(user, password)?;
                let bundle = dir.join("token.crt");
                certs::write(&bundle, service.certificate_pem())?;
                config.token = Some((service.realm(), bundle));
                token = Some(service);
            } else {
                let htpasswd = dir.join("htpasswd");
                certs::write(&htpasswd, &htpasswd_line(user, password)?)?;
                config.htpasswd = Some(htpasswd);
            }
            ca_pem = Some(serving.ca_pem);
            ca_file = Some(ca);
            credentials = Some((user.clone(), password.clone()));
        }
        let config_file = dir.join("config.yml");
        certs::write(&config_file, &config.yaml())?;
        let args = ["serve".to_owned(), config_file.display().to_string()];
        let process = Supervised::spawn(
            "registry",
            &binaries.registry(),
            &args,
            &ENV,
            &dir,
            dir.join("registry.log"),
        )?;
        let _ = temp.keep();
        let registry = Registry {
            address,
            ca_pem,
            ca_file,
            credentials,
            token,
            process,
        };
        registry.wait_ready().await?;
        eprintln!(
            "[registry] ready in {:.2} s on {}://{}",
            started.elapsed().as_secs_f64(),
            if registry.is_tls() { "https" } else { "http" },
            registry.address
        );
        Ok(registry)
    }

    async fn wait_ready(&self) -> Result<(), Error> {
        let expected = if self.credentials.is_some() { 401 } else { 200 };
        let connector = self.ca_pem.as_deref().map(tls_connector).transpose()?;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if !self.process.running() {
                return Err(self.process.exited_error());
            }
            let last = match v2_status(&self.address, connector.as_ref()).await {
                Ok(status) if status == expected => return Ok(()),
                Ok(status) => format!("GET /v2/ answered {status}, not {expected}"),
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                return Err(Error::Io {
                    context: format!("waiting for the registry at {}", self.address),
                    source: std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "not ready after {} s (last: {last}); last lines of its log:\n{}",
                            READY_TIMEOUT.as_secs(),
                            self.log_tail(30)
                        ),
                    ),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `127.0.0.1:<port>` (or the node's [`REGISTRY_ADDRESS`]), the host part of an OCI
    /// reference (`127.0.0.1:<port>/name:tag`).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Whether it serves TLS (with [`RegistryAuth::Htpasswd`]) rather than plain HTTP.
    pub fn is_tls(&self) -> bool {
        self.ca_pem.is_some()
    }

    /// The PEM of the CA that signed its serving certificate, when it serves TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// A file holding [`Registry::ca_pem`], for clients to trust, when it serves TLS.
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca_file.as_deref()
    }

    /// The user name and password it accepts, with [`RegistryAuth::Htpasswd`].
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.credentials
            .as_ref()
            .map(|(user, password)| (user.as_str(), password.as_str()))
    }

    /// The `.dockerconfigjson` of a `kubernetes.io/dockerconfigjson` Secret that logs in to it,
    /// with [`RegistryAuth::Htpasswd`].
    pub fn dockerconfigjson(&self) -> Option<String> {
        let (user, password) = self.credentials()?;
        Some(docker_config_json(&self.address, user, password))
    }

    /// A bearer token its token service grants for `actions` on `repository`, with
    /// [`RegistryAuth::Token`] (what a `.dockerconfigjson`'s `registrytoken` holds).
    pub fn bearer_token(&self, repository: &str, actions: &[&str]) -> Option<String> {
        self.token.as_ref()?.token(repository, actions).ok()
    }

    /// The last `lines` lines of its log (access log and errors).
    pub fn log_tail(&self, lines: usize) -> String {
        self.process.log_tail(lines)
    }

    /// Stops it and removes its storage and files (dropping it does the same).
    pub fn stop(&mut self) {
        self.process.stop();
    }
}

/// What goes into the registry's configuration file.
struct Config {
    root: PathBuf,
    address: String,
    secret: String,
    /// The serving certificate and key.
    tls: Option<(PathBuf, PathBuf)>,
    htpasswd: Option<PathBuf>,
    /// The token service's realm and the bundle of the certificate that signs its tokens.
    token: Option<(String, PathBuf)>,
}

impl Config {
    /// The configuration as Distribution reads it (every string double-quoted, JSON-escaped).
    fn yaml(&self) -> String {
        let quote = |text: &str| serde_json::Value::from(text).to_string();
        let path = |path: &Path| quote(&path.display().to_string());
        let mut yaml = format!(
            "version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: {address}
  secret: {secret}
",
            root = path(&self.root),
            address = quote(&self.address),
            secret = quote(&self.secret),
        );
        if let Some((cert, key)) = &self.tls {
            yaml.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                path(cert),
                path(key)
            ));
        }
        if let Some((realm, bundle)) = &self.token {
            yaml.push_str(&format!(
                "auth:\n  token:\n    realm: {}\n    service: {}\n    issuer: {}\n    rootcertbundle: {}\n",
                quote(realm),
                quote(token::SERVICE),
                quote(token::ISSUER),
                path(bundle)
            ));
        }
        if let Some(htpasswd) = &self.htpasswd {
            yaml.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: {}\n    path: {}\n",
                quote(REALM),
                path(htpasswd)
            ));
        }
        yaml
    }
}

/// `user:<bcrypt hash of password>`, a line of an htpasswd file.
fn htpasswd_line(user: &str, password: &str) -> Result<String, Error> {
    let invalid = |reason: String| Error::Io {
        context: "writing the registry's htpasswd file".to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, reason),
    };
    if user.is_empty() || user.contains([':', '\n']) {
        return Err(invalid(format!("{user:?} is not a user name")));
    }
    let hash = bcrypt::non_truncating_hash_with_result(password, BCRYPT_COST)
        .map_err(|e| invalid(e.to_string()))?;
    Ok(format!(
        "{user}:{}\n",
        hash.format_for_version(bcrypt::Version::TwoY)
    ))
}

/// A `~/.docker/config.json` that logs in to `address` as `user`.
fn docker_config_json(address: &str, user: &str, password: &str) -> String {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    serde_json::json!({
        "auths": {address: {"username": user, "password": password, "auth": auth}}
    })
    .to_string()
}

/// A TLS client that trusts only the CA in `ca_pem`.
fn tls_connector(ca_pem: &str) -> Result<TlsConnector, Error> {
    let tls_error = |e: &dyn std::fmt::Display| Error::Io {
        context: "configuring TLS to the registry".to_owned(),
        source: std::io::Error::other(e.to_string()),
    };
    let mut roots = RootCertStore::empty();
    let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(|e| tls_error(&e))?;
    roots.add(ca).map_err(|e| tls_error(&e))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

/// The status code `GET /v2/` answers at `address` (plain HTTP, or TLS through `tls`).
async fn v2_status(address: &str, tls: Option<&TlsConnector>) -> std::io::Result<u16> {
    let tcp = TcpStream::connect(address).await?;
    match tls {
        None => status_line(tcp, address).await,
        Some(connector) => {
            let name = ServerName::IpAddress(Ipv4Addr::LOCALHOST.into());
            status_line(connector.connect(name, tcp).await?, address).await
        }
    }
}

async fn status_line(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    address: &str,
) -> std::io::Result<u16> {
    let request = format!("GET /v2/ HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).await?;
    line.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {line:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_holds_tls_and_htpasswd_only_when_asked() {
        let mut config = Config {
            root: PathBuf::from("/tmp/r/storage"),
            address: "127.0.0.1:5000".to_owned(),
            secret: "s3cret".to_owned(),
            tls: None,
            htpasswd: None,
            token: None,
        };
        let plain: serde_json::Value = serde_saphyr::from_str(&config.yaml()).unwrap();
        assert_eq!(plain["version"], serde_json::json!(0.1));
        assert_eq!(
            plain["storage"]["filesystem"]["rootdirectory"],
            "/tmp/r/storage"
        );
        assert_eq!(plain["storage"]["delete"]["enabled"], true);
        assert_eq!(plain["http"]["addr"], "127.0.0.1:5000");
        assert!(plain["http"].get("tls").is_none() && plain.get("auth").is_none());

        config.tls = Some(("/tmp/r/c.crt".into(), "/tmp/r/c.key".into()));
        config.htpasswd = Some("/tmp/r/htpasswd".into());
        let secured: serde_json::Value = serde_saphyr::from_str(&config.yaml()).unwrap();
        assert_eq!(secured["http"]["tls"]["certificate"], "/tmp/r/c.crt");
        assert_eq!(secured["http"]["tls"]["key"], "/tmp/r/c.key");
        assert_eq!(secured["auth"]["htpasswd"]["path"], "/tmp/r/htpasswd");
        assert_eq!(secured["auth"]["htpasswd"]["realm"], REALM);

        config.htpasswd = None;
        config.token = Some(("http://127.0.0.1:1/token".into(), "/tmp/r/token.crt".into()));
        let token: serde_json::Value = serde_saphyr::from_str(&config.yaml()).unwrap();
        assert_eq!(token["auth"]["token"]["realm"], "http://127.0.0.1:1/token");
        assert_eq!(token["auth"]["token"]["service"], token::SERVICE);
        assert_eq!(token["auth"]["token"]["issuer"], token::ISSUER);
        assert_eq!(token["auth"]["token"]["rootcertbundle"], "/tmp/r/token.crt");
        assert!(token["auth"].get("htpasswd").is_none());
    }

    #[test]
    fn the_htpasswd_line_holds_a_bcrypt_hash_of_the_password() {
        let line = htpasswd_line("alice", "wonderland").unwrap();
        let (user, hash) = line.trim_end().split_once(':').unwrap();
        assert_eq!(user, "alice");
        assert!(hash.starts_with("$2y$04$"), "{hash}");
        assert!(bcrypt::verify("wonderland", hash).unwrap());
        assert!(!bcrypt::verify("looking-glass", hash).unwrap());
        assert!(htpasswd_line("a:b", "x").is_err());
    }

    #[test]
    fn the_docker_config_logs_in_with_basic_auth() {
        let json: serde_json::Value =
            serde_json::from_str(&docker_config_json("127.0.0.1:5000", "alice", "pw")).unwrap();
        let entry = &json["auths"]["127.0.0.1:5000"];
        assert_eq!(entry["username"], "alice");
        assert_eq!(entry["password"], "pw");
        assert_eq!(entry["auth"], "YWxpY2U6cHc=");
    }
}
