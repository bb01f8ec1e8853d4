//! Cosign-compatible signatures of an artifact, found and checked offline.
//!
//! Cosign keeps the signatures of `REPO@sha256:<hex>` in the same repository, as the image
//! manifest tagged `sha256-<hex>.sig`: each layer is a "simple signing" payload (JSON naming the
//! signed manifest's digest) of type [`PAYLOAD_MEDIA_TYPE`], with its signature — base64 of
//! ASN.1 DER ECDSA over the payload's bytes — in the layer's [`SIGNATURE_ANNOTATION`].
//! `cosign sign --key` writes exactly this, `cosign verify --key` reads it, and so do
//! [`Signature::sign`] and [`verified_by`].
//!
//! Invariants: a signature counts only if its payload names the pinned digest, and only for a
//! key the caller trusts; at most [`MAX_SIGNATURES`] signatures of at most [`MAX_PAYLOAD_BYTES`]
//! each are read, so a repository cannot make the host verify without end.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};
use serde_json::json;
use wasmop_contract::TrustedKey;
use wasmop_contract::signature::names;

use super::{OciError, OciRef};
use crate::distribution::digest;

/// The media type of a simple signing payload.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The layer annotation holding a payload's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// The manifest types a signature manifest may have (cosign writes OCI's, or Docker's when
/// asked to).
pub const MANIFEST_MEDIA_TYPES: &[&str] = &[
    OCI_IMAGE_MEDIA_TYPE,
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// The type a payload must declare.
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// The most signatures read for one artifact.
pub const MAX_SIGNATURES: usize = 16;

/// The largest payload read.
pub const MAX_PAYLOAD_BYTES: usize = 16 << 10;

/// One signature: a payload and a key's signature of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// The simple signing payload's bytes, base64.
    pub payload: String,
    /// The DER signature of the payload, base64 (as the annotation holds it).
    pub signature: String,
}

impl Signature {
    /// The signature `signature` (base64, as the annotation holds it) of `payload`.
    pub fn of(payload: &[u8], signature: String) -> Self {
        Signature {
            payload: STANDARD.encode(payload),
            signature,
        }
    }

    /// A signature of `reference`'s digest by `key`, as `cosign sign --key` makes it.
    pub fn sign(reference: &OciRef, key: &p256::ecdsa::SigningKey) -> Self {
        use p256::ecdsa::signature::Signer;
        let payload = json!({
            "critical": {
                "identity": {"docker-reference": format!("{}/{}", reference.registry(), reference.oci().repository())},
                "image": {"docker-manifest-digest": reference.digest()},
                "type": PAYLOAD_TYPE,
            },
            "optional": null,
        });
        let payload = serde_json::to_vec(&payload).unwrap_or_default();
        let signature: p256::ecdsa::Signature = key.sign(&payload);
        Signature {
            payload: STANDARD.encode(&payload),
            signature: STANDARD.encode(signature.to_der().as_bytes()),
        }
    }

    /// The key of `keys` that signed `digest` with this, if any.
    fn signer<'k>(&self, digest: &str, keys: &'k [TrustedKey]) -> Option<&'k TrustedKey> {
        let payload = STANDARD.decode(&self.payload).ok()?;
        let signature = STANDARD.decode(&self.signature).ok()?;
        let claims: serde_json::Value = serde_json::from_slice(&payload).ok()?;
        let critical = &claims["critical"];
        let names_digest = critical["image"]["docker-manifest-digest"] == digest
            && critical["type"] == PAYLOAD_TYPE;
        names_digest
            .then(|| keys.iter().find(|k| k.verifies(&payload, &signature)))
            .flatten()
    }

    /// The layer descriptor this signature is pushed as.
    fn layer(&self) -> Result<(OciDescriptor, Vec<u8>), OciError> {
        let payload = STANDARD
            .decode(&self.payload)
            .map_err(|_| OciError::Layout("a signature's payload is not base64"))?;
        let descriptor = OciDescriptor {
            media_type: PAYLOAD_MEDIA_TYPE.to_owned(),
            digest: digest(&payload),
            size: payload.len() as i64,
            annotations: Some([(SIGNATURE_ANNOTATION.to_owned(), self.signature.clone())].into()),
            ..OciDescriptor::default()
        };
        Ok((descriptor, payload))
    }
}

/// The key of `keys` that signed `digest`, among `signatures`; the error says which digest and
/// which keys.
pub fn verified_by<'k>(
    signatures: &[Signature],
    digest: &str,
    keys: &'k [TrustedKey],
) -> Result<&'k TrustedKey, OciError> {
    let unsigned = || OciError::Unsigned {
        digest: digest.to_owned(),
        keys: names(keys),
    };
    if signatures.is_empty() {
        return Err(unsigned());
    }
    signatures
        .iter()
        .find_map(|s| s.signer(digest, keys))
        .ok_or_else(|| OciError::Untrusted {
            digest: digest.to_owned(),
            keys: names(keys),
            found: signatures.len(),
        })
}

