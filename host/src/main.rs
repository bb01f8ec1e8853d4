//! The `wasmop` binary: parses the command line and runs the host.

use clap::Parser;
use wasmop::config::Cli;

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}
