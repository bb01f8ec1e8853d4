//! The webhook server's settings: where it listens, its certificate, and how the apiserver
//! reaches it — the configurations the leader writes point at a URL off-cluster or at a Service
//! in-cluster. Webhooks are served only when one of these is set, so a host that runs no
//! webhooks opens no port and writes no configuration.

use std::path::PathBuf;

use super::{BindAddress, ConfigError, ValueError};
use crate::http::SecureServing;
use crate::webhook::{Endpoint, Target, WebhookServing};
use wasmop_contract::boundary::cut;

/// controller-runtime's webhook port.
const DEFAULT_ADDRESS: &str = "0.0.0.0:9443";

/// Options of the webhook server.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WebhookArgs {
    /// Where the plugins' admission and conversion webhooks are served over HTTPS (0.0.0.0:9443
    /// when `--webhook-url` or `--webhook-service` is given alone); `0` turns them off.
    #[arg(long, env = "WASMOP_WEBHOOK_BIND_ADDRESS")]
    pub webhook_bind_address: Option<BindAddress>,
    /// A directory with `tls.crt`, `tls.key` and optionally `ca.crt` (a cert-manager Secret),
    /// reloaded when they change; a self-signed certificate is generated at start when absent.
    #[arg(long, env = "WASMOP_WEBHOOK_CERT_DIR")]
    pub webhook_cert_dir: Option<PathBuf>,
    /// Off-cluster: the base URL the apiserver calls (`https://127.0.0.1:9443`); the leader
    /// writes the webhook configurations and CRD conversions pointing there.
    #[arg(long, env = "WASMOP_WEBHOOK_URL", value_parser = url)]
    pub webhook_url: Option<String>,
    /// In-cluster: the Service every replica backs, `NAMESPACE/NAME[:PORT]` (port 443 when
    /// absent); the leader writes the webhook configurations and CRD conversions pointing there.
    #[arg(long, env = "WASMOP_WEBHOOK_SERVICE", value_parser = service)]
    pub webhook_service: Option<(String, String, u16)>,
    /// The name of the ValidatingWebhookConfiguration and MutatingWebhookConfiguration written.
    #[arg(
        long,
        env = "WASMOP_WEBHOOK_CONFIGURATION_NAME",
        default_value = "wasmop"
    )]
    pub webhook_configuration_name: String,
}

impl WebhookArgs {
    /// How webhooks are served, if at all.
    pub fn serving(&self) -> Option<WebhookServing> {
        let endpoint = match (&self.webhook_url, &self.webhook_service) {
            (Some(url), _) => Some(Endpoint::Url(url.clone())),
            (None, Some((namespace, name, port))) => Some(Endpoint::Service {
                namespace: namespace.clone(),
                name: name.clone(),
                port: *port,
            }),
            (None, None) => None,
        };
        let address = match &self.webhook_bind_address {
            Some(BindAddress(address)) => (*address)?,
            None if endpoint.is_some() => DEFAULT_ADDRESS.parse().expect("a valid address"),
            None => return None,
        };
        let names = self
            .webhook_service
            .iter()
            .flat_map(|(namespace, name, _)| {
                [
                    format!("{name}.{namespace}.svc"),
                    format!("{name}.{namespace}.svc.cluster.local"),
                ]
            });
        Some(WebhookServing {
            address,
            tls: SecureServing {
                cert_dir: self.webhook_cert_dir.clone(),
                names: names.collect(),
            },
            target: endpoint.map(|endpoint| Target {
                name: self.webhook_configuration_name.clone(),
                endpoint,
            }),
        })
    }

    /// Checks the settings together.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |setting, message: &str| {
            Err(ConfigError::Invalid {
                setting,
                message: message.to_owned(),
            })
        };
        if self.webhook_url.is_some() && self.webhook_service.is_some() {
            return invalid(
                "webhook-url",
                "give --webhook-url (off-cluster) or --webhook-service (in-cluster), not both",
            );
        }
        let off = matches!(self.webhook_bind_address, Some(BindAddress(None)));
        if off && (self.webhook_url.is_some() || self.webhook_service.is_some()) {
            return invalid(
                "webhook-bind-address",
                "webhooks are off (`0`), yet --webhook-url or --webhook-service points the apiserver at them",
            );
        }
        if self.webhook_cert_dir.is_some() && self.serving().is_none() {
            return invalid(
                "webhook-cert-dir",
                "a certificate serves only webhooks that are on: give --webhook-bind-address, \
                 --webhook-url or --webhook-service",
            );
        }
        Ok(())
    }
}

