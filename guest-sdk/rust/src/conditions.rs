//! Status conditions in the standard `metav1.Condition` shape: set one so that its
//! lastTransitionTime moves only when its status does, which keeps a converged status stable.

use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The wall clock, at the one-second precision the apiserver stores times with.
pub fn now() -> Time {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Time(Timestamp::from_second(i64::try_from(seconds).unwrap_or(i64::MAX)).unwrap_or_default())
}

/// A condition of type `type_` with status `True` or `False`, transitioned now.
pub fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        observed_generation: None,
        last_transition_time: now(),
    }
}

/// The condition of type `type_`, if present.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is present with status `True`.
pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
}

/// Sets `condition`, replacing the one of the same type. When the status is unchanged the old
/// lastTransitionTime is kept. Returns whether anything other than lastTransitionTime changed.
pub fn set_condition(conditions: &mut Vec<Condition>, mut condition: Condition) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == condition.type_) else {
        conditions.push(condition);
        return true;
    };
    if existing.status == condition.status {
        condition.last_transition_time = existing.last_transition_time.clone();
    }
    let changed = *existing != condition;
    *existing = condition;
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64, status: bool, reason: &str) -> Condition {
        Condition {
            last_transition_time: Time(Timestamp::from_second(second).unwrap()),
            ..condition("Ready", status, reason, "")
        }
    }

    #[test]
    fn set_condition_adds_a_missing_condition() {
        let mut conditions = Vec::new();
        assert!(set_condition(&mut conditions, at(10, true, "Available")));
        assert_eq!(conditions, vec![at(10, true, "Available")]);
    }

    #[test]
    fn same_status_keeps_the_transition_time_and_reports_no_change() {
        let mut conditions = vec![at(10, true, "Available")];
        assert!(!set_condition(&mut conditions, at(20, true, "Available")));
        assert_eq!(conditions, vec![at(10, true, "Available")]);
    }

    #[test]
    fn same_status_with_a_new_reason_keeps_the_transition_time() {
        let mut conditions = vec![at(10, false, "Progressing")];
        assert!(set_condition(&mut conditions, at(20, false, "Scaling")));
        assert_eq!(conditions, vec![at(10, false, "Scaling")]);
    }

    #[test]
    fn a_status_change_bumps_the_transition_time() {
        let mut conditions = vec![at(10, false, "Progressing")];
        assert!(set_condition(&mut conditions, at(20, true, "Available")));
        assert_eq!(conditions, vec![at(20, true, "Available")]);
        assert!(is_condition_true(&conditions, "Ready"));
    }

    #[test]
    fn other_condition_types_are_left_alone() {
        let other = Condition {
            type_: "Degraded".into(),
            ..at(5, false, "Fine")
        };
        let mut conditions = vec![other.clone()];
        set_condition(&mut conditions, at(10, true, "Available"));
        assert_eq!(conditions[0], other);
        assert_eq!(conditions.len(), 2);
    }

    #[test]
    fn now_has_whole_seconds() {
        assert_eq!(now().0.subsec_nanosecond(), 0);
        assert!(now().0.as_second() > 1_700_000_000);
    }
}
