//! `wasmop build`: builds plugin folders into components with the checkout's guest toolchains.

use wasmop::build::{self, Checkout, Request};
use wasmop::config::BuildArgs;

/// Builds what `args` names; the components' paths go to stdout, progress to stderr.
pub(crate) fn build_plugins(args: BuildArgs) -> anyhow::Result<()> {
    let sdk = super::guest_sdk(args.sdk)?;
    let request = Request {
        dirs: args.dirs,
        language: args.language,
        output: args.output,
    };
    build::build(&Checkout::of_sdk(&sdk), &request)?;
    Ok(())
}
