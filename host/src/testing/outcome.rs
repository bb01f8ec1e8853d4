//! How a reconcile ended, in a fixture's words: `done`, `error`, or `requeue-after <duration>`
//! with ` priority N` when it asked for one. Durations are compared as durations, so an
//! expected `requeue-after 5m` is met by a reconcile that asked for 300 seconds, whichever way
//! either is written (`300s`, `5m`, `0.5s`, `500ms`, `1m30s`, `1h`).

use std::time::Duration;

use crate::runtime::{DispatchError, Outcome};

/// The units a duration may be written in, with their length in nanoseconds; `ms` before `m`
/// and `s`, so the longest unit is read first.
const UNITS: [(&str, f64); 4] = [("ms", 1e6), ("h", 3.6e12), ("m", 6e10), ("s", 1e9)];

/// An outcome as a fixture states it, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// `done`.
    Done,
    /// `error`.
    Error,
    /// `requeue-after <duration>[ priority N]`, the duration in nanoseconds.
    RequeueAfter { nanos: u128, priority: Option<i32> },
}

/// How a reconcile ended, as a fixture states it: `done`, `requeue-after 30s` (with
/// ` priority N` when it asked for one) or `error`.
pub fn outcome_text(result: &Result<Outcome, DispatchError>) -> String {
    match result {
        Ok(Outcome::Done) => "done".to_owned(),
        Ok(Outcome::RequeueAfter { after, priority }) => {
            let priority = priority.map(|p| format!(" priority {p}"));
            format!(
                "requeue-after {}{}",
                duration_text(*after),
                priority.unwrap_or_default()
            )
        }
        Err(_) => "error".to_owned(),
    }
}

/// Whether the outcome a fixture `expected` is the one a reconcile `got`: the same words, or
/// the same requeue after the same duration at the same priority.
pub fn same_outcome(expected: &str, got: &str) -> bool {
    match (read(expected), read(got)) {
        (Ok(want), Ok(have)) => want == have,
        _ => expected == got,
    }
}

/// Checks that `text` is an outcome a fixture may state.
pub fn check_outcome(text: &str) -> Result<(), String> {
    read(text).map(drop)
}

/// `30s`, or `1500ms` when not whole seconds.
fn duration_text(after: Duration) -> String {
    if after.subsec_millis() == 0 {
        format!("{}s", after.as_secs())
    } else {
        format!("{}ms", after.as_millis())
    }
}

/// `text` read as an outcome.
fn read(text: &str) -> Result<Ended, String> {
    let refused = || {
        format!(
            "`{text}` is no outcome: done, error or requeue-after <duration> like 30s or 5m, then priority N if asked"
        )
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        ["done"] => Ok(Ended::Done),
        ["error"] => Ok(Ended::Error),
        ["requeue-after", after, rest @ ..] => {
            let nanos = nanos(after).ok_or_else(refused)?;
            let priority = match rest {
                [] => None,
                ["priority", n] => Some(n.parse().map_err(|_| refused())?),
                _ => return Err(refused()),
            };
            Ok(Ended::RequeueAfter { nanos, priority })
        }
        _ => Err(refused()),
    }
}

/// A duration like `300s`, `5m`, `1.5s` or `1m30s`, in nanoseconds.
fn nanos(mut text: &str) -> Option<u128> {
    if text.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !text.is_empty() {
        let digits = text.find(|c: char| !c.is_ascii_digit() && c != '.')?;
        let number: f64 = text[..digits].parse().ok()?;
        let rest = &text[digits..];
        let (unit, length) = UNITS.iter().find(|(unit, _)| rest.starts_with(unit))?;
        total += number * length;
        text = &rest[unit.len()..];
    }
    total.is_finite().then_some(total.round() as u128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_as_fixtures_state_them() {
        let requeue = |after, priority| Ok(Outcome::RequeueAfter { after, priority });
        assert_eq!(outcome_text(&Ok(Outcome::Done)), "done");
        let half = requeue(Duration::from_millis(1500), Some(5));
        assert_eq!(outcome_text(&half), "requeue-after 1500ms priority 5");
        assert_eq!(
            outcome_text(&requeue(Duration::from_secs(30), None)),
            "requeue-after 30s"
        );
    }

    #[test]
    fn requeue_durations_compare_as_durations() {
        assert!(same_outcome("requeue-after 5m", "requeue-after 300s"));
        assert!(same_outcome("requeue-after 1m30s", "requeue-after 90s"));
        assert!(same_outcome("requeue-after 0.5s", "requeue-after 500ms"));
        assert!(same_outcome(
            "requeue-after 1h priority 2",
            "requeue-after 3600s priority 2"
        ));
        assert!(!same_outcome("requeue-after 5m", "requeue-after 301s"));
        assert!(!same_outcome(
            "requeue-after 5m priority 1",
            "requeue-after 300s"
        ));
        assert!(!same_outcome("done", "error"));
    }

    #[test]
    fn an_outcome_that_is_none_is_refused() {
        for typo in [
            "requeue-after 5 minutes",
            "requeue-after",
            "requeue 30s",
            "done!",
        ] {
            let error = check_outcome(typo).unwrap_err();
            assert!(error.contains(typo), "{error}");
        }
        check_outcome("requeue-after 30s priority -3").unwrap();
    }
}
