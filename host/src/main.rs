//! The `wasmop` binary: reads the configuration, connects, and runs the manager.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

use tokio::signal::unix::{SignalKind, signal};
use wasmop::config::{
    Cli, Command, ConfigError, LeaderArgs, LogFormat, NewArgs, PluginsArgs, RbacArgs, RunArgs,
    TestArgs,
};
use wasmop::identity::Identities;
use wasmop::leader::{self, LeaderConfig};
use wasmop::manager::{Manager, ManagerOptions};
use wasmop::plugins::crd::WasmReconcilers;
use wasmop::plugins::dir::{self, PluginDir};
use wasmop::runtime::{CompileIn, CompileWorker, RuntimeConfig};
use wasmop::scaffold::{self, PrimaryKind};
use wasmop::testing::{Fixture, Recorder, Tester, fixture_files};

/// jemalloc with background purging hands a plugin compilation's transient memory (hundreds of
/// MiB for a large guest) back to the system within a second (`dirty_decay_ms`, set at build time
/// in `.cargo/config.toml`); glibc's malloc keeps most of it.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    let cli = match Cli::load() {
        Ok(cli) => cli,
        Err(ConfigError::Cli(error)) => error.exit(),
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(2);
        }
    };
    match &cli.command {
        Command::Run(args) => init_logging(args.log_format),
        _ => init_logging(LogFormat::Text),
    }
    if let Command::CompileWorker(args) = &cli.command {
        return Ok(wasmop::runtime::run_worker(args.memory_limit)?);
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    match cli.command {
        Command::Run(args) => {
            let options = manager_options(&args);
            runtime.block_on(run(args, options))
        }
        Command::Plugins(args) => runtime.block_on(list_plugins(args)),
        Command::Rbac(args) => runtime.block_on(print_rbac(args)),
        Command::New(args) => new_plugin(args),
        Command::Test(args) => {
            if !runtime.block_on(test_plugin(args))? {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::CompileWorker(_) => unreachable!("handled before the async runtime starts"),
    }
}

/// Logs to stderr at the level `RUST_LOG` sets (`info` when unset), in `format`.
fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let log = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => log.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => log
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}

/// Prints the RBAC of the plugin in `args.plugin`'s own identity, as YAML documents.
async fn print_rbac(args: RbacArgs) -> anyhow::Result<()> {
    let runtime = wasmop::runtime::Runtime::new(RuntimeConfig::default())?;
    let registration = &runtime.describe(&args.plugin).await?;
    let kinds = registration
        .cached_kinds()
        .chain(registration.permissions.iter().map(|p| &p.kind));
    let mut plurals = std::collections::HashMap::new();
    let client = match &args.kubeconfig {
        Some(path) => Some(connect(Some(path)).await?.1),
        None => None,
    };
    for kind in kinds {
        let plural = match &client {
            Some(client) => {
                kube::discovery::pinned_kind(client, kind)
                    .await
                    .with_context(|| format!("looking up {} {}", kind.api_version(), kind.kind))?
                    .0
                    .plural
            }
            None => kube::core::ApiResource::from_gvk(kind).plural,
        };
        plurals.insert(kind.clone(), plural);
    }
    let placement = wasmop::rbac::Placement {
        operator_namespace: args
            .operator_namespace
            .unwrap_or_else(|| args.namespace.clone()),
        namespace: args.namespace,
        operator: args.operator,
    };
    let manifests = wasmop::rbac::manifests(registration, &placement, |kind| plurals[kind].clone());
    if client.is_none() {
        println!("# Resource names guessed from kind names; --kubeconfig looks them up.");
    }
    for manifest in manifests {
        println!("---\n{}", serde_saphyr::to_string(&manifest)?.trim_end());
    }
    Ok(())
}

/// Makes the plugin folder `args` asks for and prints what to do next.
fn new_plugin(args: NewArgs) -> anyhow::Result<()> {
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk");
    let sdk = args.sdk.unwrap_or(built_from);
    let sdk = sdk.canonicalize().with_context(|| {
        format!(
            "the guest SDKs are not at {} (give --sdk <checkout>/guest-sdk)",
            sdk.display()
        )
    })?;
    let kind = PrimaryKind::parse(&args.kind)?;
    let exe = std::env::current_exe()?;
    let wasmop = scaffold::wasmop_command(&exe, std::env::var_os("PATH").as_deref());
    let created = scaffold::create(args.language, &args.name, &kind, &args.dir, &sdk, &wasmop)?;
    for file in &created.files {
        println!("created {}", file.display());
    }
    let folder = created.folder.display();
    let component = created.component.display();
    println!(
        "\nnext:\n  cd {folder}\n  {}\n  {wasmop} test {component} fixtures/",
        created.build
    );
    println!("  {wasmop} run --plugin {component}");
    if wasmop != "wasmop" {
        let host = scaffold::host_crate(&sdk);
        println!(
            "\n(the `wasmop` on your PATH, if any, is not this one: `cargo install --path {}` installs it)",
            host.display()
        );
    }
    Ok(())
}

/// Runs the plugin in `args.plugin` against every fixture `args.fixtures` names, printing each
/// one's verdict and differences (and with `--accept`, rewriting the expectations of those that
/// failed); false if any failed.
async fn test_plugin(args: TestArgs) -> anyhow::Result<bool> {
    let runtime = wasmop::runtime::Runtime::new(RuntimeConfig::default())?;
    let tester = Tester::load(&runtime, &args.plugin).await?;
    let mut paths = args.fixtures.clone();
    if let Some(dir) = &args.replay {
        let folder = Recorder::folder(dir, tester.plugin().name());
        anyhow::ensure!(
            folder.is_dir(),
            "no recordings of plugin {} in {} ({} is not a folder)",
            tester.plugin().name(),
            dir.display(),
            folder.display()
        );
        paths.push(folder);
    }
    let files = fixture_files(&paths)?;
    anyhow::ensure!(!files.is_empty(), "no fixture files in {paths:?}");
    let mut failed = 0;
    for file in &files {
        let passed = test_fixture(&tester, file, args.accept).await?;
        failed += usize::from(!passed);
    }
    let plugin = tester.plugin().name();
    println!("{plugin}: {} fixtures, {failed} failed", files.len());
    Ok(failed == 0)
}

/// Runs the fixture in `file`, printing its verdict and differences (a file that is no fixture
/// fails with what is wrong), and with `accept`, rewriting the expectations that differ in the
/// file's own text; whether it passed.
async fn test_fixture(tester: &Tester, file: &Path, accept: bool) -> anyhow::Result<bool> {
    let fixture = match Fixture::load(file) {
        Ok(fixture) => fixture,
        Err(error) => {
            println!("FAIL  {}", file.display());
            error
                .to_string()
                .lines()
                .for_each(|line| println!("        {line}"));
            return Ok(false);
        }
    };
    let checked = tester.check(&fixture).await;
    let name = fixture.name.clone();
    let name = name.unwrap_or_else(|| file.display().to_string());
    let verdict = if checked.passed() { "ok  " } else { "FAIL" };
    println!("{verdict}  {name} ({})", file.display());
    for difference in &checked.differences {
        println!("        {difference}");
    }
    if accept && !checked.passed() {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let expected = checked.accepted(&fixture.expect);
        let edited = wasmop::testing::accept(&text, &fixture.expect, &expected);
        let edited = edited.unwrap_or_else(|error| {
            println!("        written anew, its formatting not kept: {error}");
            let whole = Fixture {
                expect: expected,
                ..fixture
            };
            whole.to_yaml()
        });
        std::fs::write(file, edited).with_context(|| format!("rewriting {}", file.display()))?;
        println!(
            "        accepted: {} now expects what was done",
            file.display()
        );
    }
    Ok(checked.passed())
}

/// Prints the plugins of the host at `args.address`.
async fn list_plugins(args: PluginsArgs) -> anyhow::Result<()> {
    let (status, body) = wasmop::http::fetch(&args.address, "/plugins").await?;
    anyhow::ensure!(
        status.is_success(),
        "wasmop at {} answered {status}: {body}",
        args.address
    );
    if args.json {
        println!("{body}");
        return Ok(());
    }
    let statuses: Vec<wasmop::plugins::PluginStatus> =
        serde_json::from_str(&body).context("reading the plugin statuses")?;
    print!("{}", wasmop::plugins::table(&statuses));
    Ok(())
}

async fn run(args: RunArgs, mut options: ManagerOptions) -> anyhow::Result<()> {
    let (config, client) = connect(args.kubeconfig.as_deref()).await?;
    options.reviews = Some(config.clone());
    if let Some(namespace) = &args.plugin_identity_namespace {
        tracing::info!(namespace, "plugins write as their own service accounts");
        options.identities = Some(Identities::new(config, namespace.clone()));
    }
    tracing::info!(namespaces = %options.namespaces, "watching");
    let mut manager = Manager::new(client.clone(), options)?;
    manager.serve().await?;
    for file in &args.plugins {
        load(&mut manager, &args, file).await?;
    }
    if args.wasm_reconcilers {
        let (plugins, limits) = (manager.handle(), args.limits.clone());
        let source = WasmReconcilers::new(client, plugins, limits, args.ceiling.clone());
        manager.add_runnable("WasmReconcilers", source.run());
    }
    if let Some(dir) = args.plugin_dir.clone() {
        let watcher = load_dir(&mut manager, &args, &dir).await?;
        let options = move |file: &Path| args.plugin_options(file);
        let watch = watcher.watch(manager.handle(), options, dir::POLL_INTERVAL);
        manager.add_runnable(&format!("plugin directory {}", dir.display()), watch);
    }
    manager.run(shutdown_signal()).await?;
    Ok(())
}

async fn load(manager: &mut Manager, args: &RunArgs, file: &Path) -> anyhow::Result<()> {
    tracing::info!(file = %file.display(), "loading plugin");
    manager.load_plugin(file, args.plugin_options(file)).await?;
    Ok(())
}

/// Loads the plugin directory's files as they are now; one that fails is reported, not fatal.
async fn load_dir(manager: &mut Manager, args: &RunArgs, dir: &Path) -> anyhow::Result<PluginDir> {
    let mut watcher = PluginDir::new(dir.to_owned());
    let files = watcher
        .files()
        .await
        .with_context(|| format!("reading the plugin directory {}", dir.display()))?;
    for (file, stamp) in files {
        let bytes = tokio::fs::read(&file).await?;
        if let Err(error) = load(manager, args, &file).await {
            tracing::error!(file = %file.display(), "{error:#}");
        }
        watcher.loaded(&file, stamp, &bytes);
    }
    Ok(watcher)
}

/// The manager's settings from the command line (reading the pod's namespace, before the
/// async runtime runs).
fn manager_options(args: &RunArgs) -> ManagerOptions {
    ManagerOptions {
        runtime: RuntimeConfig {
            cache_dir: args.compile_cache.clone(),
            ceiling: args.ceiling.clone(),
            compile: compile_in(args),
            guest_memory: args.guest_memory_budget,
            wrap: args
                .limits
                .record
                .as_ref()
                .map(|dir| Arc::new(Recorder::new(dir)) as Arc<dyn wasmop::runtime::Wrap>),
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
        sharding: args.leader.sharding,
        warm_standby: args.leader.warm_standby,
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

/// The kubeconfig given, else in-cluster configuration or the default kubeconfig.
async fn connect(kubeconfig: Option<&Path>) -> anyhow::Result<(kube::Config, kube::Client)> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig given and none found")?,
    };
    let client = kube::Client::try_from(config.clone())?;
    Ok((config, client))
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
