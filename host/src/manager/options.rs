//! How a manager is set up, and how it fails.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::cache::Namespaces;
use crate::http::{self, ReadyRequires};
use crate::identity::Identities;
use crate::leader::{LeaderConfig, LeaderError};
use crate::plugins::PluginError;
use crate::runtime::{RuntimeConfig, RuntimeError};
use crate::webhook::{AroundReview, WebhookServing};

/// The manager could not start, keep running, or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The runtime could not be built or a plugin did not load.
    #[error(transparent)]
    Load(#[from] RuntimeError),
    /// A plugin could not be installed or started.
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// An endpoint address could not be listened on.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The secure metrics listener's certificate could not be read or made.
    #[error(transparent)]
    Tls(#[from] http::TlsError),
    /// Leader election was misconfigured.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// The Lease was lost.
    #[error("{0}")]
    LeaseLost(String),
    /// A plugin source ended (or panicked) while the manager ran.
    #[error("the plugin source {name} stopped: {reason}")]
    SourceEnded {
        /// The source.
        name: String,
        /// How it ended.
        reason: String,
    },
    /// The access reviews' own client could not be built.
    #[error("cannot build the client for access reviews: {0}")]
    ReviewClient(#[source] kube::Error),
    /// Sharding was asked for without a leader election to name the group.
    #[error("sharding needs leader election (--leader-elect): its Lease names the group")]
    ShardingWithoutElection,
    /// Reconciles were still running when the grace period ended.
    #[error("reconciles still running after the {0:?} grace period were abandoned")]
    GracePeriod(Duration),
}

/// How the manager is set up.
#[derive(Debug, Clone)]
pub struct ManagerOptions {
    /// The WebAssembly runtime's settings.
    pub runtime: RuntimeConfig,
    /// The namespaces the cache watches.
    pub namespaces: Namespaces,
    /// Where `/metrics` is served, if anywhere.
    pub metrics_address: Option<SocketAddr>,
    /// Where `/healthz` and `/readyz` are served, if anywhere.
    pub probe_address: Option<SocketAddr>,
    /// The Lease to hold while controllers run; without one they run at once.
    pub leader: Option<LeaderConfig>,
    /// How long in-flight reconciles may take to finish when stopping.
    pub grace_period: Duration,
    /// How long a plugin version's informers may take to sync before its start fails.
    pub sync_timeout: Duration,
    /// Each plugin's own identity to write as; the operator's when `None`.
    pub identities: Option<Identities>,
    /// Serve `/metrics` and `/plugins` over HTTPS to authorized callers only (probes stay open).
    pub metrics_secure: Option<http::SecureServing>,
    /// The connection settings the secure listener's access reviews use, on a connection pool
    /// of their own (so they never queue with the Lease's renewals or the plugins' writes); the
    /// manager's client when `None`.
    pub reviews: Option<kube::Config>,
    /// Serve the plugins' webhooks (on every replica), and write their configurations (while
    /// leading).
    pub webhook: Option<WebhookServing>,
    /// Installed around every review the webhook server answers (`wasmop run --record`).
    pub around_reviews: Option<Arc<dyn AroundReview>>,
    /// Shard each plugin's objects across the replicas of the `leader` election's group.
    pub sharding: bool,
    /// Inform the loaded plugins' kinds while the controllers wait for a Lease.
    pub warm_standby: bool,
    /// Which plugin sources `/readyz` waits for.
    pub ready_requires: ReadyRequires,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            runtime: RuntimeConfig::default(),
            namespaces: Namespaces::All,
            metrics_address: None,
            probe_address: None,
            leader: None,
            grace_period: Duration::from_secs(30),
            sync_timeout: Duration::from_secs(120),
            identities: None,
            metrics_secure: None,
            reviews: None,
            webhook: None,
            around_reviews: None,
            sharding: false,
            warm_standby: false,
            ready_requires: ReadyRequires::default(),
        }
    }
}
