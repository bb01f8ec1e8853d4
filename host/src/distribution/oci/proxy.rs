//! The forward proxy a tenant's pull goes through, on loopback for the pull's lifetime: the
//! registry client is told to use it for every request, so each connection — to the registry,
//! its token service, or wherever a redirect points — is made here, to addresses that pass the
//! capability check ([`CheckedAddresses`]) and to nothing else.
//!
//! Invariants: it connects only to checked addresses, never resolving a name twice; it passes on
//! at most the bytes the pull expects next ([`Proxy::allow`]) and cuts the connection that would
//! pass more; it stops, with every tunnel it opened, when dropped. It asks no credentials: it
//! only narrows what the pod's network allows anyway (and a client drops proxy credentials on a
//! redirect to another host).

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, BodyStream, Empty, StreamBody};
use hyper::body::{Bytes, Incoming};
use hyper::header::PROXY_AUTHORIZATION;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::OciError;
use crate::distribution::address::CheckedAddresses;
use crate::distribution::download::CONNECT_TIMEOUT;
use wasmop_contract::Ceiling;

/// What a connection may carry beyond the bytes a pull expects: headers, TLS records and
/// handshakes, a token service's answer.
const OVERHEAD: i64 = 256 << 10;

type Body = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// A running proxy; dropping it stops it.
pub(super) struct Proxy {
    url: String,
    state: Arc<State>,
    _stop: watch::Sender<()>,
}

struct State {
    policy: Ceiling,
    budget: AtomicI64,
    refusal: Mutex<Option<String>>,
    unreachable: AtomicBool,
    stopped: watch::Receiver<()>,
}

impl Proxy {
    /// Starts a proxy on loopback checking every address against `policy`.
    pub async fn start(policy: Ceiling) -> Result<Self, OciError> {
        let failed =
            |e: std::io::Error| OciError::Client(format!("starting the pull's proxy: {e}"));
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(failed)?;
        let address = listener.local_addr().map_err(failed)?;
        let (stop, stopped) = watch::channel(());
        let state = Arc::new(State {
            policy,
            budget: AtomicI64::new(OVERHEAD),
            refusal: Mutex::new(None),
            unreachable: AtomicBool::new(false),
            stopped,
        });
        tokio::spawn(serve(listener, state.clone()));
        Ok(Proxy {
            url: format!("http://{address}"),
            state,
            _stop: stop,
        })
    }

    /// The proxy's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Lets the connections carry `bytes` more (and the overhead), from now on.
    pub fn allow(&self, bytes: usize) {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX - OVERHEAD);
        self.state.budget.store(bytes + OVERHEAD, Ordering::Relaxed);
    }

    /// Why the proxy refused a connection or cut one, if it did.
    pub fn refusal(&self) -> Option<OciError> {
        let refusal = self.state.refusal.lock().unwrap_or_else(|p| p.into_inner());
        refusal.clone().map(OciError::Refused)
    }

    /// Whether a connection to an allowed address failed.
    pub fn unreachable(&self) -> bool {
        self.state.unreachable.load(Ordering::Relaxed)
    }
}

impl State {
    fn refuse(&self, why: String) {
        let mut refusal = self.refusal.lock().unwrap_or_else(|p| p.into_inner());
        refusal.get_or_insert(why);
    }

    /// Takes `bytes` from the budget; false once it is spent.
    fn take(&self, bytes: usize) -> bool {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        if self.budget.fetch_sub(bytes, Ordering::Relaxed) >= bytes {
            return true;
        }
        self.refuse("the registry sent more than the manifest or component may be".to_owned());
        false
    }
}

async fn serve(listener: TcpListener, state: Arc<State>) {
    let mut stopped = state.stopped.clone();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.changed() => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        let state = state.clone();
        let mut stopped = state.stopped.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| handle(request, state.clone()));
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                _ = connection => {}
                _ = stopped.changed() => {}
            }
        });
    }
}

