//! The `wasmop` binary: reads the configuration, connects, and runs the manager.

use std::io::IsTerminal;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

use wasmop::config::{Cli, Command, ConfigError, LogFormat};
use wasmop::logging::OneLine;

/// jemalloc with background purging hands a plugin compilation's transient memory (hundreds of
/// MiB for a large guest) back to the system within a second (`dirty_decay_ms`, set at build time
/// in `.cargo/config.toml`); glibc's malloc keeps most of it.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod commands;

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
        return Ok(wasmop::runtime::run_worker(
            args.memory_limit,
            commands::backend(args.compiler),
        )?);
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    match cli.command {
        Command::Run(args) => {
            let options = commands::run::manager_options(&args);
            runtime.block_on(commands::run::run(args, options))
        }
        Command::Plugins(args) => runtime.block_on(commands::plugins::list_plugins(args)),
        Command::Rbac(args) => runtime.block_on(commands::rbac::print_rbac(args)),
        Command::New(args) => commands::new::new_plugin(args),
        Command::Build(args) => commands::build::build_plugins(args),
        Command::Push(args) => runtime.block_on(commands::push::push(args)),
        Command::Pull(args) => runtime.block_on(commands::pull::pull(args)),
        Command::Sign(args) => runtime.block_on(commands::sign::sign(args)),
        Command::Migrate(args) => runtime.block_on(commands::migrate::migrate(args)),
        Command::Test(args) => {
            if !runtime.block_on(commands::test::test_plugin(args))? {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::CompileWorker(_) => unreachable!("handled before the async runtime starts"),
    }
}

/// Logs to stderr at the level `RUST_LOG` sets (`info` when unset), in `format`, one line per
/// event whatever a guest wrote into it.
fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = format == LogFormat::Text && std::io::stderr().is_terminal();
    let log = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(OneLine::new(std::io::stderr, ansi));
    match format {
        LogFormat::Text => log.with_ansi(ansi).init(),
        LogFormat::Json => log
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}
