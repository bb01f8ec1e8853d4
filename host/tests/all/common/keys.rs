//! Signing keys for tests of signed modules, made without cosign.

/// A P-256 key pair made without cosign: the private key (PKCS#8 PEM, as `wasmop sign` reads
/// it) and the public key (PEM), written to `dir/name.pem` and `dir/name.pub`.
pub fn key_pair(dir: &std::path::Path, name: &str, seed: u8) -> anyhow::Result<(String, String)> {
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let key = p256::ecdsa::SigningKey::from_slice(&[seed; 32])?;
    let private = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub"));
    std::fs::write(&private, key.to_pkcs8_pem(LineEnding::LF)?.as_bytes())?;
    std::fs::write(
        &public,
        key.verifying_key().to_public_key_pem(LineEnding::LF)?,
    )?;
    Ok((private.display().to_string(), public.display().to_string()))
}
