//! The compile cache: each component compiled once into a wasmtime artifact file in a private
//! directory, keyed by the component's sha256 and the engine's compilation settings, and mapped
//! from there into the engine on every load. An artifact compiled here (`host-…`) is shared by
//! every source of the same component; an adopted one, compiled elsewhere (`adopted-…`), is named
//! by all that was trusted in taking it ([`Adopted`]) and mapped only by a load that names that
//! same trust, never by another source of the same component. A mapped artifact's code and memory image are pages
//! of the file: resident only where touched, shared by every instance, and given back by the
//! kernel under pressure, where a copied artifact would be private memory for as long as the
//! plugin is loaded.
//!
//! Invariants, which make mapping an artifact sound: only this process's user may write the
//! directory (checked when it is opened); an artifact is written under a temporary name and renamed
//! into place, never modified afterwards, so a mapping keeps the bytes it loaded; the engine
//! checks each artifact's settings before using it, and one it refuses is compiled again. The
//! directory holds at most its limit of bytes ([`CACHE_LIMIT`] unless set), the least recently
//! used artifacts going first. A cache that cannot be written (a full or read-only disk) costs
//! a copy in memory, never a plugin.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use tempfile::NamedTempFile;

use crate::disk::{dropped, written_back};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::runtime::RuntimeError;

/// The most bytes of artifacts the cache directory keeps.
pub const CACHE_LIMIT: u64 = 1 << 30;

/// Compiles a component (the bytes), writing its artifact to the writer.
type Compile<'a> = dyn Fn(&[u8], &mut dyn Write) -> wasmtime::Result<()> + 'a;

/// The file name suffix of an artifact.
const SUFFIX: &str = ".cwasm";

/// What a precompiled artifact was taken on the trust of: the source that took it, the
/// artifact's and the component's digests, the precompiled layer's, the key that signed them and
/// the engine it was compiled for. Adopted artifacts are kept under this, never under the
/// component's digest alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adopted(String);

impl Adopted {
    /// The trust of `source` in the precompiled layer it took on `trusted` (each part of what
    /// vouched for it, in a fixed order).
    pub fn new(source: &str, trusted: &[String]) -> Self {
        let mut hasher = Sha256::new_with_prefix(b"wasmop-adopted-v1\0");
        for part in std::iter::once(source).chain(trusted.iter().map(String::as_str)) {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        Adopted(hex(&hasher.finalize()))
    }
}

/// A component as the engine loaded it: mapped from its artifact file, which it keeps open to be
/// mapped again from, or copied into memory when the cache could not be written. Every load of
/// one artifact shares one while any plugin version holds it: one mapping of its code, one copy of
/// what wasmtime keeps of it.
pub(crate) struct Mapped {
    /// The component, ready to link.
    pub(crate) component: Component,
    /// The artifact it is mapped from; `None` for a copy in memory.
    pub(crate) artifact: Option<Artifact>,
}

/// An artifact file held open under the name the cache keeps it by: what a suspended plugin
/// version maps its component from again, even after the cache's eviction unlinked it.
#[derive(Clone)]
pub(crate) struct Artifact {
    path: PathBuf,
    file: Arc<File>,
}

impl Artifact {
    /// Lets the kernel drop the artifact's pages no mapping holds from the page cache.
    pub(crate) fn release(&self) {
        if let Err(error) = dropped(&self.file) {
            tracing::debug!(artifact = %self.path.display(), "cannot drop the artifact's pages: {error}");
        }
    }
}

/// A private directory of compiled components for one engine's settings.
pub(crate) struct Artifacts {
    dir: PathBuf,
    settings: String,
    limit: u64,
    hits: AtomicUsize,
    misses: AtomicUsize,
    /// The components mapped now, by artifact path, for loads of the same artifact to share.
    live: Mutex<HashMap<PathBuf, Weak<Mapped>>>,
}

impl Artifacts {
    /// Opens (creating it private if new) the cache in `dir` for artifacts `engine` can load.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> Result<Self, RuntimeError> {
        private_dir(dir)?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(Artifacts {
            dir: dir.to_owned(),
            settings: format!("{:016x}", hasher.finish()),
            limit: CACHE_LIMIT,
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
            live: Mutex::default(),
        })
    }

