//! The webhook listener's routes: `POST /validate/<plugin>`, `/default/<plugin>` and
//! `/convert/<plugin>`, each answered by the plugin of that name loaded now (a hot swap changes
//! the answer at once), with the failure policy the operator chose for it. Bodies are read up to
//! [`MAX_BODY`]; anything else is answered with the HTTP status that says what is wrong. Every
//! request to a served route is counted under controller-runtime's webhook metrics, by path, and
//! each refused admission in `wasmop_webhook_denials_total`.

use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::review::{self, AroundReview, Hook, MAX_BODY, Outcome};
use crate::http::{Handler, Responding};
use crate::metrics::Metrics;
use crate::runtime::Live;
use crate::runtime::Plugin;

/// Answers the apiserver's webhook calls with the loaded plugins.
pub struct WebhookServer {
    plugins: Live,
    metrics: Arc<Metrics>,
    around: Option<Arc<dyn AroundReview>>,
}

impl WebhookServer {
    /// A server over `plugins`, counting its requests in `metrics`, each review run inside
    /// `around` when given.
    pub fn new(
        plugins: Live,
        metrics: Arc<Metrics>,
        around: Option<Arc<dyn AroundReview>>,
    ) -> Self {
        WebhookServer {
            plugins,
            metrics,
            around,
        }
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let Some((hook, plugin)) = self.route(&path) else {
            return text(StatusCode::NOT_FOUND, format!("no webhook at {path}"));
        };
        let counted = self.metrics.webhook_request(&path);
        let (response, outcome) = match request.method() {
            &Method::POST => self.review(hook, &plugin, request.into_body()).await,
            _ => (
                text(StatusCode::METHOD_NOT_ALLOWED, "webhooks take POST".into()),
                Outcome::default(),
            ),
        };
        let policy = outcome
            .plugin_failed
            .then(|| plugin.failure_policy().as_str());
        counted.answered(response.status().as_u16(), policy, outcome.denied);
        response
    }

    /// The hook and the loaded plugin `path` names, if that plugin serves webhooks.
    fn route<'p>(&self, path: &'p str) -> Option<(&'p str, Arc<Plugin>)> {
        let (hook, name) = path.strip_prefix('/')?.split_once('/')?;
        let known = matches!(hook, "validate" | "default" | "convert");
        let plugin = self.plugins.borrow().get(name).cloned()?;
        (known && plugin.webhooks().is_some()).then_some((hook, plugin))
    }

    /// The plugin's answer to the review in `body`, and what became of it.
    async fn review(
        &self,
        hook: &str,
        plugin: &Plugin,
        body: Incoming,
    ) -> (Response<Full<Bytes>>, Outcome) {
        let body = match Limited::new(body, MAX_BODY).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) => {
                return (
                    text(StatusCode::PAYLOAD_TOO_LARGE, error.to_string()),
                    Outcome::default(),
                );
            }
        };
        let policy = plugin.failure_policy();
        let call = Box::pin(async {
            match hook {
                "validate" => review::admission(plugin, Hook::Validate, policy, &body).await,
                "default" => review::admission(plugin, Hook::Default, policy, &body).await,
                _ => review::conversion(plugin, &body).await,
            }
        });
        let answered = match &self.around {
            Some(around) => around.review(plugin.name(), hook, &body, call).await,
            None => call.await,
        };
        match answered {
            Ok(answer) => {
                let mut response = Response::new(Full::new(Bytes::from(answer.json)));
                let kind = HeaderValue::from_static("application/json");
                response.headers_mut().insert(CONTENT_TYPE, kind);
                (response, answer.outcome)
            }
            Err(error) => (
                text(StatusCode::BAD_REQUEST, error.to_string()),
                Outcome::default(),
            ),
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
