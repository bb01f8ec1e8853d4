//! What the micro-benchmarks share: where the repository is, how samples are summarised, and
//! host services that count the JSON a guest is handed.

// Each benchmark is its own crate and uses only part of this.
#![allow(dead_code)]

pub mod counting;

use std::path::{Path, PathBuf};

/// The repository's root, where `target/components/` holds the built guests.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The median of `samples` (the upper one of an even count).
pub fn median<T: Ord + Copy>(mut samples: Vec<T>) -> T {
    samples.sort();
    samples[samples.len() / 2]
}
