//! The listeners that serve [`Endpoints`]: who may use each ([`Access`]), the bounds on their
//! connections ([`ConnectionLimits`]), TLS on a secure one, and routing each request.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::{Authorizer, Endpoints, SecureServing, Tls, TlsError};
use crate::metrics::Metrics;

/// Bounds every listener puts on its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client may take to send a request's headers (or, idle, the next request's) and
    /// to finish a TLS handshake; the connection is closed after.
    pub header_read_timeout: Duration,
    /// Connections served at once; further ones wait to be accepted.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(10),
            max_connections: 64,
        }
    }
}

/// Who may use a listener, and how it is reached.
#[derive(Clone)]
pub enum Access {
    /// Plain HTTP, every route open to whoever reaches it (without `--metrics-secure`).
    Open,
    /// Plain HTTP, every route but `/metrics`: the probe listener when metrics are off.
    Unmetered,
    /// Plain HTTP, `/healthz` and `/readyz` only: the probe listener beside a secure one.
    Probes,
    /// HTTPS: `/healthz` and `/readyz` open, `/metrics` and `/plugins` only to callers the
    /// apiserver authenticates and authorizes.
    Secure {
        /// The certificate.
        tls: Tls,
        /// Who may read.
        authorizer: Arc<Authorizer>,
    },
}

impl Access {
    /// A secure listener's access: TLS as `serving` says, reviews asked through `client`, its
    /// refusals counted in `metrics`.
    pub async fn secure(
        serving: &SecureServing,
        client: kube::Client,
        metrics: Arc<Metrics>,
    ) -> Result<Access, TlsError> {
        Ok(Access::Secure {
            tls: Tls::load(serving).await?,
            authorizer: Arc::new(Authorizer::new(client, metrics)),
        })
    }

    /// What a listener with this access serves, for the log.
    pub fn describe(&self) -> &'static str {
        match self {
            Access::Open => "serving /metrics, /healthz, /readyz and /plugins",
            Access::Unmetered => "serving /healthz, /readyz and /plugins (metrics are off)",
            Access::Probes => "serving /healthz and /readyz",
            Access::Secure { .. } => {
                "serving /metrics and /plugins over HTTPS to authorized callers, /healthz and \
                 /readyz to anyone"
            }
        }
    }
}

/// Whether `path` is a probe, open on every listener.
fn is_probe(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz")
}

/// The path a secure listener asks the apiserver about, if it guards `path`.
fn guarded(path: &str) -> Option<&'static str> {
    match path {
        "/metrics" => Some("/metrics"),
        "/plugins" => Some("/plugins"),
        _ => None,
    }
}

/// A `text/plain` response.
fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let plain = HeaderValue::from_static("text/plain");
    response.headers_mut().insert(CONTENT_TYPE, plain);
    response
}

/// The answer to `request` on a listener with `access`.
async fn route(
    endpoints: &Endpoints,
    access: &Access,
    request: &Request<Incoming>,
) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    let authorizer = match access {
        Access::Open => return endpoints.respond(path).await,
        _ if is_probe(path) => return endpoints.respond(path).await,
        Access::Unmetered if path != "/metrics" => return endpoints.respond(path).await,
        Access::Unmetered => return text(StatusCode::NOT_FOUND, "not found".into()),
        Access::Probes => return text(StatusCode::NOT_FOUND, "not found".into()),
        Access::Secure { authorizer, .. } => authorizer,
    };
    let Some(path) = guarded(path) else {
        return text(StatusCode::NOT_FOUND, "not found".into());
    };
    match authorizer.authorize(request.headers(), path).await {
        Ok(decision) => match decision.refusal() {
            None => endpoints.respond(path).await,
            Some((status, body)) => {
                tracing::debug!(path, "refused: {body}");
                let mut response = text(status, body);
                if status == StatusCode::UNAUTHORIZED {
                    let bearer = HeaderValue::from_static("Bearer");
                    response.headers_mut().insert(WWW_AUTHENTICATE, bearer);
                }
                if let Some(seconds) = decision.retry_after() {
                    response
                        .headers_mut()
                        .insert(RETRY_AFTER, HeaderValue::from(seconds));
                }
                response
            }
        },
        Err(error) => {
            tracing::warn!("{error}");
            let message = "cannot review the request with the apiserver";
            text(StatusCode::INTERNAL_SERVER_ERROR, message.into())
        }
    }
}

/// A boxed future of a response, as a [`Handler`] returns it.
pub type Responding<'a> = Pin<Box<dyn Future<Output = Response<Full<Bytes>>> + Send + 'a>>;

/// What a listener answers: one request in, one response out.
pub trait Handler: Send + Sync + 'static {
    /// The response to `request`.
    fn handle(&self, request: Request<Incoming>) -> Responding<'_>;
}

/// The endpoints behind one listener's access.
struct Routed {
    endpoints: Arc<Endpoints>,
    access: Access,
}

impl Handler for Routed {
    fn handle(&self, request: Request<Incoming>) -> Responding<'_> {
        Box::pin(async move { route(&self.endpoints, &self.access, &request).await })
    }
}