    /// The same cache, holding at most `limit` bytes of artifacts.
    pub(crate) fn with_limit(mut self, limit: u64) -> Self {
        self.limit = limit;
        self
    }

    /// The component of `bytes` for `engine`: the one mapped now from its artifact, if a loaded
    /// plugin version holds it, else mapped from its artifact when the cache has one the engine
    /// accepts, else compiled by `compile` (which writes the artifact) straight into the cache,
    /// and mapped. When the cache cannot be written the compile is kept in memory instead (a
    /// second compile, when the writing failed midway). Blocking: call it off the async runtime.
    pub(crate) fn load(
        &self,
        engine: &Engine,
        bytes: &[u8],
        adopted: Option<&Adopted>,
        compile: impl Fn(&[u8], &mut dyn Write) -> wasmtime::Result<()>,
    ) -> wasmtime::Result<Arc<Mapped>> {
        let candidates = adopted.map(|adopted| self.adopted_path(adopted));
        let path = self.path(bytes);
        for candidate in candidates.iter().chain([&path]) {
            if let Some(mapped) = self.mapped(engine, candidate) {
                return Ok(mapped);
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        match self.compile_into(&path, bytes, &compile) {
            Ok(()) => {
                self.evict(&path);
                let file = File::open(&path)?;
                Ok(self.share(map(engine, path, file)?))
            }
            Err(Unstored::Compile(error)) => Err(error),
            Err(Unstored::Cache(error)) => {
                tracing::warn!(
                    dir = %self.dir.display(),
                    "cannot write the compiled component to the cache, keeping it in memory: {error}"
                );
                let mut artifact = Vec::new();
                compile(bytes, &mut artifact)?;
                Ok(Arc::new(Mapped {
                    component: copy(engine, &artifact)?,
                    artifact: None,
                }))
            }
        }
    }

    /// The component of `artifact` for `engine` again: the one mapped now, if a loaded plugin
    /// version holds it, else mapped from the open file. Blocking: call it off the async runtime.
    pub(crate) fn remap(
        &self,
        engine: &Engine,
        artifact: &Artifact,
    ) -> wasmtime::Result<Arc<Mapped>> {
        if let Some(mapped) = self.shared(&artifact.path) {
            return Ok(mapped);
        }
        let file = artifact.file.try_clone()?;
        Ok(self.share(map(engine, artifact.path.clone(), file)?))
    }

    /// The component mapped now from the artifact at `path`, if a loaded plugin version holds it.
    fn shared(&self, path: &Path) -> Option<Arc<Mapped>> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.get(path).and_then(Weak::upgrade)
    }

    /// Publishes `mapped` for loads of its artifact to share, forgetting the ones no version holds.
    fn share(&self, mapped: Mapped) -> Arc<Mapped> {
        let mapped = Arc::new(mapped);
        if let Some(artifact) = &mapped.artifact {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            live.retain(|_, held| held.strong_count() > 0);
            live.insert(artifact.path.clone(), Arc::downgrade(&mapped));
        }
        mapped
    }

    /// The artifact at `path` shared or mapped, if there is one the engine accepts.
    fn mapped(&self, engine: &Engine, path: &Path) -> Option<Arc<Mapped>> {
        if let Some(mapped) = self.shared(path) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Some(mapped);
        }
        let file = File::open(path).ok()?;
        match map(engine, path.to_owned(), file).map(|mapped| self.share(mapped)) {
            Ok(mapped) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                touch(path);
                Some(mapped)
            }
            Err(error) => {
                tracing::warn!(
                    artifact = %path.display(),
                    "the cached artifact was refused: {error:#}"
                );
                None
            }
        }
    }

    /// Compiles `bytes` into the artifact file at `path`: into a temporary file of the cache,
    /// renamed into place once whole, so the artifact never sits in this process's memory.
    fn compile_into(&self, path: &Path, bytes: &[u8], compile: &Compile) -> Result<(), Unstored> {
        let mut file = NamedTempFile::new_in(&self.dir).map_err(Unstored::Cache)?;
        let mut out = Recording {
            file: file.as_file_mut(),
            failed: None,
        };
        if let Err(error) = compile(bytes, &mut out) {
            return Err(match out.failed {
                Some(failed) => Unstored::Cache(failed),
                None => Unstored::Compile(error),
            });
        }
        written_back(file.as_file()).map_err(Unstored::Cache)?;
        file.persist(path).map_err(|e| Unstored::Cache(e.error))?;
        Ok(())
    }

    /// Takes `artifact` — a precompiled layer that a key the operator trusts signed, written to
    /// disk — under `adopted`, all that was trusted in taking it, unless the cache holds one
    /// under that name already: moved into place when it is on the cache's file system, else
    /// copied. Only a load naming the same `adopted` maps it; the engine checks its header and
    /// settings when it is first mapped, and the component is compiled here if it refuses it.
    /// Blocking: call it off the async runtime.
    pub(crate) fn adopt(&self, adopted: &Adopted, artifact: NamedTempFile) -> std::io::Result<()> {
        let path = self.adopted_path(adopted);
        if path.exists() {
            return Ok(());
        }
        if let Err(unmoved) = artifact.persist(&path) {
            self.store(&path, &mut unmoved.file.reopen()?)?;
        }
        self.evict(&path);
        Ok(())
    }

    /// The engine's compilation settings, as artifact names carry them.
    pub(crate) fn settings(&self) -> &str {
        &self.settings
    }

    /// Loads served from the cache so far.
    pub(crate) fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    /// Loads that had to compile so far.
    pub(crate) fn misses(&self) -> usize {
        self.misses.load(Ordering::Relaxed)
    }

    /// Where the artifact compiled here of the component `bytes` is kept.
    fn path(&self, bytes: &[u8]) -> PathBuf {
        let hex = hex(&Sha256::digest(bytes));
        self.dir
            .join(format!("host-{hex}-{}{SUFFIX}", self.settings))
    }

    /// Where the artifact adopted on the trust `adopted` is kept.
    fn adopted_path(&self, adopted: &Adopted) -> PathBuf {
        let key = &adopted.0;
        self.dir
            .join(format!("adopted-{key}-{}{SUFFIX}", self.settings))
    }

    /// Copies `artifact` to `path` through a temporary file renamed into place.
    fn store(&self, path: &Path, artifact: &mut dyn Read) -> std::io::Result<()> {
        let mut file = NamedTempFile::new_in(&self.dir)?;
        std::io::copy(artifact, file.as_file_mut())?;
        written_back(file.as_file())?;
        file.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Removes the least recently used artifacts, never `keep`, until the rest fit the limit.
    fn evict(&self, keep: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut artifacts: Vec<(SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(SUFFIX))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        artifacts.sort();
        let mut total: u64 = artifacts.iter().map(|(_, len, _)| len).sum();
        for (_, len, path) in artifacts {
            if total <= self.limit {
                break;
            }
            if path != keep && std::fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
    }
}

/// Why a compile left no artifact in the cache.
enum Unstored {
    /// The component did not compile.
    Compile(wasmtime::Error),
    /// The cache could not be written.
    Cache(std::io::Error),
}

/// An artifact file being written, remembering its first failure, so a compile that failed
/// because the cache could not be written is told apart from one that failed to compile.
struct Recording<'a> {
    file: &'a mut File,
    failed: Option<std::io::Error>,
}

