//! An OCI reference as a module source: `REGISTRY/REPOSITORY[:TAG]@sha256:<64 hex>`, checked before
//! anything is fetched. The digest is required, so what runs is exactly what was reviewed: a tag
//! is kept only to say where the digest came from, and is never resolved.

use std::fmt;

use super::OciError;

/// What `--plugin` values naming a registry start with.
pub const SCHEME: &str = "oci://";

/// The longest reference (it is quoted in errors, and so in a `WasmReconciler`'s status).
const MAX_REFERENCE: usize = 512;

/// A reference pinned by a sha256 digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    text: String,
    parsed: oci_client::Reference,
}

impl OciRef {
    /// Parses `text` (with or without `oci://`), which must name a sha256 digest.
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let text = text.strip_prefix(SCHEME).unwrap_or(text);
        let invalid = |why: &'static str| OciError::Reference(why);
        if text.len() > MAX_REFERENCE || !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(invalid("at most 512 printable ASCII characters"));
        }
        let parsed: oci_client::Reference = text
            .parse()
            .map_err(|_| invalid("not REGISTRY/REPOSITORY[:TAG]@sha256:<digest>"))?;
        let Some(digest) = parsed.digest() else {
            return Err(invalid(
                "pin it with its digest: REGISTRY/REPOSITORY[:TAG]@sha256:<digest>",
            ));
        };
        match digest.strip_prefix("sha256:") {
            Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {}
            _ => return Err(invalid("the digest must be sha256: and 64 hex digits")),
        }
        Ok(OciRef {
            text: text.to_owned(),
            parsed,
        })
    }

    /// The reference as oci-client takes it.
    pub fn oci(&self) -> &oci_client::Reference {
        &self.parsed
    }

    /// The same repository at `tag`.
    pub fn tagged(&self, tag: &str) -> oci_client::Reference {
        let registry = self.parsed.registry().to_owned();
        let repository = self.parsed.repository().to_owned();
        oci_client::Reference::with_tag(registry, repository, tag.to_owned())
    }

    /// The registry it names (`HOST[:PORT]`).
    pub fn registry(&self) -> &str {
        self.parsed.resolve_registry()
    }

    /// The pinned digest, `sha256:<hex>`.
    pub fn digest(&self) -> &str {
        self.parsed.digest().unwrap_or_default()
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef";

    #[test]
    fn a_reference_must_pin_a_sha256_digest() {
        let pinned =
            OciRef::parse(&format!("oci://127.0.0.1:5000/team/webapp:v1@{DIGEST}")).unwrap();
        assert_eq!(pinned.registry(), "127.0.0.1:5000");
        assert_eq!(pinned.digest(), DIGEST);
        assert_eq!(pinned.oci().repository(), "team/webapp");
        for refused in [
            "registry.example.com/webapp:v1".to_owned(),
            "registry.example.com/webapp@sha512:abcd".to_owned(),
            format!("registry.example.com/webapp@{}", &DIGEST[..70]),
            format!("registry.example.com/web app@{DIGEST}"),
            format!("registry.example.com/{}@{DIGEST}", "a/".repeat(300)),
            format!("registry.example.com/WEBAPP@{DIGEST}"),
        ] {
            let error = OciRef::parse(&refused).unwrap_err();
            assert!(
                matches!(error, OciError::Reference(_)),
                "{refused}: {error}"
            );
        }
    }
}
