//! The `wasmop` binary: parses the command line and runs the host.

use std::io::IsTerminal;

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;
use wasmop::config::{Cli, Command, RunArgs};
use wasmop::http::{self, Endpoints};
use wasmop::manager::Manager;
use wasmop::runtime::{PluginOptions, RuntimeConfig};

/// jemalloc with background purging hands a plugin compilation's transient memory (hundreds of
/// MiB for a large guest) back to the system within seconds; glibc's malloc keeps most of it.
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
    let client = kube::Client::try_from(config)?;
    let runtime = RuntimeConfig {
        cache_dir: args.compile_cache.clone(),
        ..RuntimeConfig::default()
    };
    let mut manager = Manager::new(client, runtime)?;
    let endpoints = Endpoints::new(manager.metrics().clone());
    let addresses = [
        args.metrics_bind_address.0,
        args.health_probe_bind_address.0,
    ];
    let mut servers = Vec::new();
    for address in addresses.into_iter().flatten() {
        if servers.iter().any(|(bound, _)| *bound == address) {
            continue;
        }
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("listening on {address}"))?;
        tracing::info!(%address, "serving /metrics, /healthz and /readyz");
        servers.push((
            address,
            tokio::spawn(http::serve(listener, endpoints.clone())),
        ));
    }
    for plugin in &args.plugins {
        let controller = manager.add_plugin(plugin, PluginOptions::default()).await?;
        let registration = controller.plugin().registration();
        tracing::info!(plugin = %registration.name, version = %registration.version, file = %plugin.display(), "plugin running");
    }
    endpoints.set_ready(true);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    tracing::info!("stopping: letting in-flight reconciles finish");
    endpoints.set_ready(false);
    manager.stop().await;
    servers.iter().for_each(|(_, server)| server.abort());
    Ok(())
}