impl Recording<'_> {
    fn remember<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        if let (Err(error), None) = (&result, &self.failed) {
            self.failed = Some(std::io::Error::new(error.kind(), error.to_string()));
        }
        result
    }
}

impl Write for Recording<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.file.write(buf);
        self.remember(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let flushed = self.file.flush();
        self.remember(flushed)
    }
}

/// Maps the artifact `file`, opened at `path`, into `engine`, through the file descriptor: the
/// same file whatever has been renamed or unlinked at `path` since it was opened.
#[allow(unsafe_code)]
fn map(engine: &Engine, path: PathBuf, file: File) -> wasmtime::Result<Mapped> {
    let descriptor = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    // SAFETY: wasmtime requires the file to be an artifact of `Engine::precompile_component` that
    // is not modified while mapped. Only this user may write the cache directory (`private_dir`),
    // this module writes each artifact whole under a temporary name before renaming it into
    // place and never writes it again (eviction unlinks, which leaves open files and mappings
    // intact), and wasmtime checks the artifact's header and settings against `engine` before
    // using it. An artifact not compiled here was adopted only from a layer signed by a key the
    // operator trusts (`adopt`), which is as far as native code from elsewhere can be checked.
    let component = unsafe { Component::deserialize_file(engine, &descriptor) }?;
    Ok(Mapped {
        component,
        artifact: Some(Artifact {
            path,
            file: Arc::new(file),
        }),
    })
}

