//! The `wasmop` binary: reads the configuration, connects, and runs the manager.

use std::io::IsTerminal;
use std::process::ExitCode;

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

/// Runs the command; an error is the user's to read, so it prints as one line of causes and no
/// backtrace, whatever `RUST_BACKTRACE` says (a panic, a bug of ours, still prints one).
fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", causes(&error));
            ExitCode::FAILURE
        }
    }
}

/// The error and each cause it does not already quote, joined by `: `: the library's errors name
/// their source in their own message, a context added here does not.
fn causes(error: &anyhow::Error) -> String {
    error
        .chain()
        .skip(1)
        .fold(error.to_string(), |line, cause| {
            let cause = cause.to_string();
            if line.contains(&cause) {
                line
            } else {
                format!("{line}: {cause}")
            }
        })
}

/// Loads the configuration and runs the command it names.
fn run() -> anyhow::Result<ExitCode> {
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
        wasmop::runtime::run_worker(args.memory_limit, commands::backend(args.compiler))?;
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let done = match cli.command {
        Command::Run(args) => {
            let options = commands::run::manager_options(&args);
            runtime.block_on(commands::run::run(args, options))
        }
        Command::Plugins(args) => runtime.block_on(commands::plugins::list_plugins(args)),
        Command::Rbac(args) => runtime.block_on(commands::rbac::print_rbac(args)),
        Command::New(args) => commands::new::new_plugin(args),
        Command::Generate(args) => commands::new::generate_types(args),
        Command::Build(args) => commands::build::build_plugins(args),
        Command::Push(args) => runtime.block_on(commands::push::push(args)),
        Command::Pull(args) => runtime.block_on(commands::pull::pull(args)),
        Command::Sign(args) => runtime.block_on(commands::sign::sign(args)),
        Command::Migrate(args) => runtime.block_on(commands::migrate::migrate(args)),
        Command::Test(args) => {
            let passed = runtime.block_on(commands::test::test_plugin(args))?;
            return Ok(if passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        Command::CompileWorker(_) => unreachable!("handled before the async runtime starts"),
    };
    done.map(|()| ExitCode::SUCCESS)
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

#[cfg(test)]
mod tests {
    use super::causes;

    #[derive(Debug, thiserror::Error)]
    #[error("reading plugin p.wasm: {source}")]
    struct Quoting {
        source: std::io::Error,
    }

    fn io() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")
    }

    #[test]
    fn a_context_is_followed_by_its_cause_and_a_quoted_cause_is_not_repeated() {
        let context = anyhow::Error::from(io()).context("starting the async runtime");
        assert_eq!(causes(&context), "starting the async runtime: no such file");
        let quoting = anyhow::Error::from(Quoting { source: io() }).context("testing p");
        assert_eq!(
            causes(&quoting),
            "testing p: reading plugin p.wasm: no such file"
        );
    }
}
