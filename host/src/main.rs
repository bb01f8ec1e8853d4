//! The `wasmop` binary: parses the command line and runs the host.

use std::io::IsTerminal;

use anyhow::Context;
use clap::Parser;
use std::net::SocketAddr;
use std::sync::Arc;
use tracing_subscriber::EnvFilter;

use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinHandle;
use wasmop::config::{Cli, Command, LeaderArgs, RunArgs};
use wasmop::http::{self, Endpoints};
use wasmop::leader::{self, Elector, LeaderConfig};
use wasmop::manager::Manager;
use wasmop::runtime::{PluginOptions, RuntimeConfig};

/// jemalloc with background purging hands a plugin compilation's transient memory (hundreds of
/// MiB for a large guest) back to the system within seconds; glibc's malloc keeps most of it.
/// Where a pod finds its own namespace.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match Cli::parse().command {
        Command::Run(args) => run(args).await,
    }
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    let client = connect(&args).await?;
    let runtime = RuntimeConfig {
        cache_dir: args.compile_cache.clone(),
        ..RuntimeConfig::default()
    };
    let mut manager = Manager::new(client.clone(), runtime)?;
    let endpoints = Endpoints::new(manager.metrics().clone());
    let servers = serve(&args, &endpoints).await?;
    let mut plugins = Vec::new();
    for file in &args.plugins {
        let plugin = manager.load_plugin(file, PluginOptions::default()).await?;
        let registration = plugin.registration();
        tracing::info!(plugin = %registration.name, version = %registration.version, file = %file.display(), "plugin loaded");
        plugins.push(plugin);
    }
    endpoints.set_ready(true);
    let mut shutdown = std::pin::pin!(shutdown_signal());
    let mut elector = elector(&args.leader, client)?;
    if let Some(elector) = &mut elector {
        let lease = elector.config().name.clone();
        manager.metrics().set_leader(&lease, false);
        tokio::select! {
            _ = elector.acquire() => manager.metrics().set_leader(&lease, true),
            _ = &mut shutdown => return Ok(()),
        }
    }
    for plugin in plugins {
        manager.start_plugin(plugin).await?;
    }
    let lost = async {
        match &mut elector {
            Some(elector) => elector.hold().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        lost = lost => {
            // As controller-runtime does: exit, and let the Deployment restart us as a follower.
            return Err(anyhow::Error::new(lost).context("stopping at once"));
        }
        _ = &mut shutdown => {}
    }
    tracing::info!("stopping: letting in-flight reconciles finish");
    endpoints.set_ready(false);
    manager.stop().await;
    if let Some(elector) = &mut elector {
        elector.release().await;
    }
    servers.iter().for_each(|server| server.abort());
    Ok(())
}

/// The kubeconfig given, else in-cluster configuration or the default kubeconfig.
async fn connect(args: &RunArgs) -> anyhow::Result<kube::Client> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig given and none found")?,
    };
    Ok(kube::Client::try_from(config)?)
}

/// Serves the endpoints on the metrics and probe addresses (once if they are the same).
async fn serve(args: &RunArgs, endpoints: &Arc<Endpoints>) -> anyhow::Result<Vec<JoinHandle<()>>> {
    let mut addresses: Vec<SocketAddr> = [
        args.metrics_bind_address.0,
        args.health_probe_bind_address.0,
    ]
    .into_iter()
    .flatten()
    .collect();
    addresses.dedup();
    let mut servers = Vec::new();
    for address in addresses {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("listening on {address}"))?;
        tracing::info!(%address, "serving /metrics, /healthz and /readyz");
        servers.push(tokio::spawn(http::serve(listener, endpoints.clone())));
    }
    Ok(servers)
}

/// The candidate for the Lease when leader election is on.
fn elector(args: &LeaderArgs, client: kube::Client) -> anyhow::Result<Option<Elector>> {
    if !args.leader_elect {
        return Ok(None);
    }
    let namespace = args.leader_election_namespace.clone().unwrap_or_else(|| {
        std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE)
            .map(|ns| ns.trim().to_owned())
            .unwrap_or_else(|_| "default".to_owned())
    });
    let pod = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "wasmop".to_owned());
    let config = LeaderConfig {
        lease_duration: args.leader_election_lease_duration,
        renew_deadline: args.leader_election_renew_deadline,
        retry_period: args.leader_election_retry_period,
        ..LeaderConfig::new(&namespace, &args.leader_election_id, leader::identity(&pod))
    };
    tracing::info!(lease = %config.name, namespace = %config.namespace, identity = %config.identity, "waiting to lead");
    Ok(Some(Elector::new(client, config)?))
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(terminate) => terminate,
        Err(error) => {
            tracing::warn!("cannot watch for SIGTERM: {error}");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
