//! What the micro-benchmarks share: where the repository is and how samples are summarised.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The repository's root, where `target/components/` holds the built guests.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The median of `samples` (the upper one of an even count).
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}
