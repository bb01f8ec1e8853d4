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
//!
//! Access: what was pulled is given back only to a pull with the same access ([`Access`]: none
//! for an anonymous pull, else a hash of the registry and the credentials) that the registry
//! answered before, recorded in `access/<the manifest's file name>` and, for a component, in
//! `access/blob-<component hex>` with the repository it came from: naming a digest is not
//! access, and a manifest of one's own listing another repository's component does not get it
//! without the registry. A file kept without a record is never given.
//!
//! The components held take at most a limit of bytes ([`STORE_LIMIT`] unless set): after each
//! keep, the least recently used (kept or read) go first, with their access records. A
//! `WasmReconciler`'s pull is held by its source (`holders/<sha256 of the source>` lists the
//! manifest and component it pulled last): when the object goes, what no other source holds goes
//! with it. The bytes of components held are a gauge, `wasmop_pulled_store_bytes`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use oci_client::secrets::RegistryAuth;
use prometheus::{IntGauge, Opts};

use super::OciRef;
use super::signature::Signature;
use crate::distribution::digest;

/// Who a pull was answered for: anyone (an anonymous pull) or the holders of one registry's
/// credentials, as a hash (the credentials are never written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access(String);

impl Access {
    /// The access of a pull from `registry` with `auth`.
    pub fn of(registry: &str, auth: &RegistryAuth) -> Self {
        let secret = match auth {
            RegistryAuth::Anonymous => return Access("public".to_owned()),
            RegistryAuth::Basic(user, password) => format!("basic\0{user}\0{password}"),
            RegistryAuth::Bearer(token) => format!("bearer\0{token}"),
        };
        let text = format!("wasmop-access-v1\0{registry}\0{secret}");
        Access(hex_of(&digest(text.as_bytes())).to_owned())
    }
}

/// The most bytes of components the store keeps unless set; the least recently used go first.
pub const STORE_LIMIT: u64 = 1 << 30;

/// What one pull left in the store: the manifest `reference` pins and its component.
#[derive(Debug, Clone)]
pub struct Held {
    /// The reference, pinned by the manifest's digest.
    pub reference: OciRef,
    /// The component's digest (`sha256:…`).
    pub component: String,
}

/// A folder of pulled manifests and components.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    limit: u64,
    /// Serialises what changes who holds what.
    holders: Arc<tokio::sync::Mutex<()>>,
    bytes: IntGauge,
}

impl Store {
    /// The store in `dir` (created on the first write), holding at most [`STORE_LIMIT`] bytes
    /// of components.
    pub fn new(dir: PathBuf) -> Self {
        let opts = Opts::new(
            "wasmop_pulled_store_bytes",
            "Bytes of pulled components kept on disk for offline restarts (--pulled-store-limit)",
        );
        Store {
            dir,
            limit: STORE_LIMIT,
            holders: Arc::default(),
            bytes: IntGauge::with_opts(opts).expect("a constant metric"),
        }
    }

