//! What the micro-benchmarks share: where the repository is, how samples and repeats are
//! summarised, and host services that count the JSON a guest is handed.

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

/// One figure measured once per repeat: the median of the repeats and their range.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    /// The median repeat (the upper one of an even count).
    pub median: f64,
    /// The lowest repeat.
    pub min: f64,
    /// The highest repeat.
    pub max: f64,
}

impl Spread {
    /// Summarises one figure's `repeats`; panics when there are none.
    pub fn of(repeats: impl IntoIterator<Item = f64>) -> Spread {
        let mut repeats: Vec<f64> = repeats.into_iter().collect();
        assert!(!repeats.is_empty(), "a figure needs at least one repeat");
        repeats.sort_by(f64::total_cmp);
        Spread {
            median: repeats[repeats.len() / 2],
            min: repeats[0],
            max: repeats[repeats.len() - 1],
        }
    }

    /// `median (min–max)` with `decimals` digits after the point.
    pub fn show(&self, decimals: usize) -> String {
        format!(
            "{:.decimals$} ({:.decimals$}–{:.decimals$})",
            self.median, self.min, self.max
        )
    }
}