/// Serves the endpoints on `listener` as `access` allows, within `limits`, until the task is
/// dropped or aborted, which closes its connections too. A secure listener's certificate
/// directory is reloaded meanwhile.
pub async fn serve(
    listener: TcpListener,
    endpoints: Arc<Endpoints>,
    access: Access,
    limits: ConnectionLimits,
) {
    let tls = match &access {
        Access::Secure { tls, .. } => Some(tls.clone()),
        _ => None,
    };
    let handler = Arc::new(Routed { endpoints, access });
    listen(listener, handler, tls, limits).await;
}

/// Serves `handler` on `listener` within `limits`, over HTTPS when `tls` is given (its
/// certificate directory reloaded meanwhile), until the task is dropped or aborted, which closes
/// its connections too.
pub async fn listen(
    listener: TcpListener,
    handler: Arc<dyn Handler>,
    tls: Option<Tls>,
    limits: ConnectionLimits,
) {
    let reload = async {
        match &tls {
            Some(tls) => tls.watch().await,
            None => std::future::pending().await,
        }
    };
    tokio::join!(accept(listener, handler, tls.clone(), limits), reload);
}

/// Accepts connections while fewer than `limits.max_connections` are open, each in a task of
/// its own, owned here.
async fn accept(
    listener: TcpListener,
    handler: Arc<dyn Handler>,
    tls: Option<Tls>,
    limits: ConnectionLimits,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        let slot = slots.clone().acquire_owned().await;
        let slot = slot.expect("the semaphore is never closed");
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!("accepting an HTTP connection failed: {error}");
                continue;
            }
        };
        let (handler, tls) = (handler.clone(), tls.clone());
        connections.spawn(async move {
            connection(stream, peer, handler, tls, limits).await;
            drop(slot);
        });
    }
}

/// Serves one connection, after its TLS handshake on a secure listener.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    handler: Arc<dyn Handler>,
    tls: Option<Tls>,
    limits: ConnectionLimits,
) {
    let served = match tls {
        Some(tls) => {
            let handshake = tls.acceptor().accept(stream);
            match tokio::time::timeout(limits.header_read_timeout, handshake).await {
                Ok(Ok(stream)) => http(TokioIo::new(stream), handler, limits).await,
                Ok(Err(error)) => return tracing::debug!(%peer, "TLS handshake failed: {error}"),
                Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
            }
        }
        None => http(TokioIo::new(stream), handler, limits).await,
    };
    if let Err(error) = served {
        tracing::debug!(%peer, "HTTP connection ended: {error}");
    }
}

