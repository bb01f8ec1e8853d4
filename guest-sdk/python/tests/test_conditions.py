import re
import unittest

from wasmop.conditions import (condition, find_condition, is_condition_true, now,
                               set_condition)


def at(second: int, status: bool, reason: str, type: str = "Ready"):
    cond = condition(type, status, reason, "")
    cond.last_transition_time = f"2026-01-01T00:00:{second:02}Z"
    return cond


class SetConditionTest(unittest.TestCase):
    def test_adds_a_missing_condition(self):
        conditions = []
        self.assertTrue(set_condition(conditions, at(10, True, "Available")))
        self.assertEqual(conditions, [at(10, True, "Available")])

    def test_same_status_keeps_the_transition_time_and_reports_no_change(self):
        conditions = [at(10, True, "Available")]
        self.assertFalse(set_condition(conditions, at(20, True, "Available")))
        self.assertEqual(conditions, [at(10, True, "Available")])

    def test_same_status_with_a_new_reason_keeps_the_transition_time(self):
        conditions = [at(10, False, "Progressing")]
        self.assertTrue(set_condition(conditions, at(20, False, "Scaling")))
        self.assertEqual(conditions, [at(10, False, "Scaling")])

    def test_a_status_change_bumps_the_transition_time(self):
        conditions = [at(10, False, "Progressing")]
        self.assertTrue(set_condition(conditions, at(20, True, "Available")))
        self.assertEqual(conditions, [at(20, True, "Available")])
        self.assertTrue(is_condition_true(conditions, "Ready"))

    def test_other_condition_types_are_left_alone(self):
        other = at(5, False, "Fine", type="Degraded")
        conditions = [other]
        set_condition(conditions, at(10, True, "Available"))
        self.assertEqual(conditions[0], other)
        self.assertEqual(len(conditions), 2)
        self.assertEqual(find_condition(conditions, "Ready").reason, "Available")
        self.assertIsNone(find_condition(None, "Ready"))


class ConditionTest(unittest.TestCase):
    def test_now_has_whole_seconds_in_utc(self):
        self.assertRegex(now(), re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"))

    def test_condition_takes_a_bool_or_unknown_and_an_optional_generation(self):
        self.assertEqual(condition("Ready", False, "Waiting", "m").status, "False")
        unknown = condition("Ready", "Unknown", "Waiting", "m", observed_generation=4)
        self.assertEqual(unknown.status, "Unknown")
        self.assertEqual(unknown["observedGeneration"], 4)
        self.assertNotIn("observedGeneration", condition("Ready", True, "Ok", "m"))


if __name__ == "__main__":
    unittest.main()