fn answer(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Empty::new().map_err(|e| match e {}).boxed());
    *response.status_mut() = status;
    response
}

async fn handle(
    request: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<Body>, Infallible> {
    Ok(match *request.method() == Method::CONNECT {
        true => tunnel(request, state).await,
        false => forward(request, state).await,
    })
}

/// The addresses of `uri`'s host, if the policy allows every one; the refusal is kept.
async fn checked(uri: &hyper::Uri, state: &State) -> Option<CheckedAddresses> {
    match CheckedAddresses::resolve(uri, &state.policy).await {
        Ok(addresses) => Some(addresses),
        Err(error) => {
            state.refuse(format!("connecting to the registry: {error}"));
            None
        }
    }
}

/// A CONNECT: a tunnel to a checked address of the authority named.
async fn tunnel(request: Request<Incoming>, state: Arc<State>) -> Response<Body> {
    let Some(authority) = request.uri().authority().cloned() else {
        return answer(StatusCode::BAD_REQUEST);
    };
    let Ok(uri) = format!("https://{authority}/").parse::<hyper::Uri>() else {
        return answer(StatusCode::BAD_REQUEST);
    };
    let Some(addresses) = checked(&uri, &state).await else {
        return answer(StatusCode::FORBIDDEN);
    };
    let port = authority.port_u16().unwrap_or(443);
    let Some(upstream) = connect(addresses.with_port(port)).await else {
        state.unreachable.store(true, Ordering::Relaxed);
        return answer(StatusCode::BAD_GATEWAY);
    };
    tokio::spawn(async move {
        let mut stopped = state.stopped.clone();
        if let Ok(client) = hyper::upgrade::on(request).await {
            tokio::select! {
                () = pipe(TokioIo::new(client), upstream, &state) => {}
                _ = stopped.changed() => {}
            }
        }
    });
    answer(StatusCode::OK)
}

async fn connect(addresses: Vec<SocketAddr>) -> Option<TcpStream> {
    for address in addresses {
        let attempt = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await;
        if let Ok(Ok(stream)) = attempt {
            return Some(stream);
        }
    }
    None
}

/// Copies both ways until both ends close, metering what comes from upstream.
async fn pipe(client: impl AsyncRead + AsyncWrite, upstream: TcpStream, state: &State) {
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut client_read, &mut upstream_write).await;
        let _ = upstream_write.shutdown().await;
    };
    let down = async {
        let mut buffer = vec![0u8; 16 << 10];
        while let Ok(read @ 1..) = upstream_read.read(&mut buffer).await {
            if !state.take(read) || client_write.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    };
    tokio::join!(up, down);
}

/// A plain-HTTP request in absolute form: forwarded to a checked address, the answer metered.
async fn forward(mut request: Request<Incoming>, state: Arc<State>) -> Response<Body> {
    let uri = request.uri().clone();
    if uri.scheme_str() != Some("http") || uri.authority().is_none() {
        return answer(StatusCode::BAD_REQUEST);
    }
    let Some(addresses) = checked(&uri, &state).await else {
        return answer(StatusCode::FORBIDDEN);
    };
    request.headers_mut().remove(PROXY_AUTHORIZATION);
    request.headers_mut().remove("proxy-connection");
    let mut http = HttpConnector::new_with_resolver(addresses);
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    let client = Client::builder(TokioExecutor::new()).build::<_, Incoming>(http);
    let Ok(response) = client.request(request).await else {
        state.unreachable.store(true, Ordering::Relaxed);
        return answer(StatusCode::BAD_GATEWAY);
    };
    response.map(|body| {
        let frames = BodyStream::new(body).map(move |frame| {
            let frame =
                frame.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
            let length = frame.data_ref().map_or(0, Bytes::len);
            match state.take(length) {
                true => Ok(frame),
                false => Err("over the pull's budget".into()),
            }
        });
        BodyExt::boxed(StreamBody::new(frames))
    })
}
