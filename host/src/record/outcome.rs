//! How a reconcile's result reads in a fixture: `done`, `error`, or `requeue-after <duration>`
//! with ` priority N` when it asked for one ([`crate::fixture`] reads these words back).

use std::time::Duration;

use crate::runtime::{DispatchError, Outcome};

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

/// `30s`, or `1500ms` when not whole seconds.
fn duration_text(after: Duration) -> String {
    if after.subsec_millis() == 0 {
        format!("{}s", after.as_secs())
    } else {
        format!("{}ms", after.as_millis())
    }
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
}
