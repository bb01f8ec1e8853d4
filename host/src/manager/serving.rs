//! What every replica serves from the start: the HTTP endpoints (`/metrics`, `/healthz`,
//! `/readyz`, `/plugins`) and the plugins' webhooks.

use std::sync::Arc;

use super::groups::Group;
use super::{Manager, ManagerError};
use crate::http;
use crate::webhook::{WebhookServer, WebhookServing};

impl Manager {
    /// Serves `/metrics`, `/healthz`, `/readyz` and `/plugins` on the configured addresses (once
    /// if they are the same); `/readyz` fails until [`Manager::run`]. With `metrics_secure` the
    /// metrics listener speaks HTTPS and guards `/metrics` and `/plugins`, and a separate probe
    /// listener serves the probes alone. With metrics off, no listener serves `/metrics`.
    pub async fn serve(&mut self) -> Result<(), ManagerError> {
        let (metrics, probes) = (self.options.metrics_address, self.options.probe_address);
        let secure = match (&self.options.metrics_secure, metrics) {
            (Some(serving), Some(_)) => {
                let reviews = match self.options.reviews.clone() {
                    Some(config) => {
                        kube::Client::try_from(config).map_err(ManagerError::ReviewClient)?
                    }
                    None => self.client.clone(),
                };
                let metrics = self.metrics.clone();
                Some(http::Access::secure(serving, reviews, metrics).await?)
            }
            _ => None,
        };
        // Secure or off, the metrics stay off the plain probe listener.
        let probe_access = match (&self.options.metrics_secure, metrics) {
            (Some(_), _) => http::Access::Probes,
            (None, None) => http::Access::Unmetered,
            (None, Some(_)) => http::Access::Open,
        };
        if secure.is_some() && probes.is_some() && probes == metrics {
            tracing::warn!(
                "the probes share the secure metrics listener: /healthz and /readyz answer there \
                 without a token, over HTTPS (kubelet probes need `scheme: HTTPS`)"
            );
        }
        let listeners = [
            metrics.map(|address| (address, secure.unwrap_or(http::Access::Open))),
            probes
                .filter(|address| Some(*address) != metrics)
                .map(|address| (address, probe_access)),
        ];
        for (address, access) in listeners.into_iter().flatten() {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|source| ManagerError::Listen { address, source })?;
            tracing::info!(%address, "{}", access.describe());
            let endpoints = self.endpoints.clone();
            let limits = http::ConnectionLimits::default();
            let served = http::serve(listener, endpoints, access, limits);
            self.groups.spawn(Group::Endpoints, served);
        }
        if let Some(serving) = self.options.webhook.clone() {
            self.serve_webhooks(&serving).await?;
        }
        Ok(())
    }

    /// Serves the loaded plugins' webhooks over HTTPS at `serving`'s address.
    async fn serve_webhooks(&mut self, serving: &WebhookServing) -> Result<(), ManagerError> {
        let address = serving.address;
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| ManagerError::Listen { address, source })?;
        let tls = http::Tls::load(&serving.tls).await?;
        let around = self.options.around_reviews.clone();
        let server = WebhookServer::new(self.plugins.live(), self.metrics.clone(), around);
        tracing::info!(%address, "serving the plugins' webhooks over HTTPS");
        let served = http::listen(
            listener,
            Arc::new(server),
            Some(tls.clone()),
            http::ConnectionLimits::default(),
        );
        self.groups.spawn(Group::Webhooks, served);
        self.webhook_tls = Some(tls);
        Ok(())
    }
}
