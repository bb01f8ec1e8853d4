//! The webhook listener's routes: `POST /validate/<plugin>`, `/default/<plugin>` and
//! `/convert/<plugin>`, each answered by the plugin of that name loaded now (a hot swap changes
//! the answer at once), with the failure policy the operator chose for it. Bodies are read up to
//! [`MAX_BODY`]; anything else is answered with the HTTP status that says what is wrong.

use std::collections::BTreeMap;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::watch;

use super::review::{self, FailurePolicy, Hook, MAX_BODY};
use crate::http::{Handler, Responding};
use crate::runtime::Plugin;

/// The plugins loaded now, by name, as the plugin registry publishes them.
pub type Loaded = watch::Receiver<Arc<BTreeMap<String, Arc<Plugin>>>>;

/// Answers the apiserver's webhook calls with the loaded plugins.
pub struct WebhookServer {
    plugins: Loaded,
    policies: BTreeMap<String, FailurePolicy>,
}

impl WebhookServer {
    /// A server over `plugins`, each failing as `policies` says (`Fail` when it names none).
    pub fn new(plugins: Loaded, policies: BTreeMap<String, FailurePolicy>) -> Self {
        WebhookServer { plugins, policies }
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        if request.method() != Method::POST {
            return text(StatusCode::METHOD_NOT_ALLOWED, "webhooks take POST".into());
        }
        let path = request.uri().path().to_owned();
        let Some((hook, name)) = path.strip_prefix('/').and_then(|p| p.split_once('/')) else {
            return text(StatusCode::NOT_FOUND, format!("no webhook at {path}"));
        };
        let plugin = self.plugins.borrow().get(name).cloned();
        let Some(plugin) = plugin.filter(|p| p.webhooks().is_some()) else {
            return text(
                StatusCode::NOT_FOUND,
                format!("no plugin {name} serves webhooks"),
            );
        };
        let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) => return text(StatusCode::PAYLOAD_TOO_LARGE, error.to_string()),
        };
        let policy = self.policies.get(name).copied().unwrap_or_default();
        let answered = match hook {
            "validate" => review::admission(&plugin, Hook::Validate, policy, &body).await,
            "default" => review::admission(&plugin, Hook::Default, policy, &body).await,
            "convert" => review::conversion(&plugin, &body).await,
            _ => return text(StatusCode::NOT_FOUND, format!("no webhook at {path}")),
        };
        match answered {
            Ok(json) => {
                let mut response = Response::new(Full::new(Bytes::from(json)));
                let kind = HeaderValue::from_static("application/json");
                response.headers_mut().insert(CONTENT_TYPE, kind);
                response
            }
            Err(error) => text(StatusCode::BAD_REQUEST, error.to_string()),
        }
    }
}

impl Handler for WebhookServer {
    fn handle(&self, request: Request<Incoming>) -> Responding<'_> {
        Box::pin(self.answer(request))
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}