    /// The same store, holding at most `limit` bytes of components.
    pub fn with_limit(mut self, limit: u64) -> Self {
        self.limit = limit;
        self
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The bytes of components held, as a gauge to register.
    pub fn gauge(&self) -> IntGauge {
        self.bytes.clone()
    }

    /// Measures what is held and evicts what is over the limit (a limit lowered since the last
    /// run); for start-up.
    pub async fn settle(&self) {
        self.evict(Path::new("")).await;
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

    fn manifest_access_file(&self, reference: &OciRef) -> PathBuf {
        let manifest = self.manifest_file(reference);
        let name = manifest.file_name().unwrap_or_default();
        self.dir.join("access").join(name)
    }

    fn blob_access_file(&self, layer_digest: &str) -> PathBuf {
        let name = format!("blob-{}", hex_of(layer_digest));
        self.dir.join("access").join(name)
    }

    /// The record of one access to a component of `reference`'s repository.
    fn blob_record(reference: &OciRef, access: &Access) -> String {
        let repository = format!("{}/{}", reference.registry(), reference.oci().repository());
        format!("{} {}", hex_of(&digest(repository.as_bytes())), access.0)
    }

    fn blob_file(&self, layer_digest: &str) -> PathBuf {
        self.dir
            .join("blobs")
            .join(format!("{}.wasm", hex_of(layer_digest)))
    }

    /// The manifest `reference` pins, if the registry gave it to `access` before.
    pub async fn manifest(&self, reference: &OciRef, access: &Access) -> Option<Vec<u8>> {
        let file = self.manifest_access_file(reference);
        if !recorded(&file, &access.0).await {
            return None;
        }
        let bytes = tokio::fs::read(self.manifest_file(reference)).await.ok()?;
        (digest(&bytes) == reference.digest()).then_some(bytes)
    }

    /// The component whose digest is `layer_digest`, if the registry gave it to `access` from
    /// `reference`'s repository before.
    pub async fn blob(
        &self,
        reference: &OciRef,
        layer_digest: &str,
        access: &Access,
    ) -> Option<Vec<u8>> {
        let file = self.blob_access_file(layer_digest);
        if !recorded(&file, &Self::blob_record(reference, access)).await {
            return None;
        }
        let file = self.blob_file(layer_digest);
        let bytes = tokio::fs::read(&file).await.ok()?;
        let held = digest(&bytes) == layer_digest;
        if held {
            let _ = tokio::task::spawn_blocking(move || touch(&file)).await;
        }
        held.then_some(bytes)
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
    /// digests), as the registry gave them to `access`; a failure to write is logged, and loses
    /// only the copy.
    pub async fn keep(
        &self,
        reference: &OciRef,
        access: &Access,
        manifest: &[u8],
        layer_digest: &str,
        module: &[u8],
    ) {
        let written = async {
            write(&self.blob_file(layer_digest), module).await?;
            write(&self.manifest_file(reference), manifest).await?;
            let blob_record = Self::blob_record(reference, access);
            record(&self.blob_access_file(layer_digest), &blob_record).await?;
            record(&self.manifest_access_file(reference), &access.0).await
        };
        if let Err(error) = written.await {
            tracing::warn!(reference = %reference, dir = %self.dir.display(), "keeping the pulled module: {error}");
        }
        self.evict(&self.blob_file(layer_digest)).await;
    }

    /// Removes the least recently used components (and their access records), never `keep`,
    /// until the rest fit the limit.
    async fn evict(&self, keep: &Path) {
        let Ok(mut entries) = tokio::fs::read_dir(self.dir.join("blobs")).await else {
            return;
        };
        let mut blobs = Vec::new();
        while let Ok(Some(entry)) = entries.next_entry().await {
            let Ok(meta) = entry.metadata().await else {
                continue;
            };
            if let Ok(modified) = meta.modified() {
                blobs.push((modified, meta.len(), entry.path()));
            }
        }
        blobs.sort();
        let mut total: u64 = blobs.iter().map(|(_, len, _)| len).sum();
        for (_, len, path) in blobs {
            if total <= self.limit {
                break;
            }
            if path == keep || tokio::fs::remove_file(&path).await.is_err() {
                continue;
            }
            total -= len;
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            let _ = tokio::fs::remove_file(self.blob_access_file(&stem)).await;
            tracing::info!(blob = %path.display(), "evicted a pulled component: the store is full");
        }
        self.bytes.set(i64::try_from(total).unwrap_or(i64::MAX));
    }

    fn holder_file(&self, holder: &str) -> PathBuf {
        let name = hex_of(&digest(holder.as_bytes())).to_owned();
        self.dir.join("holders").join(name)
    }

    /// The lines naming what `held` left in the store, as a holder's record keeps them.
    fn held_lines(&self, held: &Held) -> Vec<String> {
        let manifest = self.manifest_file(&held.reference);
        let manifest = manifest.file_name().unwrap_or_default().to_string_lossy();
        vec![
            format!("manifest {manifest}"),
            format!("blob {}", hex_of(&held.component)),
        ]
    }

    /// Records that `holder` (a `WasmReconciler`'s source) holds what `held` names, and nothing
    /// it held before: that goes unless another source holds it.
    pub async fn hold(&self, holder: &str, held: &Held) {
        let _serial = self.holders.lock().await;
        let file = self.holder_file(holder);
        let before = lines_of(&file).await;
        let now = self.held_lines(held);
        if before == now {
            return;
        }
        if let Err(error) = write(&file, format!("{}\n", now.join("\n")).as_bytes()).await {
            tracing::warn!(holder, dir = %self.dir.display(), "recording the pulled module's holder: {error}");
        }
        let released = before.into_iter().filter(|line| !now.contains(line));
        self.remove_unheld(released.collect()).await;
    }

    /// Removes what `holder` held that no other source holds: its object is gone.
    pub async fn release(&self, holder: &str) {
        let _serial = self.holders.lock().await;
        let file = self.holder_file(holder);
        let held = lines_of(&file).await;
        let _ = tokio::fs::remove_file(&file).await;
        self.remove_unheld(held).await;
    }

    /// Removes the manifests and components `lines` name that no holder's record names.
    async fn remove_unheld(&self, lines: Vec<String>) {
        if lines.is_empty() {
            return;
        }
        let mut held = HashSet::new();
        if let Ok(mut records) = tokio::fs::read_dir(self.dir.join("holders")).await {
            while let Ok(Some(record)) = records.next_entry().await {
                held.extend(lines_of(&record.path()).await);
            }
        }
        for line in lines.iter().filter(|line| !held.contains(*line)) {
            let files = match line.split_once(' ') {
                Some(("manifest", name)) => ["manifests", "access", "signatures"]
                    .map(|folder| self.dir.join(folder).join(name))
                    .to_vec(),
                Some(("blob", hex)) => vec![self.blob_file(hex), self.blob_access_file(hex)],
                _ => continue,
            };
            for file in files {
                let _ = tokio::fs::remove_file(file).await;
            }
        }
        self.evict(Path::new("")).await;
    }
}

/// Marks the component `file` as used now, for eviction's order.
fn touch(file: &Path) {
    if let Ok(opened) = std::fs::File::options().write(true).open(file) {
        let _ = opened.set_modified(std::time::SystemTime::now());
    }
}

/// The lines of the record `file` (none if it is missing).
async fn lines_of(file: &Path) -> Vec<String> {
    let text = tokio::fs::read_to_string(file).await.unwrap_or_default();
    text.lines().map(str::to_owned).collect()
}

/// Whether the access record `file` holds the line `line`.
async fn recorded(file: &Path, line: &str) -> bool {
    lines_of(file).await.iter().any(|held| held == line)
}

/// Adds the line `line` to the access record `file`, unless it holds it.
async fn record(file: &Path, line: &str) -> std::io::Result<()> {
    if recorded(file, line).await {
        return Ok(());
    }
    let mut text = tokio::fs::read_to_string(file).await.unwrap_or_default();
    text.push_str(line);
    text.push('\n');
    write(file, text.as_bytes()).await
}

/// Writes `bytes` to `file` through a temporary file of a name no other write uses, so a
/// reader never sees half of it and concurrent writes never mix.
async fn write(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let dir = file.parent().unwrap_or(Path::new("."));
    tokio::fs::create_dir_all(dir).await?;
    let unique = WRITES.fetch_add(1, Ordering::Relaxed);
    let partial = file.with_extension(format!("{}-{unique}.partial", std::process::id()));
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
        let public = Access::of("r.example", &RegistryAuth::Anonymous);
        assert!(store.manifest(&reference, &public).await.is_none());
        store
            .keep(&reference, &public, &manifest, &layer, &module)
            .await;
        assert_eq!(store.manifest(&reference, &public).await.unwrap(), manifest);
        assert_eq!(
            store.blob(&reference, &layer, &public).await.unwrap(),
            module
        );
        let other_repository =
            OciRef::parse(&format!("r.example/b@{}", digest(&manifest))).unwrap();
        assert!(store.manifest(&other_repository, &public).await.is_none());
        assert!(
            store
                .blob(&other_repository, &layer, &public)
                .await
                .is_none()
        );
        assert!(store.signatures(&reference).await.is_empty());
        let signed = vec![Signature::of(b"payload", "c2lnbmF0dXJl".into())];
        store.keep_signatures(&reference, &signed).await;
        assert_eq!(store.signatures(&reference).await, signed);
        std::fs::write(store.blob_file(&layer), b"changed on disk").unwrap();
        assert!(store.blob(&reference, &layer, &public).await.is_none());
    }

    #[tokio::test]
    async fn what_was_pulled_with_credentials_is_given_back_only_with_the_same_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_owned());
        let manifest = b"{\"schemaVersion\":2}".to_vec();
        let reference = OciRef::parse(&format!("r.example/private@{}", digest(&manifest))).unwrap();
        let module = b"\0asm private".to_vec();
        let layer = digest(&module);
        let basic = |password: &str| RegistryAuth::Basic("team".into(), password.into());
        let owner = Access::of("r.example", &basic("secret"));
        store
            .keep(&reference, &owner, &manifest, &layer, &module)
            .await;
        assert_eq!(store.manifest(&reference, &owner).await.unwrap(), manifest);
        assert_eq!(
            store.blob(&reference, &layer, &owner).await.unwrap(),
            module
        );
        let strangers = [
            Access::of("r.example", &RegistryAuth::Anonymous),
            Access::of("r.example", &basic("guess")),
            Access::of("other.example", &basic("secret")),
        ];
        for stranger in &strangers {
            assert!(
                store.manifest(&reference, stranger).await.is_none(),
                "{stranger:?}"
            );
            assert!(
                store.blob(&reference, &layer, stranger).await.is_none(),
                "{stranger:?}"
            );
        }
        let kept = std::fs::read_dir(dir.path().join("access")).unwrap();
        for file in kept {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            assert!(!text.contains("secret"), "a credential was written: {text}");
        }
        std::fs::remove_dir_all(dir.path().join("access")).unwrap();
        assert!(
            store.manifest(&reference, &owner).await.is_none(),
            "a manifest kept without a record is not given"
        );
    }

