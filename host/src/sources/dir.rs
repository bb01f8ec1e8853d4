//! The `--plugin-dir` source: every `*.wasm` file directly in the directory is a plugin, its
//! source named by its path.
//!
//! The directory is polled rather than watched through inotify: polling behaves the same on
//! every filesystem, including the symlink swaps of a ConfigMap volume. A file is installed once
//! its size and modification time have stayed the same for one poll and its digest differs from
//! the installed one, so a file still being written is not loaded; to publish atomically, write
//! elsewhere (or to a dot-file, which is ignored) and rename. A file that fails to load leaves the
//! previous version running and is tried again when it changes. A removed file unloads its
//! plugin. A file that resolves (through symlinks) to a place outside the directory is ignored,
//! with a warning the first time it is seen: whoever can plant a symlink there must not make the
//! host load code from elsewhere.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::distribution::digest;
use crate::plugins::PluginHandle;
use crate::runtime::PluginOptions;

/// How often the directory is read.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// A file's size and modification time.
type Stamp = (u64, SystemTime);

struct Seen {
    stamp: Stamp,
    stable: bool,
    digest: Option<String>,
}

/// A watched plugin directory.
pub struct PluginDir {
    dir: PathBuf,
    known: HashMap<PathBuf, Seen>,
    /// Files already reported as leading out of the directory.
    outside: Mutex<HashSet<PathBuf>>,
}

impl PluginDir {
    /// A watcher of `dir` that knows no file yet.
    pub fn new(dir: PathBuf) -> Self {
        PluginDir {
            dir,
            known: HashMap::new(),
            outside: Mutex::default(),
        }
    }

    /// The `*.wasm` files in the directory now, in name order, with their stamps.
    pub async fn files(&self) -> std::io::Result<Vec<(PathBuf, Stamp)>> {
        let mut entries = tokio::fs::read_dir(&self.dir).await?;
        let home = tokio::fs::canonicalize(&self.dir).await?;
        let mut files = Vec::new();
        while let Some(entry) = entries.next_entry().await? {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || path.extension().is_none_or(|e| e != "wasm") {
                continue;
            }
            let Ok(resolved) = tokio::fs::canonicalize(&path).await else {
                continue;
            };
            if !resolved.starts_with(&home) {
                self.report_outside(&path, &resolved);
                continue;
            }
            let Ok(metadata) = tokio::fs::metadata(&resolved).await else {
                continue;
            };
            if metadata.is_file() {
                files.push((path, (metadata.len(), metadata.modified()?)));
            }
        }
        files.sort();
        Ok(files)
    }

    /// The bytes of `file`, read through one open descriptor: refused when what was opened lies
    /// outside the directory (a symlink swapped after [`PluginDir::files`] looked), so the bytes
    /// checked and loaded are those of a file inside it.
    pub async fn read(&self, file: &Path) -> std::io::Result<Vec<u8>> {
        let home = tokio::fs::canonicalize(&self.dir).await?;
        let file = file.to_owned();
        let read = tokio::task::spawn_blocking(move || read_inside(&file, &home));
        read.await.map_err(std::io::Error::other)?
    }

    fn report_outside(&self, path: &Path, resolved: &Path) {
        let mut outside = self.outside.lock().unwrap_or_else(|e| e.into_inner());
        if outside.insert(path.to_owned()) {
            tracing::warn!(
                file = %path.display(),
                target = %resolved.display(),
                "ignoring a plugin file that leads out of the plugin directory"
            );
        }
    }

    /// Records that `file`, at `stamp`, was tried before watching began with the bytes of
    /// `digest`.
    pub fn loaded(&mut self, file: &Path, stamp: Stamp, digest: String) {
        let seen = Seen {
            stamp,
            stable: true,
            digest: Some(digest),
        };
        self.known.insert(file.to_owned(), seen);
    }

    /// Polls every `interval` until dropped, applying changes through `plugins`.
    pub async fn watch(
        mut self,
        plugins: PluginHandle,
        options: impl Fn(&Path) -> PluginOptions,
        interval: Duration,
    ) {
        loop {
            tokio::time::sleep(interval).await;
            match self.files().await {
                Ok(files) => self.apply(&plugins, &options, files).await,
                Err(error) => {
                    tracing::warn!(dir = %self.dir.display(), "cannot read the plugin directory: {error}")
                }
            }
        }
    }

    async fn apply(
        &mut self,
        plugins: &PluginHandle,
        options: &impl Fn(&Path) -> PluginOptions,
        files: Vec<(PathBuf, Stamp)>,
    ) {
        let gone: Vec<PathBuf> = self
            .known
            .keys()
            .filter(|known| !files.iter().any(|(file, _)| file == *known))
            .cloned()
            .collect();
        for file in gone {
            self.known.remove(&file);
            let _ = plugins.remove(&file.display().to_string()).await;
        }
        for (file, stamp) in files {
            if self.settled(&file, stamp) {
                self.install(plugins, options, &file).await;
            }
        }
    }

