//! The digests that pin what runs: `sha256:<hex>` of a module, a manifest or a layer, as OCI
//! writes them.

use sha2::{Digest, Sha256};

/// A module's digest as `sha256:<hex>`.
pub fn digest(bytes: &[u8]) -> String {
    digest_of(Sha256::new_with_prefix(bytes))
}

/// The digest, as `sha256:<hex>`, of what `hasher` was fed.
pub fn digest_of(hasher: Sha256) -> String {
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn digests_are_sha256_in_hex() {
        assert_eq!(
            super::digest(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
