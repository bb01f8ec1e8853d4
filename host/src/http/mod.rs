//! The host's HTTP endpoints, on hyper: `/metrics` in Prometheus text format, `/healthz` (the
//! process answers), `/readyz` (the host runs and every plugin it waits for runs, its informers
//! synced, or is loaded on a replica that does not lead; the body says what it waits for) and
//! `/plugins` (every plugin source's status as JSON, for `wasmop plugins`).
//!
//! Without `--metrics-secure` every listener serves every route, so the metrics and probe
//! addresses may differ or coincide; with metrics off the probe listener serves every route but
//! `/metrics` ([`Access::Unmetered`]), so `/metrics` is served nowhere. With it ([`Access::Secure`]) the metrics listener speaks
//! HTTPS ([`tls`]) and answers `/metrics` and `/plugins` only to callers the apiserver
//! authenticates and authorizes ([`auth`]), while `/healthz` and `/readyz` stay open there
//! (kubelet probes carry no token); a separate probe listener then serves the probes alone
//! ([`Access::Probes`]). Every listener bounds its connections ([`ConnectionLimits`]): a
//! header-read timeout (the TLS handshake's too) and a cap on connections served at once, beyond
//! which new ones wait to be accepted. Connections belong to their listener's task and close
//! with it.
//!
//! Imports: `metrics` and `rate`; never `plugins` (the `/plugins` report comes in as a
//! [`PluginReport`]) or `runtime`.

pub mod auth;
mod serve;
pub mod tls;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::CONTENT_TYPE;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::metrics::Metrics;

pub use auth::{AuthError, Authorizer, Decision};
pub use serve::{Access, ConnectionLimits, Handler, Responding, listen, serve};
pub use tls::{SecureServing, Tls, TlsError};

/// The Prometheus text exposition format's content type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Which plugin sources `/readyz` waits for: the host is ready once each of them runs (or, on a
/// replica that does not lead, is loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReadyRequires {
    /// What the operator configured: plugin files, the plugin directory's files, `oci://`
    /// references and ClusterWasmReconcilers. A tenant's plugin never decides whether the host
    /// is ready.
    #[default]
    Operator,
    /// Every source, tenants' WasmReconcilers too.
    All,
    /// None: ready once the host runs, whatever its plugins do.
    None,
}

/// What `/plugins` and `/readyz` report of the plugins.
pub trait PluginReport: Send + Sync + 'static {
    /// Every plugin source's status now, serialized.
    fn json(&self) -> String;
    /// Why a plugin the host waits for does not run now, if one does not.
    fn not_ready(&self) -> Option<String>;
}

/// What the endpoints report: read-only views of the metrics and the plugins' statuses.
pub struct Endpoints {
    metrics: Arc<Metrics>,
    plugins: Box<dyn PluginReport>,
    ready: AtomicBool,
}

impl Endpoints {
    /// Endpoints over `metrics` and `plugins`, not ready until [`Endpoints::set_ready`].
    pub fn new(metrics: Arc<Metrics>, plugins: impl PluginReport) -> Arc<Self> {
        Arc::new(Endpoints {
            metrics,
            plugins: Box::new(plugins),
            ready: AtomicBool::new(false),
        })
    }

    /// Marks the host running (or not): `/readyz` then waits for its plugins.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Whether `/readyz` answers ok now.
    pub fn is_ready(&self) -> bool {
        self.waiting_for().is_none()
    }

    /// What `/readyz` waits for now, if anything.
    fn waiting_for(&self) -> Option<String> {
        match self.ready.load(Ordering::Relaxed) {
            true => self.plugins.not_ready(),
            false => Some("the host is not running".to_owned()),
        }
    }

    async fn respond(&self, path: &str) -> Response<Full<Bytes>> {
        let (status, content_type, body) = match path {
            "/plugins" => (StatusCode::OK, "application/json", self.plugins.json()),
            "/metrics" => (StatusCode::OK, TEXT_FORMAT, self.metrics.gather()),
            "/healthz" => (StatusCode::OK, "text/plain", "ok".to_owned()),
            "/readyz" => match self.waiting_for() {
                None => (StatusCode::OK, "text/plain", "ok".to_owned()),
                Some(reason) => (StatusCode::SERVICE_UNAVAILABLE, "text/plain", reason),
            },
            _ => (StatusCode::NOT_FOUND, "text/plain", "not found".to_owned()),
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response.headers_mut().insert(
            CONTENT_TYPE,
            content_type.parse().expect("a valid header value"),
        );
        response
    }
}

/// A running host's endpoint could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Nothing answered at the address.
    #[error("cannot reach wasmop at {address}: {source}")]
    Connect {
        /// The address.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP exchange failed.
    #[error("talking to wasmop at {address}: {source}")]
    Http {
        /// The address.
        address: String,
        /// Why.
        source: hyper::Error,
    },
}

/// `GET path` from a running host's endpoints at `address`: the status and the body.
pub async fn fetch(address: &str, path: &str) -> Result<(StatusCode, String), FetchError> {
    let http = |source| FetchError::Http {
        address: address.to_owned(),
        source,
    };
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|source| FetchError::Connect {
            address: address.to_owned(),
            source,
        })?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(http)?;
    tokio::spawn(connection);
    let request = Request::get(path)
        .header(hyper::header::HOST, address)
        .body(http_body_util::Empty::<Bytes>::new())
        .expect("a valid request");
    let response = sender.send_request(request).await.map_err(http)?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(http)?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::{Registry, Report};

    /// Endpoints over an empty plugin table.
    fn endpoints() -> Arc<Endpoints> {
        Endpoints::new(
            Arc::new(Metrics::new()),
            Report::new(Registry::default().statuses(), ReadyRequires::Operator),
        )
    }

    #[tokio::test]
    async fn readiness_follows_the_flag_and_health_is_unconditional() {
        let endpoints = endpoints();
        assert_eq!(endpoints.respond("/healthz").await.status(), StatusCode::OK);
        assert_eq!(
            endpoints.respond("/readyz").await.status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        endpoints.set_ready(true);
        assert_eq!(endpoints.respond("/readyz").await.status(), StatusCode::OK);
        assert_eq!(
            endpoints.respond("/nope").await.status(),
            StatusCode::NOT_FOUND
        );
        let metrics = endpoints.respond("/metrics").await;
        assert_eq!(metrics.headers()[CONTENT_TYPE], TEXT_FORMAT);
        let plugins = endpoints.respond("/plugins").await;
        assert_eq!(plugins.status(), StatusCode::OK);
        let body = plugins.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"[]");
    }
}
