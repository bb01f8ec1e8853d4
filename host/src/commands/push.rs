//! `wasmop push`: a plugin component to a registry as a Wasm OCI artifact; prints the reference
//! pinned by the digest, ready for `--plugin oci://…` or a WasmReconciler's `spec.module.oci`.

use anyhow::Context;
use wasmop::config::PushArgs;
use wasmop::distribution::oci::Precompiled;
use wasmop::runtime::{Backend, Runtime, RuntimeConfig};

use super::{credentials, registries};

pub(crate) async fn push(args: PushArgs) -> anyhow::Result<()> {
    let reference: oci_client::Reference = args
        .reference
        .trim_start_matches(wasmop::distribution::oci::SCHEME)
        .parse()
        .with_context(|| format!("{} is not REGISTRY/REPOSITORY[:TAG]", args.reference))?;
    let module = tokio::fs::read(&args.plugin)
        .await
        .with_context(|| format!("reading {}", args.plugin.display()))?;
    let auth = credentials(&args.credentials)?;
    let registries = registries(&args.registry, None).await?;
    let precompiled = match args.precompile {
        true => Some(precompiled(&module, super::backend(args.compiler)).await?),
        false => None,
    };
    eprintln!(
        "pushing {} ({} bytes) to {reference}",
        args.plugin.display(),
        module.len()
    );
    let digest = registries
        .push(&reference, module, precompiled, &auth)
        .await
        .with_context(|| format!("pushing to {reference}"))?;
    println!(
        "{}/{}@{digest}",
        reference.resolve_registry(),
        reference.repository()
    );
    Ok(())
}

/// `module` compiled ahead of time by `backend` on an engine of this build's settings.
async fn precompiled(module: &[u8], backend: Backend) -> anyhow::Result<Precompiled> {
    let cache = tempfile::tempdir()?;
    let config = RuntimeConfig {
        cache_dir: cache.path().to_owned(),
        backend,
        ..RuntimeConfig::default()
    };
    let runtime = Runtime::new(config)?;
    let engine = runtime.engine_fingerprint();
    eprintln!("compiling ahead of time for {engine} (a large plugin takes a minute)");
    let module = module.to_vec();
    let artifact = tokio::task::spawn_blocking(move || runtime.precompile(&module)).await?;
    let artifact = artifact.map_err(|e| anyhow::anyhow!("compiling: {e:#}"))?;
    eprintln!("compiled: {} bytes", artifact.len());
    Ok(Precompiled { engine, artifact })
}
