//! `wasmop pull`: a plugin component from a registry into a file, checked against the digest
//! its reference pins.

use anyhow::Context;
use wasmop::config::PullArgs;
use wasmop::contract::TrustedKey;
use wasmop::distribution::oci::{OciRef, SignatureCheck};

use super::{credentials, registries};

pub(crate) async fn pull(args: PullArgs) -> anyhow::Result<()> {
    let reference = OciRef::parse(&args.reference)?;
    let auth = credentials(&args.credentials)?;
    let registries = registries(&args.registry, None).await?;
    eprintln!("pulling {reference}");
    let keys = trusted(&args.keys).await?;
    let pulled = registries
        .pull(
            &reference,
            &auth,
            None,
            SignatureCheck::new(keys.as_deref(), &[]),
        )
        .await?;
    if let Some(key) = &pulled.signed_by {
        eprintln!("the signature by {key} verifies");
    }
    tokio::fs::write(&args.output, &pulled.module)
        .await
        .with_context(|| format!("writing {}", args.output.display()))?;
    eprintln!(
        "wrote {} ({} bytes, {})",
        args.output.display(),
        pulled.module.len(),
        wasmop::distribution::digest(&pulled.module)
    );
    Ok(())
}

/// The keys `files` hold, each named by its file name; `None` when there are none.
async fn trusted(files: &[std::path::PathBuf]) -> anyhow::Result<Option<Vec<TrustedKey>>> {
    if files.is_empty() {
        return Ok(None);
    }
    let mut keys = Vec::new();
    for file in files {
        let pem = tokio::fs::read_to_string(file)
            .await
            .with_context(|| format!("reading {}", file.display()))?;
        let key =
            TrustedKey::from_pem(&file.display().to_string(), &pem).map_err(anyhow::Error::msg)?;
        keys.push(key);
    }
    Ok(Some(keys))
}
