//! `wasmop run`: connects, loads the plugins from files, a plugin directory and
//! WasmReconcilers, and runs the manager until SIGINT or SIGTERM.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use oci_client::secrets::RegistryAuth;
use wasmop::distribution::oci::{self, OciRef, Registries, SignatureCheck, Store, Taken};

use tokio::signal::unix::{SignalKind, signal};
use wasmop::config::{LeaderArgs, RunArgs};
use wasmop::identity::Identities;
use wasmop::leader::{self, LeaderConfig};
use wasmop::manager::{Manager, ManagerOptions};
use wasmop::plugins;
use wasmop::record::Recorder;
use wasmop::runtime::{Adopted, CompileIn, CompileWorker, RuntimeConfig};
use wasmop::sources::crd::WasmReconcilers;
use wasmop::sources::dir::{self, PluginDir};

use super::{connect, registries};

pub(crate) async fn run(args: RunArgs, mut options: ManagerOptions) -> anyhow::Result<()> {
    let (config, client) = connect(args.kubeconfig.as_deref()).await?;
    options.reviews = Some(config.clone());
    if let Some(namespace) = &args.plugin_identity_namespace {
        tracing::info!(namespace, "plugins write as their own service accounts");
        options.identities = Some(Identities::new(config, namespace.clone()));
    }
    tracing::info!(namespaces = %options.namespaces, "watching");
    let limit = u64::try_from(args.pulled_store_limit).unwrap_or(u64::MAX);
    let store = Store::new(options.runtime.cache_dir.join("pulled")).with_limit(limit);
    store.settle().await;
    let mut manager = Manager::new(client.clone(), options)?;
    let _store_gauge = manager.metrics().register(store.gauge())?;
    let mut registries = registries(&args.registry, Some(store)).await?;
    registries.engine = Some(manager.handle().runtime().engine_fingerprint());
    manager.serve().await?;
    for file in &args.plugins {
        for options in plugin_options(&args, file)? {
            load(&mut manager, &args, &registries, (file, options)).await?;
        }
    }
    if args.wasm_reconcilers {
        let (plugins, limits, ceiling) =
            (manager.handle(), args.limits.clone(), args.ceiling.clone());
        let installs = args.max_concurrent_installs.into();
        let source = WasmReconcilers::new(client, plugins, limits, ceiling, registries, installs);
        let gauges = manager.metrics().register(source.install_gauges())?;
        manager.add_runnable("WasmReconcilers", async move {
            let _gauges = gauges;
            source.run().await
        });
    }
    if let Some(dir) = args.plugin_dir.clone() {
        let watcher = load_dir(&mut manager, &args, &dir).await?;
        let options = move |file: &Path| options_for(&args, file);
        let watch = watcher.watch(manager.handle(), options, dir::POLL_INTERVAL);
        manager.add_runnable(&format!("plugin directory {}", dir.display()), watch);
    }
    manager.run(shutdown_signal()).await?;
    Ok(())
}

/// The options the plugin in `file` loads with: its limits and its environment.
fn options_for(args: &RunArgs, file: &Path) -> wasmop::runtime::PluginOptions {
    plugins::options(&args.plugin_limits(file), &args.plugin_environment(file))
}

/// The options of each plugin the module in `file` runs as: one, or one per controller its
/// entry lists (each selecting it).
fn plugin_options(
    args: &RunArgs,
    file: &Path,
) -> anyhow::Result<Vec<wasmop::runtime::PluginOptions>> {
    let options = options_for(args, file);
    let controllers = args.plugin_controllers(file);
    if controllers.is_empty() {
        return Ok(vec![options]);
    }
    controllers
        .iter()
        .map(|controller| {
            let environment = options.environment.selecting(controller)?;
            Ok(wasmop::runtime::PluginOptions {
                environment,
                ..options.clone()
            })
        })
        .collect()
}

async fn load(
    manager: &mut Manager,
    args: &RunArgs,
    registries: &Registries,
    (file, options): (&Path, wasmop::runtime::PluginOptions),
) -> anyhow::Result<()> {
    let controller = options.environment.controller().unwrap_or_default();
    tracing::info!(file = %file.display(), controller, "loading plugin");
    let Some(reference) = file.to_str().filter(|f| f.starts_with(oci::SCHEME)) else {
        manager.load_plugin(file, options).await?;
        return Ok(());
    };
    let signatures = &args.ceiling.signatures;
    let keys = signatures.keys_for(&[]).map_err(anyhow::Error::msg)?;
    let verify = SignatureCheck::new(keys.as_deref(), &signatures.keys);
    let pulled = pulled(registries, reference, verify).await?;
    let mut options = options;
    if let Some(taken) = pulled.precompiled {
        let adopted = Adopted::new(reference, &taken.trusted);
        let runtime = manager.handle();
        runtime.runtime().adopt(&adopted, taken.file).await?;
        options.precompiled = Some(adopted);
    }
    manager
        .load_plugin_bytes(&pulled.file, pulled.module, options)
        .await?;
    Ok(())
}

/// Loads the plugin-directory file `file` from the `bytes` read from it, once its signature
/// verifies on those bytes (as the operator's policy asks).
async fn load_read(
    manager: &mut Manager,
    args: &RunArgs,
    file: &Path,
    bytes: Vec<u8>,
) -> anyhow::Result<()> {
    plugins::signed::check(&args.ceiling, file, &bytes).await?;
    let options = options_for(args, file);
    manager.load_plugin_bytes(file, bytes, options).await?;
    Ok(())
}

