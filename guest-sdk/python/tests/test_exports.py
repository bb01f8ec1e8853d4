import unittest
from datetime import timedelta
from unittest import mock

from componentize_py_types import Err
from fake_host import imports
from wit_world.imports import log as wit_log
from wit_world.imports import plugin as wit
from wit_world.imports import types as wit_types

from wasmop import Conflict, Done, ObjectKey, RequeueAfter, Terminal, plugin, reconciler
from wasmop.exports import WitWorld, export, failure, outcome
from wasmop.kinds import ConfigMap, Namespace


class OutcomeTest(unittest.TestCase):
    def test_outcomes_convert_to_their_wit_variants(self):
        self.assertEqual(outcome(None), wit.Outcome_Done())
        self.assertEqual(outcome(Done()), wit.Outcome_Done())
        self.assertEqual(outcome(RequeueAfter(2)),
                         wit.Outcome_RequeueAfter(wit.Requeue(2000, None)))
        self.assertEqual(outcome(RequeueAfter(timedelta(seconds=0.25), priority=3)),
                         wit.Outcome_RequeueAfter(wit.Requeue(250, 3)))

    def test_failures_convert_to_retryable_unless_terminal(self):
        self.assertEqual(failure(Terminal("never")), wit.ReconcileError_Terminal("never"))
        self.assertEqual(failure(Conflict(409, "Conflict", "stale")),
                         wit.ReconcileError_Retryable("conflict: stale (409 Conflict)"))


class ExportsTest(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.object(plugin, "_registered", None)
        patcher.start()
        self.addCleanup(patcher.stop)

    def register(self, function):
        return reconciler(name="t", version="1", primary=ConfigMap)(function)

    def test_describe_returns_the_registration(self):
        self.register(lambda req: None)
        self.assertEqual(WitWorld().describe().name, "t")

    def test_reconcile_passes_the_request_and_returns_the_outcome(self):
        seen = []
        self.register(lambda req: seen.append(req) or RequeueAfter(1))
        result = WitWorld().reconcile(wit_types.ObjectKey("ns", "a"))
        self.assertEqual(seen, [ObjectKey("ns", "a")])
        self.assertEqual(result, wit.Outcome_RequeueAfter(wit.Requeue(1000, None)))

    def test_an_unexpected_exception_is_logged_and_retried(self):
        def broken(req):
            raise KeyError("spec")
        self.register(broken)
        with imports(wit_log, log=lambda *args: None) as logged:
            with self.assertRaises(Err) as raised:
                WitWorld().reconcile(wit_types.ObjectKey("ns", "a"))
        self.assertEqual(raised.exception.value, wit.ReconcileError_Retryable("KeyError: 'spec'"))
        self.assertIn("Traceback", logged[0][1][1])

    def test_map_uses_the_mapper_and_accepts_pairs(self):
        rec = self.register(lambda req: None)

        @rec.mapper
        def to_requests(kind, obj):
            return [ObjectKey(obj.metadata.name, "a"), ("other", "b")]

        keys = WitWorld().map(wit_types.Gvk("", "v1", "Namespace"),
                              '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}}')
        self.assertEqual(keys, [wit_types.ObjectKey("ns", "a"), wit_types.ObjectKey("other", "b")])

    def test_without_a_mapper_nothing_is_mapped(self):
        self.register(lambda req: None)
        self.assertEqual(WitWorld().map(wit_types.Gvk("", "v1", "Namespace"), "{}"), [])

    def test_one_reconciler_per_component(self):
        self.register(lambda req: None)
        with self.assertRaisesRegex(RuntimeError, "one reconciler"):
            self.register(lambda req: None)

    def test_export_fails_when_the_plugin_registers_nothing(self):
        with self.assertRaisesRegex(RuntimeError, "no reconciler is registered"):
            export("json")

    def test_a_bad_registration_fails_at_decoration(self):
        with self.assertRaises(ValueError):
            reconciler(name="t", version="1", primary=Namespace, predicates=["sometimes"])


if __name__ == "__main__":
    unittest.main()