/// The tag cosign keeps `digest`'s signatures under.
pub fn tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The signature layers of a signature manifest `raw`: each layer's payload descriptor and its
/// signature, at most [`MAX_SIGNATURES`] of them.
pub fn layers(raw: &[u8]) -> Result<Vec<(OciDescriptor, String)>, OciError> {
    let manifest: OciImageManifest = serde_json::from_slice(raw)
        .map_err(|_| OciError::Layout("the signature manifest is not an OCI image manifest"))?;
    let signed = manifest.layers.into_iter().filter_map(|layer| {
        let signature = layer
            .annotations
            .as_ref()?
            .get(SIGNATURE_ANNOTATION)?
            .clone();
        let payload = layer.media_type == PAYLOAD_MEDIA_TYPE
            && (1..=MAX_PAYLOAD_BYTES as i64).contains(&layer.size);
        payload.then_some((layer, signature))
    });
    Ok(signed.take(MAX_SIGNATURES).collect())
}

/// A signature manifest holding `existing`'s signatures and `added` (unless already there), with
/// its config and the blobs to push first.
pub fn manifest(
    existing: Option<&[u8]>,
    added: &Signature,
) -> Result<(Vec<u8>, Vec<Vec<u8>>), OciError> {
    let mut layers = match existing {
        Some(raw) => serde_json::from_slice::<OciImageManifest>(raw)
            .map(|m| m.layers)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let (layer, payload) = added.layer()?;
    let already = layers.iter().any(|l| {
        l.digest == layer.digest
            && l.annotations
                .as_ref()
                .and_then(|a| a.get(SIGNATURE_ANNOTATION))
                == Some(&added.signature)
    });
    if !already {
        layers.push(layer);
    }
    let diff_ids: Vec<&str> = layers.iter().map(|l| l.digest.as_str()).collect();
    let config = json!({
        "architecture": "", "os": "", "config": {},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    });
    let config = serde_json::to_vec(&config).map_err(|e| OciError::Client(e.to_string()))?;
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
        config: OciDescriptor {
            media_type: "application/vnd.oci.image.config.v1+json".to_owned(),
            digest: digest(&config),
            size: config.len() as i64,
            ..OciDescriptor::default()
        },
        layers,
        ..OciImageManifest::default()
    };
    let manifest = serde_json::to_vec(&manifest).map_err(|e| OciError::Client(e.to_string()))?;
    Ok((manifest, vec![config, payload]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::pkcs8::{EncodePublicKey, LineEnding};

    fn key(seed: u8) -> (p256::ecdsa::SigningKey, TrustedKey) {
        let signing = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap();
        let pem = signing
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        (
            signing,
            TrustedKey::from_pem(&format!("key-{seed}"), &pem).unwrap(),
        )
    }

    fn reference(manifest: &[u8]) -> OciRef {
        OciRef::parse(&format!("r.example/team/webapp@{}", digest(manifest))).unwrap()
    }

    #[test]
    fn a_signature_counts_for_its_key_and_its_digest_alone() {
        let (release, release_key) = key(1);
        let (_, ops_key) = key(2);
        let webapp = reference(b"webapp manifest");
        let signed = [Signature::sign(&webapp, &release)];
        let both = [ops_key.clone(), release_key.clone()];
        let found = verified_by(&signed, webapp.digest(), &both);
        assert_eq!(found.unwrap().name(), "key-1");
        let wrong_key = verified_by(&signed, webapp.digest(), &both[..1]);
        let message = wrong_key.unwrap_err().to_string();
        assert!(
            message.contains(webapp.digest()) && message.contains("key-2"),
            "{message}"
        );
        let other = reference(b"another manifest");
        let replayed = verified_by(&signed, other.digest(), &both[1..]);
        assert!(
            matches!(replayed, Err(OciError::Untrusted { .. })),
            "{replayed:?}"
        );
        let release_only = [release_key];
        let unsigned = verified_by(&[], webapp.digest(), &release_only);
        assert!(
            matches!(unsigned, Err(OciError::Unsigned { .. })),
            "{unsigned:?}"
        );
    }

    #[test]
    fn a_signature_manifest_keeps_what_it_held_and_adds_each_signature_once() {
        let (release, release_key) = key(1);
        let (ops, _) = key(2);
        let webapp = reference(b"webapp manifest");
        let first = Signature::sign(&webapp, &release);
        let (raw, blobs) = manifest(None, &first).unwrap();
        assert_eq!(blobs.len(), 2);
        let (again, _) = manifest(Some(&raw), &first).unwrap();
        assert_eq!(layers(&again).unwrap().len(), 1);
        let (both, _) = manifest(Some(&raw), &Signature::sign(&webapp, &ops)).unwrap();
        let found = layers(&both).unwrap();
        assert_eq!(found.len(), 2);
        let (layer, signature) = &found[0];
        assert_eq!(layer.media_type, PAYLOAD_MEDIA_TYPE);
        let payload = STANDARD.encode(&blobs[1]);
        let read = Signature {
            payload,
            signature: signature.clone(),
        };
        assert_eq!(
            verified_by(&[read], webapp.digest(), &[release_key])
                .unwrap()
                .name(),
            "key-1"
        );
        assert_eq!(
            tag(webapp.digest()),
            format!("sha256-{}.sig", &webapp.digest()[7..])
        );
    }
}