/// Pulls the `oci://` plugin `reference` (the operator named it: no address policy applies; its
/// signatures checked as `verify` says), with the file that names it after its repository (the
/// identity it runs as), in a folder named by its digest. The file is written for whoever
/// inspects the host; what loads is the module pulled in memory, never the file read back.
async fn pulled(
    registries: &Registries,
    reference: &str,
    verify: SignatureCheck<'_>,
) -> anyhow::Result<PulledPlugin> {
    let reference = OciRef::parse(reference)?;
    let pulled = registries
        .pull(&reference, &RegistryAuth::Anonymous, None, verify)
        .await
        .with_context(|| format!("pulling {reference}"))?;
    let store = registries.store.as_ref().map(Store::dir);
    let folder = store
        .unwrap_or(Path::new("."))
        .join("plugins")
        .join(pulled.digest.trim_start_matches("sha256:"));
    let name = reference
        .oci()
        .repository()
        .rsplit('/')
        .next()
        .unwrap_or("plugin");
    let file = folder.join(format!("{name}.wasm"));
    tokio::fs::create_dir_all(&folder).await?;
    tokio::fs::write(&file, &pulled.module).await?;
    tracing::info!(%reference, file = %file.display(), "pulled plugin");
    Ok(PulledPlugin {
        file,
        module: pulled.module,
        precompiled: pulled.precompiled,
    })
}

/// An `oci://` plugin, pulled into a file.
struct PulledPlugin {
    file: PathBuf,
    module: Vec<u8>,
    precompiled: Option<Taken>,
}

/// Loads the plugin directory's files as they are now; one that fails is reported, not fatal.
async fn load_dir(manager: &mut Manager, args: &RunArgs, dir: &Path) -> anyhow::Result<PluginDir> {
    let mut watcher = PluginDir::new(dir.to_owned());
    let files = watcher
        .files()
        .await
        .with_context(|| format!("reading the plugin directory {}", dir.display()))?;
    for (file, stamp) in files {
        let bytes = match watcher.read(&file).await {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::error!(file = %file.display(), "reading a plugin file: {error}");
                continue;
            }
        };
        let digest = wasmop::distribution::digest(&bytes);
        if let Err(error) = load_read(manager, args, &file, bytes).await {
            tracing::error!(file = %file.display(), "{error:#}");
        }
        watcher.loaded(&file, stamp, digest);
    }
    Ok(watcher)
}

/// The manager's settings from the command line (reading the pod's namespace, before the
/// async runtime runs).
pub(crate) fn manager_options(args: &RunArgs) -> ManagerOptions {
    let recorder = args
        .limits
        .record
        .as_ref()
        .map(|dir| Arc::new(Recorder::new(dir)));
    ManagerOptions {
        runtime: RuntimeConfig {
            cache_dir: args
                .compile_cache
                .clone()
                .unwrap_or_else(wasmop::runtime::default_cache_dir),
            cache_limit: u64::try_from(args.compile_cache_limit).unwrap_or(u64::MAX),
            ceiling: args.ceiling.clone(),
            compile: compile_in(args),
            backend: super::backend(args.compiler),
            guest_memory: args.guest_memory_budget,
            max_concurrent_compiles: args.max_concurrent_compiles.into(),
            tenant_log_rate: args.tenant_log_rate,
            operator_reserved_memory: args.operator_reserved_memory,
            operator_reserved_instances: args.operator_reserved_instances,
            wrap: recorder
                .clone()
                .map(|recorder| recorder as Arc<dyn wasmop::runtime::Wrap>),
            suspend_after: Some(args.suspend_idle_after).filter(|idle| !idle.is_zero()),
            ..RuntimeConfig::default()
        },
        namespaces: args.watched_namespaces(),
        metrics_address: args.metrics_bind_address.0,
        probe_address: args.health_probe_bind_address.0,
        leader: leader_config(&args.leader),
        grace_period: args.graceful_shutdown_timeout,
        sync_timeout: args.cache_sync_timeout,
        identities: None,
        metrics_secure: args.secure_serving(),
        reviews: None,
        webhook: args.webhooks.serving(),
        around_reviews: recorder.map(|recorder| recorder as Arc<dyn wasmop::webhook::AroundReview>),
        sharding: args.leader.sharding,
        warm_standby: args.leader.warm_standby,
        ready_requires: args.ready_requires,
    }
}

/// Where plugins are compiled: in a child process of this binary unless told otherwise.
fn compile_in(args: &RunArgs) -> CompileIn {
    let program = std::env::current_exe();
    match program {
        Ok(program) if !args.compile_in_process => CompileIn::Child(CompileWorker {
            program,
            memory_limit: args.compile_memory_limit.map(|limit| limit as u64),
        }),
        Ok(_) => CompileIn::Process,
        Err(error) => {
            tracing::warn!("compiling in this process: its own binary is not found: {error}");
            CompileIn::Process
        }
    }
}

/// The Lease to hold when leader election is on: in the pod's namespace, named for the pod.
fn leader_config(args: &LeaderArgs) -> Option<LeaderConfig> {
    if !args.leader_elect {
        return None;
    }
    let namespace = args
        .leader_election_namespace
        .clone()
        .or_else(wasmop::config::own_namespace)
        .unwrap_or_else(|| "default".to_owned());
    let pod = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "wasmop".to_owned());
    Some(LeaderConfig {
        lease_duration: args.leader_election_lease_duration,
        renew_deadline: args.leader_election_renew_deadline,
        retry_period: args.leader_election_retry_period,
        ..LeaderConfig::new(&namespace, &args.leader_election_id, leader::identity(&pod))
    })
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
    tracing::info!("shutdown signal received");
}