/// Loads `artifact`, just compiled in this process, into `engine` by copying it.
#[allow(unsafe_code)]
fn copy(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `artifact` is what `Engine::precompile_component` returned moments ago in this
    // process, for an engine of the same settings; wasmtime checks its header and settings again.
    unsafe { Component::deserialize(engine, artifact) }
}

/// `bytes` in lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Marks the artifact at `path` as used now, for eviction's order.
fn touch(path: &Path) {
    if let Ok(file) = File::options().write(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Makes `dir` (mode 0700 when it is new) and refuses it when another user owns it or anyone but
/// its owner may write it: compiled code found there runs without being checked again, so only
/// this user may put it there.
fn private_dir(dir: &Path) -> Result<(), RuntimeError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let unsafe_cache = |reason: String| RuntimeError::CompileCache {
        dir: dir.to_owned(),
        reason,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| unsafe_cache(format!("cannot create it: {e}")))?;
    let owner = std::fs::metadata(dir).map_err(|e| unsafe_cache(e.to_string()))?;
    let me = current_uid().map_err(|e| unsafe_cache(e.to_string()))?;
    if owner.uid() != me {
        return Err(unsafe_cache(format!(
            "it belongs to uid {}, not to this process's uid {me}",
            owner.uid()
        )));
    }
    if owner.mode() & 0o022 != 0 {
        return Err(unsafe_cache(format!(
            "its mode {:o} lets other users write compiled code into it",
            owner.mode() & 0o777
        )));
    }
    Ok(())
}

/// The uid this process runs as (the owner of its `/proc/self`).
fn current_uid() -> std::io::Result<u32> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata("/proc/self")?.uid())
}

