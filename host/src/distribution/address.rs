//! The addresses a module URL may be fetched from: its host is resolved once, by the host, every
//! address it resolves to passes [`capability::check`] as a [`Power::ModuleAddress`], and the
//! connector is given a resolver that answers with those addresses alone.
//!
//! Invariant: the download connects only to an address that was checked. A name that resolves
//! differently between the check and the connection (DNS rebinding) cannot lead the connection
//! elsewhere, since the connector never resolves it again.

use std::future::Ready;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::Name;

use wasmop_contract::Ceiling;
use wasmop_contract::capability::{self, Power, Subject};

/// A URL's host could not be resolved to addresses the policy allows.
#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    /// The URL names no host.
    #[error("the URL names no host")]
    NoHost,
    /// The host did not resolve.
    #[error("resolving {host}: {message}")]
    Resolve {
        /// The host.
        host: String,
        /// Why.
        message: String,
    },
    /// An address it resolved to is one the operator's policy does not allow.
    #[error(
        "{host} is a loopback, link-local, private or cluster-internal address, or resolves to \
         one, which the operator's policy does not allow (set modules.private-addresses: true \
         in the --policy file to allow it)"
    )]
    Refused {
        /// The host, as the URL names it.
        host: String,
    },
}

/// The addresses a URL's host was checked to resolve to: a resolver for hyper-util's
/// `HttpConnector` that answers every name with them (the connector sets the URL's port).
#[derive(Debug, Clone)]
pub struct CheckedAddresses(Arc<[IpAddr]>);

impl CheckedAddresses {
    /// Resolves `uri`'s host (an IP literal is taken as it is) and checks every address against
    /// `policy`; all must be allowed.
    pub async fn resolve(uri: &hyper::Uri, policy: &Ceiling) -> Result<Self, AddressError> {
        let host = uri.host().ok_or(AddressError::NoHost)?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addresses: Vec<IpAddr> = match bare.parse::<IpAddr>() {
            Ok(address) => vec![address],
            Err(_) => {
                let port = uri.port_u16().unwrap_or(0);
                let failed = |message: String| AddressError::Resolve {
                    host: host.to_owned(),
                    message,
                };
                let resolved = tokio::net::lookup_host((bare, port))
                    .await
                    .map_err(|e| failed(e.to_string()))?;
                resolved.map(|address| address.ip()).collect()
            }
        };
        if addresses.is_empty() {
            return Err(AddressError::Resolve {
                host: host.to_owned(),
                message: "no address".to_owned(),
            });
        }
        let subject = Subject::tenant(policy, None);
        for address in &addresses {
            capability::check(subject, Power::ModuleAddress(*address)).map_err(|_| {
                AddressError::Refused {
                    host: host.to_owned(),
                }
            })?;
        }
        Ok(CheckedAddresses(addresses.into()))
    }
}

impl CheckedAddresses {
    /// The checked addresses with `port`, to connect to.
    pub fn with_port(&self, port: u16) -> Vec<SocketAddr> {
        self.0.iter().map(|ip| SocketAddr::new(*ip, port)).collect()
    }
}

impl tower_service::Service<Name> for CheckedAddresses {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    /// The checked addresses, whatever the name: port 0, which the connector replaces.
    fn call(&mut self, _: Name) -> Self::Future {
        std::future::ready(Ok(self.with_port(0).into_iter()))
    }
}

#[cfg(test)]
mod tests {
    use tower_service::Service;

    use super::*;
    use wasmop_contract::ModuleSources;

    fn policy(private_addresses: bool) -> Ceiling {
        Ceiling {
            modules: ModuleSources {
                namespaces: None,
                private_addresses,
            },
            ..Ceiling::default()
        }
    }

    #[tokio::test]
    async fn private_hosts_are_refused_unless_the_policy_allows_them() {
        for url in [
            "http://127.0.0.1/m.wasm",
            "http://[::1]:8080/m.wasm",
            "http://169.254.169.254/latest/meta-data",
            "http://10.96.0.1/m.wasm",
            "http://[::ffff:127.0.0.1]/m.wasm",
            "http://localhost:1/m.wasm",
            "http://127.1/m.wasm",
        ] {
            let uri: hyper::Uri = url.parse().unwrap();
            let refused = CheckedAddresses::resolve(&uri, &policy(false)).await;
            assert!(
                matches!(refused, Err(AddressError::Refused { .. })),
                "{url}: {refused:?}"
            );
            let message = refused.unwrap_err().to_string();
            assert!(message.contains("modules.private-addresses"), "{message}");
        }
        let uri: hyper::Uri = "http://localhost:1/m.wasm".parse().unwrap();
        let allowed = CheckedAddresses::resolve(&uri, &policy(true))
            .await
            .unwrap();
        assert!(allowed.0.iter().all(|ip| ip.is_loopback()), "{allowed:?}");
    }

    #[tokio::test]
    async fn the_connector_gets_only_the_checked_addresses() {
        let uri: hyper::Uri = "http://93.184.216.34/m.wasm".parse().unwrap();
        let mut checked = CheckedAddresses::resolve(&uri, &policy(false))
            .await
            .unwrap();
        let name: Name = "rebound.example.com".parse().unwrap();
        let answered: Vec<SocketAddr> = checked.call(name).await.unwrap().collect();
        assert_eq!(answered, ["93.184.216.34:0".parse().unwrap()]);
    }
}
