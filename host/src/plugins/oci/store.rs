//! Pulled components kept on disk beside the compile cache, so a host restarted while the
//! registry is down still loads what it pulled before, and a new manifest whose component the
//! host already holds costs no download.
//!
//! Layout: `manifests/<sha256 of REGISTRY/REPOSITORY>-<manifest hex>.json` (a manifest is kept
//! per repository, so an outage falls back only to what was pulled from that repository) and
//! `blobs/<component hex>.wasm`, and the signatures pulled of a manifest in
//! `signatures/<the manifest's file name>` (checked against the trusted keys again on every
//! load). Everything read back is checked against its digest again: a
//! file changed on disk is ignored, never loaded.

use std::path::{Path, PathBuf};

use super::OciRef;
use super::signature::Signature;
use crate::plugins::digest;

/// A folder of pulled manifests and components.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir` (created on the first write).
    pub fn new(dir: PathBuf) -> Self {
        Store { dir }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn manifest_file(&self, reference: &OciRef) -> PathBuf {
        let repository = format!("{}/{}", reference.registry(), reference.oci().repository());
        let repository = digest(repository.as_bytes());
        let (repository, manifest) = (hex_of(&repository), hex_of(reference.digest()));
        self.dir
            .join("manifests")
            .join(format!("{repository}-{manifest}.json"))
    }

    fn signatures_file(&self, reference: &OciRef) -> PathBuf {
        let manifest = self.manifest_file(reference);
        let name = manifest.file_name().unwrap_or_default();
        self.dir.join("signatures").join(name)
    }

    fn blob_file(&self, layer_digest: &str) -> PathBuf {
        self.dir
            .join("blobs")
            .join(format!("{}.wasm", hex_of(layer_digest)))
    }

    /// The manifest `reference` pins, if it was pulled from its repository before.
    pub async fn manifest(&self, reference: &OciRef) -> Option<Vec<u8>> {
        let bytes = tokio::fs::read(self.manifest_file(reference)).await.ok()?;
        (digest(&bytes) == reference.digest()).then_some(bytes)
    }

    /// The component whose digest is `layer_digest`, if held.
    pub async fn blob(&self, layer_digest: &str) -> Option<Vec<u8>> {
        let bytes = tokio::fs::read(self.blob_file(layer_digest)).await.ok()?;
        (digest(&bytes) == layer_digest).then_some(bytes)
    }

    /// The signatures kept of `reference`'s manifest (none if none were).
    pub async fn signatures(&self, reference: &OciRef) -> Vec<Signature> {
        let kept = tokio::fs::read(self.signatures_file(reference)).await;
        kept.ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Keeps the signatures pulled of `reference`'s manifest.
    pub async fn keep_signatures(&self, reference: &OciRef, signatures: &[Signature]) {
        let file = self.signatures_file(reference);
        let bytes = serde_json::to_vec(signatures).unwrap_or_default();
        if let Err(error) = write(&file, &bytes).await {
            tracing::warn!(reference = %reference, dir = %self.dir.display(), "keeping the signatures: {error}");
        }
    }

    /// Keeps the manifest of `reference` and its component (already checked against both
    /// digests); a failure to write is logged, and loses only the copy.
    pub async fn keep(
        &self,
        reference: &OciRef,
        manifest: &[u8],
        layer_digest: &str,
        module: &[u8],
    ) {
        let written = async {
            write(&self.blob_file(layer_digest), module).await?;
            write(&self.manifest_file(reference), manifest).await
        };
        if let Err(error) = written.await {
            tracing::warn!(reference = %reference, dir = %self.dir.display(), "keeping the pulled module: {error}");
        }
    }
}

/// Writes `bytes` to `file` through a temporary file, so a reader never sees half of it.
async fn write(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    tokio::fs::create_dir_all(dir).await?;
    let partial = file.with_extension("partial");
    tokio::fs::write(&partial, bytes).await?;
    tokio::fs::rename(&partial, file).await
}

fn hex_of(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn what_is_kept_is_given_back_only_while_it_matches_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_owned());
        let manifest = b"{\"schemaVersion\":2}".to_vec();
        let reference = OciRef::parse(&format!("r.example/a@{}", digest(&manifest))).unwrap();
        let module = b"\0asm component".to_vec();
        let layer = digest(&module);
        assert!(store.manifest(&reference).await.is_none());
        store.keep(&reference, &manifest, &layer, &module).await;
        assert_eq!(store.manifest(&reference).await.unwrap(), manifest);
        assert_eq!(store.blob(&layer).await.unwrap(), module);
        let other_repository =
            OciRef::parse(&format!("r.example/b@{}", digest(&manifest))).unwrap();
        assert!(store.manifest(&other_repository).await.is_none());
        assert!(store.signatures(&reference).await.is_empty());
        let signed = vec![Signature::of(b"payload", "c2lnbmF0dXJl".into())];
        store.keep_signatures(&reference, &signed).await;
        assert_eq!(store.signatures(&reference).await, signed);
        std::fs::write(store.blob_file(&layer), b"changed on disk").unwrap();
        assert!(store.blob(&layer).await.is_none());
    }
}
