//! A memory cgroup per operator run, so that an operator and every process it starts (wasmop's
//! compile workers) are measured together, as a Pod's memory limit counts them: resident memory
//! plus the page cache charged to the group. Made under the harness's own memory cgroup (v1) or
//! the unified hierarchy's root (v2), which needs root; where none can be made, runs are measured
//! by their process alone and the report's pod columns read `–`.
//!
//! Page cache is charged to the group that first reads a page, so before a run the operator's own
//! files (its program, its plugins, its compile cache) are dropped from the cache: each run then
//! pays for what it maps, as a new Pod on a node does.

use std::path::{Path, PathBuf};

use anyhow::Context;
use tokio::process::Command;

/// Which cgroup hierarchy the memory controller lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// A memory cgroup made for one operator run, removed when dropped.
#[derive(Debug)]
pub struct Group {
    dir: PathBuf,
    version: Version,
}

impl Group {
    /// Makes the group `name`, or gives `None` when this machine does not let the harness make
    /// memory cgroups (no root, no memory controller).
    pub fn make(name: &str) -> Option<Group> {
        let (parent, version) = parent()?;
        let dir = parent.join(format!("wasmop-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).ok()?;
        Some(Group { dir, version })
    }

    /// `command` made to start inside the group: a shell moves itself in, then becomes the
    /// program (the same process), so every page the program touches is charged to the group.
    pub fn wrap(&self, command: &Command) -> Command {
        let original = command.as_std();
        let mut wrapped = Command::new("sh");
        wrapped
            .arg("-c")
            .arg("echo 0 > \"$0\" && exec \"$@\"")
            .arg(self.dir.join("cgroup.procs"))
            .arg(original.get_program())
            .args(original.get_args());
        for (key, value) in original.get_envs() {
            match value {
                Some(value) => wrapped.env(key, value),
                None => wrapped.env_remove(key),
            };
        }
        if let Some(dir) = original.get_current_dir() {
            wrapped.current_dir(dir);
        }
        wrapped
    }

    /// The group's memory now and its high-water mark since it was made, in MiB.
    pub fn memory(&self) -> anyhow::Result<(f64, f64)> {
        let (current, peak) = match self.version {
            Version::V1 => ("memory.usage_in_bytes", "memory.max_usage_in_bytes"),
            Version::V2 => ("memory.current", "memory.peak"),
        };
        Ok((self.mib(current)?, self.mib(peak)?))
    }

    fn mib(&self, file: &str) -> anyhow::Result<f64> {
        let path = self.dir.join(file);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(text.trim().parse::<u64>()? as f64 / (1024.0 * 1024.0))
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // The operator has exited; its last children may take a moment to be reaped.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// Where the harness may make memory cgroups, and in which hierarchy.
fn parent() -> Option<(PathBuf, Version)> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let v1 = own.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then_some(path)
    });
    match v1 {
        Some(path) => {
            let dir = Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/'));
            dir.join("memory.max_usage_in_bytes")
                .exists()
                .then_some((dir, Version::V1))
        }
        None => {
            let root = Path::new("/sys/fs/cgroup");
            let controllers = std::fs::read_to_string(root.join("cgroup.subtree_control")).ok()?;
            let memory = controllers.split_whitespace().any(|c| c == "memory");
            memory.then(|| (root.to_owned(), Version::V2))
        }
    }
}

/// Drops `files` (and the files under directories among them) from the page cache, so that the
/// next process to read them is charged for them.
pub fn evict(files: &[PathBuf]) {
    for path in files {
        match std::fs::read_dir(path) {
            Ok(entries) => {
                let inner: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
                evict(&inner);
            }
            Err(_) => {
                if let Ok(file) = std::fs::File::open(path) {
                    let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wrapped_command_runs_in_the_group_from_its_start() -> anyhow::Result<()> {
        let Some(group) = Group::make("wrap-test") else {
            eprintln!("no memory cgroups here (needs root): nothing to check");
            return Ok(());
        };
        let mut command = Command::new("sh");
        command.args(["-c", "cat /proc/self/cgroup; echo \"$GREETING\""]);
        command.env("GREETING", "hello");
        let out = group.wrap(&command).output().await?;
        let out = String::from_utf8(out.stdout)?;
        let name = group
            .dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(out.contains(&name), "not in {name}: {out}");
        assert!(out.ends_with("hello\n"), "{out}");
        Ok(())
    }

    #[tokio::test]
    async fn a_group_counts_what_its_processes_and_their_children_allocate() -> anyhow::Result<()> {
        let Some(group) = Group::make("test") else {
            eprintln!("no memory cgroups here (needs root): nothing to check");
            return Ok(());
        };
        // A shell whose child holds 64 MiB: the group's peak sees the child.
        let mut shell = Command::new("sh");
        shell.args([
            "-c",
            "dd if=/dev/zero of=/dev/null bs=64M count=1 2>/dev/null",
        ]);
        group.wrap(&shell).status().await?;
        let (_, peak) = group.memory()?;
        assert!(peak >= 60.0, "the group peaked at {peak} MiB");
        Ok(())
    }
}
