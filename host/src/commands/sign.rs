//! `wasmop sign`: a pushed plugin signed with a private key, the signature pushed beside it in
//! cosign's layout, so `wasmop` and `cosign verify --key` both check it against the public key.

use anyhow::Context;
use p256::pkcs8::DecodePrivateKey;
use wasmop::config::SignArgs;
use wasmop::distribution::oci::OciRef;

use super::{credentials, registries};

pub(crate) async fn sign(args: SignArgs) -> anyhow::Result<()> {
    let reference = OciRef::parse(&args.reference)?;
    let pem = tokio::fs::read_to_string(&args.key)
        .await
        .with_context(|| format!("reading {}", args.key.display()))?;
    let key = p256::ecdsa::SigningKey::from_pkcs8_pem(&pem).map_err(|_| {
        anyhow::anyhow!(
            "{} is not an unencrypted ECDSA P-256 private key in PKCS#8 PEM (BEGIN PRIVATE KEY)",
            args.key.display()
        )
    })?;
    let auth = credentials(&args.credentials)?;
    let registries = registries(&args.registry, None).await?;
    let signatures = registries
        .sign(&reference, &key, &auth)
        .await
        .with_context(|| format!("signing {reference}"))?;
    eprintln!("signed {reference}; the signature is {signatures}");
    Ok(())
}
