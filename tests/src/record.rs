//! The reconciles wasmop replicas logged — the `reconcile started` and `reconcile ended` lines
//! `RUST_LOG=wasmop::controller::workers=debug` prints, each stamped with its time and key — and
//! the check that no key was ever reconciled by two replicas at once.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// One reconcile as a replica logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconcile {
    /// The replica: the index of its log.
    pub replica: usize,
    /// The key reconciled, `namespace/name`.
    pub key: String,
    /// When it started, as logged (RFC 3339, UTC).
    pub start: String,
    /// When it ended; the log's last time when it never did (the replica was killed).
    pub end: String,
}

/// Two replicas reconciling one key at overlapping times.
#[derive(Debug, Clone)]
pub struct Overlap(pub Box<(Reconcile, Reconcile)>);

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = &*self.0;
        write!(
            f,
            "{} was reconciled by replicas {} ({}–{}) and {} ({}–{}) at once",
            a.key, a.replica, a.start, a.end, b.replica, b.start, b.end
        )
    }
}

impl std::error::Error for Overlap {}

/// The reconciles in the log `text` of replica `replica`.
pub fn reconciles(replica: usize, text: &str) -> Vec<Reconcile> {
    let mut open: BTreeMap<String, String> = BTreeMap::new();
    let mut done = Vec::new();
    let mut last = String::new();
    for line in text.lines() {
        let Some(time) = line.split_whitespace().next() else {
            continue;
        };
        last = time.to_owned();
        let Some(key) = line.split("key=").nth(1).map(|k| k.trim().to_owned()) else {
            continue;
        };
        if line.contains("reconcile started") {
            open.insert(key, time.to_owned());
        } else if line.contains("reconcile ended")
            && let Some(start) = open.remove(&key)
        {
            let end = time.to_owned();
            done.push(Reconcile {
                replica,
                key,
                start,
                end,
            });
        }
    }
    done.extend(open.into_iter().map(|(key, start)| Reconcile {
        replica,
        key,
        start,
        end: last.clone(),
    }));
    done
}

/// Every reconcile in the replicas' `logs` (a log that cannot be read counts as empty).
pub fn read(logs: &[&Path]) -> Vec<Reconcile> {
    let mut all = Vec::new();
    for (replica, log) in logs.iter().enumerate() {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        all.extend(reconciles(replica, &text));
    }
    all
}

/// Checks that no key of `record` was reconciled by two replicas at overlapping times; returns
/// how many reconciles it holds.
pub fn no_key_on_two_replicas(record: &[Reconcile]) -> Result<usize, Overlap> {
    let mut by_key: BTreeMap<&str, Vec<&Reconcile>> = BTreeMap::new();
    for reconcile in record {
        by_key.entry(&reconcile.key).or_default().push(reconcile);
    }
    for runs in by_key.values_mut() {
        // RFC 3339 times in UTC with a fixed number of digits order as text.
        runs.sort_by(|a, b| a.start.cmp(&b.start));
        for pair in runs.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a.replica != b.replica && a.end > b.start {
                return Err(Overlap(Box::new((a.clone(), b.clone()))));
            }
        }
    }
    Ok(record.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
2026-12-03T10:00:00.000001Z DEBUG wasmop::controller::workers: reconcile started plugin=\"webapp\" key=ns/a
2026-12-03T10:00:00.000002Z DEBUG wasmop::controller::workers: reconcile started plugin=\"webapp\" key=ns/b
2026-12-03T10:00:00.000003Z DEBUG wasmop::controller::workers: reconcile ended plugin=\"webapp\" key=ns/a
2026-12-03T10:00:00.000009Z  INFO wasmop: stopping
";

    #[test]
    fn a_log_gives_its_reconciles_and_one_cut_short_ends_with_the_log() {
        let record = reconciles(1, LOG);
        let spans: Vec<(&str, &str, &str)> = record
            .iter()
            .map(|r| (r.key.as_str(), &r.start[17..], &r.end[17..]))
            .collect();
        assert_eq!(
            spans,
            [
                ("ns/a", "00.000001Z", "00.000003Z"),
                ("ns/b", "00.000002Z", "00.000009Z"),
            ]
        );
    }

    #[test]
    fn one_key_on_two_replicas_at_once_is_caught_and_one_after_the_other_is_not() {
        let run = |replica, start: &str, end: &str| Reconcile {
            replica,
            key: "ns/a".into(),
            start: start.into(),
            end: end.into(),
        };
        let handed_over = [run(0, "T1", "T2"), run(1, "T3", "T4"), run(0, "T0", "T1")];
        assert_eq!(no_key_on_two_replicas(&handed_over).unwrap(), 3);
        let overlapping = [run(0, "T1", "T3"), run(1, "T2", "T4")];
        let overlap = no_key_on_two_replicas(&overlapping).unwrap_err();
        assert_eq!((overlap.0.0.replica, overlap.0.1.replica), (0, 1));
    }
}