/// An `https://` base URL without a path.
fn url(value: &str) -> Result<String, ValueError> {
    let quoted = || cut(value).to_string();
    let rest = value
        .strip_prefix("https://")
        .ok_or_else(|| ValueError::NotHttps(quoted()))?;
    if rest.is_empty() || rest.contains(['/', '?', '#', ' ']) {
        return Err(ValueError::NotBaseUrl(quoted()));
    }
    Ok(value.to_owned())
}

/// `NAMESPACE/NAME[:PORT]`.
fn service(value: &str) -> Result<(String, String, u16), ValueError> {
    let wrong = || ValueError::Service(cut(value).to_string());
    let (namespace, rest) = value.split_once('/').ok_or_else(wrong)?;
    let (name, port) = match rest.split_once(':') {
        Some((name, port)) => (name, port.parse().map_err(|_| wrong())?),
        None => (rest, 443),
    };
    let label = wasmop_contract::boundary::dns_label;
    if !label(namespace) || !label(name) || port == 0 {
        return Err(wrong());
    }
    Ok((namespace.to_owned(), name.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhooks_are_off_unless_asked_for() {
        assert_eq!(WebhookArgs::default().serving(), None);
        let listening = WebhookArgs {
            webhook_bind_address: Some("127.0.0.1:9443".parse().unwrap()),
            ..WebhookArgs::default()
        };
        let serving = listening.serving().unwrap();
        assert_eq!(
            serving.target, None,
            "serving without writing configurations"
        );
    }

    #[test]
    fn a_service_endpoint_listens_on_9443_and_names_the_service_in_its_certificate() {
        let args = WebhookArgs {
            webhook_service: Some(service("operators/wasmop-webhooks").unwrap()),
            webhook_configuration_name: "wasmop".into(),
            ..WebhookArgs::default()
        };
        let serving = args.serving().unwrap();
        assert_eq!(serving.address.port(), 9443);
        assert!(
            serving
                .tls
                .names
                .contains(&"wasmop-webhooks.operators.svc".to_owned())
        );
        let target = serving.target.unwrap();
        assert_eq!(
            target.endpoint,
            Endpoint::Service {
                namespace: "operators".into(),
                name: "wasmop-webhooks".into(),
                port: 443
            }
        );
    }

    #[test]
    fn urls_and_services_are_checked_where_they_enter() {
        assert!(url("https://127.0.0.1:9443").is_ok());
        assert!(matches!(
            url("http://127.0.0.1:9443"),
            Err(ValueError::NotHttps(_))
        ));
        assert!(matches!(
            url("https://127.0.0.1:9443/x"),
            Err(ValueError::NotBaseUrl(_))
        ));
        assert_eq!(
            service("ns/svc:8443").unwrap(),
            ("ns".into(), "svc".into(), 8443)
        );
        for bad in ["svc", "ns/", "ns/svc:0", "ns/svc:x", "NS/svc", "ns/../x"] {
            assert!(service(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn contradictions_are_refused() {
        let both = WebhookArgs {
            webhook_url: Some("https://127.0.0.1:9443".into()),
            webhook_service: Some(("a".into(), "b".into(), 443)),
            ..WebhookArgs::default()
        };
        assert!(both.validate().is_err());
        let off = WebhookArgs {
            webhook_bind_address: Some(BindAddress(None)),
            webhook_url: Some("https://127.0.0.1:9443".into()),
            ..WebhookArgs::default()
        };
        assert!(off.validate().is_err());
        let idle_cert = WebhookArgs {
            webhook_cert_dir: Some("/certs".into()),
            ..WebhookArgs::default()
        };
        assert!(idle_cert.validate().is_err());
    }
}
