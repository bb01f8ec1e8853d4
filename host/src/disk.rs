//! Files the host writes once and reads back only through a mapping (compiled artifacts, pulled
//! components): written to disk and dropped from the page cache, where they would count against
//! the pod's memory limit.

use std::fs::File;

/// Writes `file`'s pages to disk and lets the kernel drop them from the page cache: an artifact
/// is large and read back only where a mapping touches it, and its written pages would count
/// against the host's memory limit until the kernel reclaimed them.
pub fn written_back(file: &File) -> std::io::Result<()> {
    file.sync_data()?;
    dropped(file)
}

/// Lets the kernel drop `file`'s clean pages that no mapping holds from the page cache.
pub fn dropped(file: &File) -> std::io::Result<()> {
    rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed)?;
    Ok(())
}