    /// Notes `file` at `stamp`; true when it has just stayed unchanged for a whole poll.
    fn settled(&mut self, file: &Path, stamp: Stamp) -> bool {
        let Some(seen) = self.known.get_mut(file) else {
            let seen = Seen {
                stamp,
                stable: false,
                digest: None,
            };
            self.known.insert(file.to_owned(), seen);
            return false;
        };
        if seen.stamp != stamp {
            seen.stamp = stamp;
            seen.stable = false;
            return false;
        }
        !std::mem::replace(&mut seen.stable, true)
    }

    async fn install(
        &mut self,
        plugins: &PluginHandle,
        options: &impl Fn(&Path) -> PluginOptions,
        file: &Path,
    ) {
        let bytes = match self.read(file).await {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::warn!(file = %file.display(), "plugin file not installed: {error}");
                return;
            }
        };
        let digest = digest(&bytes);
        let seen = self.known.get_mut(file).expect("settled files are known");
        if seen.digest.as_ref() == Some(&digest) {
            return;
        }
        seen.digest = Some(digest);
        let source = file.display().to_string();
        if let Err(error) =
            crate::plugins::signed::check(plugins.runtime().ceiling(), file, &bytes).await
        {
            tracing::warn!(%source, "plugin file not installed: {error}");
            return;
        }
        match plugins.install(&source, file, bytes, options(file)).await {
            Ok(installed) => {
                tracing::info!(%source, loaded_in = ?installed.loaded_in, swapped_in = ?installed.swapped_in, "plugin file installed")
            }
            Err(error) => tracing::warn!(%source, "plugin file not installed: {error}"),
        }
    }
}

/// Opens `file`, checks where the opened file lies (its descriptor's path) is inside `home`,
/// and reads it whole through that descriptor.
fn read_inside(file: &Path, home: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let mut opened = std::fs::File::open(file)?;
    let actual = std::fs::read_link(format!("/proc/self/fd/{}", opened.as_raw_fd()))?;
    if !actual.starts_with(home) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} leads out of the plugin directory", file.display()),
        ));
    }
    let mut bytes = Vec::new();
    opened.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_settles_after_one_unchanged_poll_and_again_after_each_change() {
        let mut dir = PluginDir::new(PathBuf::from("/plugins"));
        let file = Path::new("/plugins/a.wasm");
        let (first, second) = (
            (10, SystemTime::UNIX_EPOCH),
            (20, SystemTime::UNIX_EPOCH + Duration::from_secs(1)),
        );
        assert!(!dir.settled(file, first), "new: wait a poll");
        assert!(dir.settled(file, first), "unchanged for a poll");
        assert!(!dir.settled(file, first), "already handled");
        assert!(!dir.settled(file, second), "still being written");
        assert!(dir.settled(file, second));
        dir.loaded(Path::new("/plugins/b.wasm"), first, digest(b"module"));
        assert!(
            !dir.settled(Path::new("/plugins/b.wasm"), first),
            "loaded at start"
        );
    }

    #[tokio::test]
    async fn files_that_lead_out_of_the_directory_are_ignored() {
        let root = tempfile::tempdir().unwrap();
        let (plugins, elsewhere) = (root.path().join("plugins"), root.path().join("elsewhere"));
        std::fs::create_dir_all(plugins.join("..data")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("evil.wasm"), b"x").unwrap();
        std::fs::write(plugins.join("..data/good.wasm"), b"x").unwrap();
        std::os::unix::fs::symlink(elsewhere.join("evil.wasm"), plugins.join("evil.wasm")).unwrap();
        // A ConfigMap volume's own layout: a symlink into its `..data` directory stays inside.
        std::os::unix::fs::symlink("..data/good.wasm", plugins.join("good.wasm")).unwrap();
        let dir = PluginDir::new(plugins.clone());
        let files: Vec<PathBuf> = dir
            .files()
            .await
            .unwrap()
            .into_iter()
            .map(|(f, _)| f)
            .collect();
        assert_eq!(files, [plugins.join("good.wasm")]);
    }

    #[tokio::test]
    async fn a_symlink_swapped_out_of_the_directory_after_listing_is_refused_when_read() {
        let root = tempfile::tempdir().unwrap();
        let (plugins, elsewhere) = (root.path().join("plugins"), root.path().join("elsewhere"));
        std::fs::create_dir_all(plugins.join("..data")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("evil.wasm"), b"evil").unwrap();
        std::fs::write(plugins.join("..data/good.wasm"), b"good").unwrap();
        let link = plugins.join("good.wasm");
        std::os::unix::fs::symlink("..data/good.wasm", &link).unwrap();
        let dir = PluginDir::new(plugins.clone());
        assert_eq!(dir.files().await.unwrap().len(), 1);
        assert_eq!(dir.read(&link).await.unwrap(), b"good");
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("evil.wasm"), &link).unwrap();
        let refused = dir
            .read(&link)
            .await
            .expect_err("read through the swapped link");
        assert_eq!(
            refused.kind(),
            std::io::ErrorKind::PermissionDenied,
            "{refused}"
        );
    }
}
