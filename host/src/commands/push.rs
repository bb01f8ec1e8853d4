//! `wasmop push`: a plugin component to a registry as a Wasm OCI artifact; prints the reference
//! pinned by the digest, ready for `--plugin oci://…` or a WasmReconciler's `spec.module.oci`.

use anyhow::Context;
use wasmop::config::PushArgs;

use super::{credentials, registries};

pub(crate) async fn push(args: PushArgs) -> anyhow::Result<()> {
    let reference: oci_client::Reference = args
        .reference
        .trim_start_matches(wasmop::plugins::oci::SCHEME)
        .parse()
        .with_context(|| format!("{} is not REGISTRY/REPOSITORY[:TAG]", args.reference))?;
    let module = tokio::fs::read(&args.plugin)
        .await
        .with_context(|| format!("reading {}", args.plugin.display()))?;
    let auth = credentials(&args.credentials)?;
    let registries = registries(&args.registry, None).await?;
    eprintln!(
        "pushing {} ({} bytes) to {reference}",
        args.plugin.display(),
        module.len()
    );
    let digest = registries
        .push(&reference, module, &auth)
        .await
        .with_context(|| format!("pushing to {reference}"))?;
    println!(
        "{}/{}@{digest}",
        reference.resolve_registry(),
        reference.repository()
    );
    Ok(())
}