/// `$XDG_CACHE_HOME/wasmop/compiled`, else `~/.cache/wasmop/compiled`, else a directory of this
/// user's own under the temp dir (refused if someone else made it first).
pub fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")));
    match base {
        Some(base) => base.join("wasmop").join("compiled"),
        None => {
            let uid = current_uid().unwrap_or(0);
            std::env::temp_dir()
                .join(format!("wasmop-{uid}"))
                .join("compiled")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The empty component: magic, component-model version and layer.
    const COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    fn engine() -> Engine {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        Engine::new(&config).unwrap()
    }

    fn precompile(engine: &Engine) -> impl Fn(&[u8], &mut dyn Write) -> wasmtime::Result<()> + '_ {
        |bytes, out| Ok(out.write_all(&engine.precompile_component(bytes)?)?)
    }

    fn artifacts_in(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
    }

    #[test]
    fn a_loaded_component_is_mapped_from_its_artifact_file() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let artifacts = Artifacts::open(dir.path(), &engine).unwrap();
        let component = artifacts
            .load(&engine, COMPONENT, None, precompile(&engine))
            .unwrap();
        let files = artifacts_in(dir.path());
        assert_eq!(files.len(), 1, "one artifact, no temporary file left");
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        assert!(
            maps.contains(&*files[0].to_string_lossy()),
            "{} is not mapped",
            files[0].display()
        );
        drop(component);
    }

    #[test]
    fn an_adopted_artifact_is_moved_into_place_and_loads_without_a_compile() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let artifacts = Artifacts::open(dir.path(), &engine).unwrap();
        let pulled = dir.path().join("pulled");
        std::fs::create_dir(&pulled).unwrap();
        let layer = |bytes: &[u8]| {
            let mut file = NamedTempFile::new_in(&pulled).unwrap();
            file.write_all(bytes).unwrap();
            file
        };
        let artifact = engine.precompile_component(COMPONENT).unwrap();
        let trusted = |key: &str| vec![format!("sha256:{key}"), "engine".to_owned()];
        let team = Adopted::new("WasmReconciler/team", &trusted("team-key"));
        artifacts.adopt(&team, layer(&artifact)).unwrap();
        assert_eq!(
            std::fs::read_dir(&pulled).unwrap().count(),
            0,
            "moved, not copied"
        );
        artifacts
            .load(&engine, COMPONENT, Some(&team), |_, _| {
                panic!("adopted, not compiled")
            })
            .unwrap();
        // One the cache holds already is kept: a second layer changes nothing.
        artifacts.adopt(&team, layer(b"another")).unwrap();
        artifacts
            .load(&engine, COMPONENT, Some(&team), |_, _| {
                panic!("adopted, not compiled")
            })
            .unwrap();
        assert_eq!((artifacts.hits(), artifacts.misses()), (2, 0));
    }

    #[test]
    fn an_adopted_artifact_is_mapped_only_by_a_load_naming_the_same_trust() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let artifacts = Artifacts::open(dir.path(), &engine).unwrap();
        // The team's "precompiled form" of the operator's component is another component's code.
        let foreign = engine
            .precompile_component(b"\0asm\x0d\0\x01\0\0\x05\x04team")
            .unwrap();
        let team = Adopted::new("WasmReconciler/team", &["team-key".to_owned()]);
        let layer = NamedTempFile::new_in(dir.path()).unwrap();
        std::fs::write(layer.path(), &foreign).unwrap();
        artifacts.adopt(&team, layer).unwrap();
        let compiles = AtomicUsize::new(0);
        let counted = |bytes: &[u8], out: &mut dyn Write| {
            compiles.fetch_add(1, Ordering::Relaxed);
            precompile(&engine)(bytes, out)
        };
        artifacts.load(&engine, COMPONENT, None, counted).unwrap();
        assert_eq!(
            compiles.load(Ordering::Relaxed),
            1,
            "no trust: compiled here"
        );
        let operator = Adopted::new("/plugins/operator.wasm", &["operator-key".to_owned()]);
        let other = Adopted::new("WasmReconciler/other", &["team-key".to_owned()]);
        for trust in [&operator, &other] {
            artifacts
                .load(&engine, COMPONENT, Some(trust), counted)
                .unwrap();
        }
        assert_eq!(
            compiles.load(Ordering::Relaxed),
            1,
            "another trust maps the host's compile, not the team's artifact"
        );
        let names: Vec<String> = artifacts_in(dir.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("adopted-")), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("host-")), "{names:?}");
    }

    #[test]
    fn an_artifact_named_by_the_component_alone_is_never_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let artifacts = Artifacts::open(dir.path(), &engine).unwrap();
        let hex = hex(&Sha256::digest(COMPONENT));
        let old = dir
            .path()
            .join(format!("{hex}-{}{SUFFIX}", artifacts.settings()));
        std::fs::write(&old, engine.precompile_component(COMPONENT).unwrap()).unwrap();
        artifacts
            .load(&engine, COMPONENT, None, precompile(&engine))
            .unwrap();
        assert_eq!((artifacts.hits(), artifacts.misses()), (0, 1));
    }

    #[test]
    fn a_corrupt_artifact_is_compiled_again_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let artifacts = Artifacts::open(dir.path(), &engine).unwrap();
        artifacts
            .load(&engine, COMPONENT, None, precompile(&engine))
            .unwrap();
        let file = artifacts_in(dir.path()).remove(0);
        std::fs::write(&file, b"not an artifact").unwrap();
        artifacts
            .load(&engine, COMPONENT, None, precompile(&engine))
            .expect("compiled again");
        assert_eq!((artifacts.hits(), artifacts.misses()), (0, 2));
        artifacts
            .load(&engine, COMPONENT, None, |_, _| {
                panic!("served from the cache")
            })
            .unwrap();
        assert_eq!((artifacts.hits(), artifacts.misses()), (1, 2));
    }

    #[test]
    fn another_engines_settings_miss_instead_of_loading_its_artifacts() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        Artifacts::open(dir.path(), &engine)
            .unwrap()
            .load(&engine, COMPONENT, None, precompile(&engine))
            .unwrap();
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true).epoch_interruption(true);
        let other = Engine::new(&config).unwrap();
        let artifacts = Artifacts::open(dir.path(), &other).unwrap();
        artifacts
            .load(&other, COMPONENT, None, precompile(&other))
            .unwrap();
        assert_eq!((artifacts.hits(), artifacts.misses()), (0, 1));
        assert_eq!(artifacts_in(dir.path()).len(), 2, "one artifact per engine");
    }

    #[test]
    fn a_failed_compile_is_the_loads_error_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let artifacts = Artifacts::open(dir.path(), &engine).unwrap();
        let Err(error) = artifacts.load(&engine, COMPONENT, None, |_, out| {
            out.write_all(b"half an artifact")?;
            Err(wasmtime::Error::msg("the component does not compile"))
        }) else {
            panic!("nothing to load")
        };
        assert!(error.to_string().contains("does not compile"), "{error}");
        assert!(
            artifacts_in(dir.path()).is_empty(),
            "a partial artifact was left"
        );
    }

    #[test]
    fn a_write_the_file_refuses_is_remembered_apart_from_the_compile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("read-only");
        std::fs::write(&path, b"").unwrap();
        let mut file = File::open(&path).unwrap();
        let mut out = Recording {
            file: &mut file,
            failed: None,
        };
        assert!(out.write_all(b"code").is_err());
        assert!(out.failed.is_some(), "the failed write is remembered");
    }

    #[test]
    fn a_cache_that_cannot_be_written_leaves_the_component_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let mut artifacts = Artifacts::open(dir.path(), &engine).unwrap();
        let not_a_dir = dir.path().join("a-file");
        std::fs::write(&not_a_dir, b"").unwrap();
        artifacts.dir = not_a_dir;
        artifacts
            .load(&engine, COMPONENT, None, precompile(&engine))
            .expect("loaded without the cache");
        assert_eq!((artifacts.hits(), artifacts.misses()), (0, 1));
        assert_eq!(artifacts_in(dir.path()), [dir.path().join("a-file")]);
    }

    #[test]
    fn the_least_recently_used_artifacts_go_when_the_cache_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let mut artifacts = Artifacts::open(dir.path(), &engine).unwrap();
        let old = dir.path().join(format!("old{SUFFIX}"));
        let used = dir.path().join(format!("used{SUFFIX}"));
        let other = dir.path().join("not-an-artifact");
        for path in [&old, &used, &other] {
            std::fs::write(path, vec![0; 1000]).unwrap();
        }
        let hour_ago = SystemTime::now() - std::time::Duration::from_secs(3600);
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(hour_ago - std::time::Duration::from_secs(60))
            .unwrap();
        File::options()
            .write(true)
            .open(&used)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        artifacts.limit = 1500;
        artifacts
            .load(&engine, COMPONENT, None, precompile(&engine))
            .unwrap();
        let left = artifacts_in(dir.path());
        assert!(!left.contains(&old), "the oldest artifact stays: {left:?}");
        assert!(left.contains(&other), "a file not an artifact is kept");
        assert_eq!(left.len(), 2, "the new artifact is kept: {left:?}");
    }

    #[test]
    fn a_cache_directory_is_made_private_and_refused_when_others_may_write_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("compiled");
        private_dir(&cache).expect("a new cache is made private");
        let mode = std::fs::metadata(&cache).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = private_dir(&cache).expect_err("a world-writable cache is refused");
        assert!(refused.to_string().contains("mode 777"), "{refused}");
    }
}