    #[tokio::test]
    async fn the_least_recently_used_components_go_when_the_store_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::new(dir.path().to_owned());
        store.limit = 2500;
        let public = Access::of("r.example", &RegistryAuth::Anonymous);
        let mut kept = Vec::new();
        for n in 0..3u8 {
            let manifest = vec![b'{', n, b'}'];
            let reference = OciRef::parse(&format!("r.example/a@{}", digest(&manifest))).unwrap();
            let module = vec![n; 1000];
            let layer = digest(&module);
            store
                .keep(&reference, &public, &manifest, &layer, &module)
                .await;
            let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
            let old = hour_ago + std::time::Duration::from_secs(u64::from(n));
            let file = std::fs::File::options()
                .write(true)
                .open(store.blob_file(&layer));
            file.unwrap().set_modified(old).unwrap();
            kept.push((reference, layer));
        }
        let held = |i: usize| store.blob_file(&kept[i].1).exists();
        assert_eq!((held(0), held(1), held(2)), (false, true, true));
        assert!(!store.blob_access_file(&kept[0].1).exists());
    }

    #[tokio::test]
    async fn a_pull_goes_with_the_last_source_that_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_owned());
        let public = Access::of("r.example", &RegistryAuth::Anonymous);
        let mut pulls = Vec::new();
        for n in 0..2u8 {
            let manifest = vec![b'{', n, b'}'];
            let reference = OciRef::parse(&format!("r.example/a@{}", digest(&manifest))).unwrap();
            let module = vec![n; 1000];
            let component = digest(&module);
            store
                .keep(&reference, &public, &manifest, &component, &module)
                .await;
            pulls.push(Held {
                reference,
                component,
            });
        }
        assert_eq!(store.gauge().get(), 2000);
        let kept = |held: &Held| {
            let blob = store.blob_file(&held.component).exists();
            (blob, store.manifest_file(&held.reference).exists())
        };
        store.hold("wasmreconciler/a/one", &pulls[0]).await;
        store.hold("wasmreconciler/b/two", &pulls[0]).await;
        store.release("wasmreconciler/a/one").await;
        assert_eq!(
            kept(&pulls[0]),
            (true, true),
            "another source still holds it"
        );
        // Moving to another digest lets go of the one held before.
        store.hold("wasmreconciler/b/two", &pulls[1]).await;
        assert_eq!(kept(&pulls[0]), (false, false));
        assert!(!store.blob_access_file(&pulls[0].component).exists());
        assert_eq!(store.gauge().get(), 1000);
        store.release("wasmreconciler/b/two").await;
        assert_eq!(kept(&pulls[1]), (false, false));
        assert_eq!(store.gauge().get(), 0);
    }
}
