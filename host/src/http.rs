//! The host's HTTP endpoints, on hyper: `/metrics` in Prometheus text format, `/healthz` (the
//! process answers) and `/readyz` (every plugin loaded, which implies its informers synced).
//! The same routes are served on every listener, so the metrics and probe addresses may differ
//! or coincide.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::CONTENT_TYPE;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::metrics::Metrics;

/// The Prometheus text exposition format's content type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the endpoints report.
pub struct Endpoints {
    metrics: Arc<Metrics>,
    ready: AtomicBool,
}

impl Endpoints {
    /// Endpoints over `metrics`, not ready until [`Endpoints::set_ready`].
    pub fn new(metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Endpoints {
            metrics,
            ready: AtomicBool::new(false),
        })
    }

    /// Marks the host ready (or not) for `/readyz`.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    fn respond(&self, path: &str) -> Response<Full<Bytes>> {
        let (status, content_type, body) = match path {
            "/metrics" => (StatusCode::OK, TEXT_FORMAT, self.metrics.gather()),
            "/healthz" => (StatusCode::OK, "text/plain", "ok".to_owned()),
            "/readyz" if self.ready.load(Ordering::Relaxed) => {
                (StatusCode::OK, "text/plain", "ok".to_owned())
            }
            "/readyz" => (
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                "plugins are still loading".to_owned(),
            ),
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

/// Serves the endpoints on `listener` until the task is dropped or aborted.
pub async fn serve(listener: TcpListener, endpoints: Arc<Endpoints>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!("accepting an HTTP connection failed: {error}");
                continue;
            }
        };
        let endpoints = endpoints.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let response = endpoints.respond(request.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!(%peer, "HTTP connection ended: {error}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_follows_the_flag_and_health_is_unconditional() {
        let endpoints = Endpoints::new(Arc::new(Metrics::new()));
        assert_eq!(endpoints.respond("/healthz").status(), StatusCode::OK);
        assert_eq!(
            endpoints.respond("/readyz").status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        endpoints.set_ready(true);
        assert_eq!(endpoints.respond("/readyz").status(), StatusCode::OK);
        assert_eq!(endpoints.respond("/nope").status(), StatusCode::NOT_FOUND);
        let metrics = endpoints.respond("/metrics");
        assert_eq!(metrics.headers()[CONTENT_TYPE], TEXT_FORMAT);
    }
}
