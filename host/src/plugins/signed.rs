//! Plugin files the operator names (`--plugin FILE`, `--plugin-dir`) under a policy that requires
//! signatures: each must have beside it `FILE.sig`, a cosign blob signature — what `cosign
//! sign-blob --key KEY --output-signature FILE.sig FILE` writes: base64 of an ASN.1 DER ECDSA
//! signature of the file's bytes — by a key the policy trusts. A file without one passes the
//! capability check as [`Power::Unsigned`], which such a policy refuses; without the requirement
//! it loads as before. Modules from registries carry their signatures in the registry instead
//! ([`crate::distribution::oci`]).

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use wasmop_contract::Ceiling;
use wasmop_contract::capability::{self, Power, Subject};

use super::error::PluginError;

/// What a plugin file's signature file is named after it: `webapp.wasm.sig`.
pub const SIGNATURE_SUFFIX: &str = ".sig";

/// The largest signature file read.
const MAX_SIGNATURE_FILE: u64 = 4 << 10;

/// The trusted key that signed the plugin `file` (whose bytes are `bytes`), if one did; an
/// error when none did and the operator's `ceiling` requires one.
pub async fn check(
    ceiling: &Ceiling,
    file: &Path,
    bytes: &[u8],
) -> Result<Option<String>, PluginError> {
    if let Some(key) = signer(ceiling, file, bytes).await {
        return Ok(Some(key));
    }
    let unsigned = |denied: capability::Denied| PluginError::Unsigned {
        file: file.display().to_string(),
        denied: denied.to_string(),
    };
    capability::check(Subject::tenant(ceiling, None), Power::Unsigned).map_err(unsigned)?;
    Ok(None)
}

/// The name of the key of the policy that signed `bytes`, by the signature beside `file`.
async fn signer(ceiling: &Ceiling, file: &Path, bytes: &[u8]) -> Option<String> {
    let keys = &ceiling.signatures.keys;
    if keys.is_empty() {
        return None;
    }
    let mut name = file.file_name()?.to_os_string();
    name.push(SIGNATURE_SUFFIX);
    let signature_file = file.with_file_name(name);
    let size = tokio::fs::metadata(&signature_file).await.ok()?.len();
    if size > MAX_SIGNATURE_FILE {
        return None;
    }
    let text = tokio::fs::read(&signature_file).await.ok()?;
    let der = STANDARD.decode(text.trim_ascii()).ok()?;
    let key = keys.iter().find(|key| key.verifies(bytes, &der))?;
    Some(key.name().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Signer;
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    use wasmop_contract::{Signatures, TrustedKey};

    fn policy(key: &p256::ecdsa::SigningKey, require: bool) -> Ceiling {
        let pem = key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        Ceiling {
            signatures: Signatures {
                keys: vec![TrustedKey::from_pem("release", &pem).unwrap()],
                require,
            },
            ..Ceiling::default()
        }
    }

    #[tokio::test]
    async fn a_file_loads_under_a_signature_requirement_only_with_a_trusted_signature_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("webapp.wasm");
        let bytes = b"\0asm a component".to_vec();
        let key = p256::ecdsa::SigningKey::from_slice(&[3; 32]).unwrap();
        let stranger = p256::ecdsa::SigningKey::from_slice(&[4; 32]).unwrap();
        let required = policy(&key, true);
        let unsigned = check(&required, &file, &bytes)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            unsigned.contains("webapp.wasm") && unsigned.contains("signatures.require"),
            "{unsigned}"
        );
        let sign = |key: &p256::ecdsa::SigningKey, bytes: &[u8]| {
            let signature: p256::ecdsa::Signature = key.sign(bytes);
            STANDARD.encode(signature.to_der().as_bytes())
        };
        let signature_file = dir.path().join("webapp.wasm.sig");
        std::fs::write(&signature_file, sign(&stranger, &bytes)).unwrap();
        assert!(check(&required, &file, &bytes).await.is_err());
        std::fs::write(&signature_file, sign(&key, b"another component") + "\n").unwrap();
        assert!(check(&required, &file, &bytes).await.is_err());
        std::fs::write(&signature_file, sign(&key, &bytes) + "\n").unwrap();
        assert_eq!(
            check(&required, &file, &bytes).await.unwrap().as_deref(),
            Some("release")
        );
        let optional = policy(&key, false);
        std::fs::remove_file(&signature_file).unwrap();
        assert_eq!(check(&optional, &file, &bytes).await.unwrap(), None);
    }
}