/// Serves HTTP/1.1 on `io` until the client closes it or the header-read timeout passes.
async fn http<I>(
    io: I,
    handler: Arc<dyn Handler>,
    limits: ConnectionLimits,
) -> Result<(), hyper::Error>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = service_fn(move |request: Request<Incoming>| {
        let handler = handler.clone();
        async move { Ok::<_, Infallible>(handler.handle(request).await) }
    });
    http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(io, service)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::ReadyRequires;
    use crate::metrics::Metrics;
    use crate::plugins::{Registry, Report};
    use http_body_util::BodyExt;
    use hyper::header::AUTHORIZATION;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::TlsConnector;
    use tokio_rustls::rustls::pki_types::ServerName;
    use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::ring};

    /// Bounds every test here.
    const LIMIT: Duration = Duration::from_secs(30);

    /// A client for an apiserver nothing listens at.
    fn unreachable() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        kube::Client::try_from(config).unwrap()
    }

    /// Serves ready endpoints (their manager gone) as `access` allows on a loopback port.
    async fn listen(access: Access, limits: ConnectionLimits) -> (SocketAddr, JoinSet<()>) {
        let endpoints = Endpoints::new(
            Arc::new(Metrics::new()),
            Report::new(Registry::default().statuses(), ReadyRequires::Operator),
        );
        endpoints.set_ready(true);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mut server = JoinSet::new();
        server.spawn(serve(listener, endpoints, access, limits));
        (address, server)
    }

    /// `GET path` over `io`, with `token` as a bearer token: the status, headers and body.
    async fn get<I>(
        io: I,
        path: &str,
        token: Option<&str>,
    ) -> (StatusCode, hyper::HeaderMap, String)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .unwrap();
        tokio::spawn(connection);
        let mut request = Request::get(path).header(hyper::header::HOST, "localhost");
        if let Some(token) = token {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(http_body_util::Empty::<Bytes>::new()).unwrap();
        let response = sender.send_request(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        let body = String::from_utf8_lossy(&body).into_owned();
        (parts.status, parts.headers, body)
    }

    /// A TLS connection to `address` trusting only `tls`'s certificate.
    async fn connect_tls(
        address: SocketAddr,
        tls: &Tls,
    ) -> tokio_rustls::client::TlsStream<TcpStream> {
        let mut roots = RootCertStore::empty();
        roots.add(tls.certificate()).unwrap();
        let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let stream = TcpStream::connect(address).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let connector = TlsConnector::from(Arc::new(config));
        connector.connect(name, stream).await.unwrap()
    }

    #[tokio::test]
    async fn a_secure_listener_guards_metrics_and_plugins_and_leaves_probes_open() {
        let metrics = Arc::new(Metrics::new());
        let secure = Access::secure(&SecureServing::default(), unreachable(), metrics)
            .await
            .unwrap();
        let Access::Secure { tls, .. } = &secure else {
            unreachable!()
        };
        let tls = tls.clone();
        let (address, _server) = listen(secure, ConnectionLimits::default()).await;
        let test = async {
            for probe in ["/healthz", "/readyz"] {
                let (status, _, _) = get(connect_tls(address, &tls).await, probe, None).await;
                assert_eq!(status, StatusCode::OK, "{probe}");
            }
            for guarded in ["/metrics", "/plugins"] {
                let (status, headers, _) =
                    get(connect_tls(address, &tls).await, guarded, None).await;
                assert_eq!(status, StatusCode::UNAUTHORIZED, "{guarded}");
                assert_eq!(headers[WWW_AUTHENTICATE], "Bearer");
                // A token the apiserver cannot be asked about is neither allowed nor cached.
                let token = Some("some-token");
                let (status, _, body) = get(connect_tls(address, &tls).await, guarded, token).await;
                assert_eq!(
                    status,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "{guarded}: {body}"
                );
            }
            let (status, _, _) = get(connect_tls(address, &tls).await, "/nope", None).await;
            assert_eq!(status, StatusCode::NOT_FOUND);

            // Plain HTTP to the TLS port gets no answer, only a closed connection.
            let mut plain = TcpStream::connect(address).await.unwrap();
            plain
                .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .await
                .unwrap();
            let mut answer = Vec::new();
            let _ = plain.read_to_end(&mut answer).await;
            assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");
        };
        tokio::time::timeout(LIMIT, test)
            .await
            .expect("requests to the secure listener hung");
    }

    #[tokio::test]
    async fn beside_a_secure_listener_the_probe_listener_serves_probes_only() {
        let (address, _server) = listen(Access::Probes, ConnectionLimits::default()).await;
        let test = async {
            let connect = || async { TcpStream::connect(address).await.unwrap() };
            assert_eq!(
                get(connect().await, "/healthz", None).await.0,
                StatusCode::OK
            );
            assert_eq!(
                get(connect().await, "/readyz", None).await.0,
                StatusCode::OK
            );
            for hidden in ["/metrics", "/plugins"] {
                let (status, _, _) = get(connect().await, hidden, Some("any")).await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{hidden}");
            }
        };
        tokio::time::timeout(LIMIT, test)
            .await
            .expect("requests to the probe listener hung");
    }

    #[tokio::test]
    async fn with_metrics_off_the_probe_listener_serves_everything_but_metrics() {
        let (address, _server) = listen(Access::Unmetered, ConnectionLimits::default()).await;
        let test = async {
            let connect = || async { TcpStream::connect(address).await.unwrap() };
            for served in ["/healthz", "/readyz", "/plugins"] {
                let (status, _, _) = get(connect().await, served, None).await;
                assert_eq!(status, StatusCode::OK, "{served}");
            }
            let (status, _, _) = get(connect().await, "/metrics", None).await;
            assert_eq!(status, StatusCode::NOT_FOUND);
        };
        tokio::time::timeout(LIMIT, test)
            .await
            .expect("requests to the probe listener hung");
    }

    #[tokio::test]
    async fn a_client_that_sends_no_headers_is_closed_after_the_timeout() {
        let limits = ConnectionLimits {
            header_read_timeout: Duration::from_millis(300),
            ..ConnectionLimits::default()
        };
        let (address, _server) = listen(Access::Open, limits).await;
        let test = async {
            let started = tokio::time::Instant::now();
            let mut silent = TcpStream::connect(address).await.unwrap();
            let mut answer = Vec::new();
            let _ = silent.read_to_end(&mut answer).await;
            assert!(started.elapsed() >= Duration::from_millis(300));

            // A request answered, the idle keep-alive connection is closed the same way.
            let mut idle = TcpStream::connect(address).await.unwrap();
            idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .await
                .unwrap();
            let mut answer = Vec::new();
            let _ = idle.read_to_end(&mut answer).await;
            assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
        };
        tokio::time::timeout(LIMIT, test)
            .await
            .expect("a silent connection was never closed");
    }

    #[tokio::test]
    async fn connections_over_the_cap_wait_for_a_free_slot() {
        let limits = ConnectionLimits {
            max_connections: 1,
            ..ConnectionLimits::default()
        };
        let (address, _server) = listen(Access::Open, limits).await;
        let test = async {
            let first = TcpStream::connect(address).await.unwrap();
            // The first takes the only slot before the second arrives.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let waiting = tokio::spawn(async move {
                let second = TcpStream::connect(address).await.unwrap();
                get(second, "/healthz", None).await.0
            });
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert!(
                !waiting.is_finished(),
                "the second connection was served at once"
            );
            drop(first);
            assert_eq!(waiting.await.unwrap(), StatusCode::OK);
        };
        tokio::time::timeout(LIMIT, test)
            .await
            .expect("the waiting connection was never served");
    }
}
