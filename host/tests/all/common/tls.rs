//! Talking to a secure `wasmop` listener: a serving certificate from a fresh CA, a client that
//! trusts only that CA, and `GET`s over HTTPS with a bearer token.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

/// Writes `tls.crt` and `tls.key` for `localhost` and `127.0.0.1` into `dir`, signed by a fresh
/// CA; returns the CA's certificate.
pub fn write_certificates(dir: &Path) -> anyhow::Result<CertificateDer<'static>> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = KeyPair::generate()?;
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let cert = CertificateParams::new(names)?.signed_by(&key, &issuer)?;
    std::fs::write(dir.join("tls.crt"), cert.pem())?;
    std::fs::write(dir.join("tls.key"), key.serialize_pem())?;
    Ok(ca_cert.der().clone())
}

/// A TLS client trusting only `ca`.
pub fn connector(ca: CertificateDer<'static>) -> anyhow::Result<TlsConnector> {
    let mut roots = RootCertStore::empty();
    roots.add(ca)?;
    let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

/// What a secure listener answered.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Its `Retry-After`, in seconds, if it sent one.
    pub retry_after: Option<u64>,
    /// The body.
    pub body: String,
}

/// `GET path` over HTTPS at `address`, with `token` as a bearer token.
pub async fn request(
    connector: &TlsConnector,
    address: &str,
    path: &str,
    token: Option<&str>,
) -> anyhow::Result<Reply> {
    let address: SocketAddr = address.parse()?;
    let stream = tokio::net::TcpStream::connect(address).await?;
    let name = ServerName::from(address.ip());
    let stream = connector.connect(name, stream).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let mut request = http::Request::get(path).header(http::header::HOST, address.to_string());
    if let Some(token) = token {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let response = sender
        .send_request(request.body(http_body_util::Empty::<Bytes>::new())?)
        .await?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok()?.parse().ok());
    let body = response.into_body().collect().await?.to_bytes();
    let body = String::from_utf8_lossy(&body).into_owned();
    Ok(Reply {
        status,
        retry_after,
        body,
    })
}

/// `GET path` over HTTPS at `address`, with `token` as a bearer token: the status and body.
pub async fn get_tls(
    connector: &TlsConnector,
    address: &str,
    path: &str,
    token: Option<&str>,
) -> anyhow::Result<(u16, String)> {
    let reply = request(connector, address, path, token).await?;
    Ok((reply.status, reply.body))
}
