import unittest

from fake_host import status
from wit_world.imports import types as wit

from wasmop import (AlreadyExists, ApiError, Conflict, DeniedBy, Forbidden, Invalid, NotFound,
                    Other, Retryable, Terminal, Timeout, Unavailable)
from wasmop.errors import from_wit, reconcile_error


class FromWitTest(unittest.TestCase):
    def test_every_wit_error_maps_to_its_own_class(self):
        cases = [
            (wit.Error_NotFound(status(404, "NotFound")), NotFound, "not found"),
            (wit.Error_Conflict(status(409, "Conflict")), Conflict, "conflict"),
            (wit.Error_AlreadyExists(status(409, "AlreadyExists")), AlreadyExists,
             "already exists"),
            (wit.Error_Forbidden((DeniedBy.DECLARED_PERMISSIONS, status(403, "Forbidden"))),
             Forbidden, "forbidden by the plugin's declared permissions"),
            (wit.Error_Invalid(status(422, "Invalid")), Invalid, "invalid"),
            (wit.Error_Timeout(status(504, "Timeout")), Timeout, "timed out"),
            (wit.Error_Unavailable(status(503, "ServiceUnavailable")), Unavailable,
             "unavailable"),
            (wit.Error_Other(status(0, "")), Other, "failed"),
        ]
        for error, cls, prefix in cases:
            with self.subTest(cls=cls.__name__):
                exc = from_wit(error)
                self.assertIs(type(exc), cls)
                self.assertIsInstance(exc, ApiError)
                code = error.value[1].code if cls is Forbidden else error.value.code
                self.assertEqual(exc.code, code)
                self.assertTrue(str(exc).startswith(prefix + ": "), str(exc))

    def test_forbidden_keeps_who_denied_it(self):
        exc = from_wit(wit.Error_Forbidden((DeniedBy.APISERVER, status(403, "Forbidden"))))
        self.assertEqual(exc.denied_by, DeniedBy.APISERVER)
        self.assertEqual(exc.reason, "Forbidden")
        self.assertEqual(exc.message, "Forbidden happened")
        self.assertEqual(str(exc), "forbidden by the apiserver: Forbidden happened (403 Forbidden)")


class ReconcileErrorTest(unittest.TestCase):
    def test_api_errors_and_other_exceptions_become_retryable(self):
        api = reconcile_error(Unavailable(503, "ServiceUnavailable", "try later"))
        self.assertIsInstance(api, Retryable)
        self.assertIn("ServiceUnavailable", str(api))
        bug = reconcile_error(KeyError("spec"))
        self.assertFalse(bug.terminal)
        self.assertEqual(str(bug), "KeyError: 'spec'")

    def test_reconcile_errors_stay_as_raised(self):
        terminal = Terminal("bad spec")
        self.assertIs(reconcile_error(terminal), terminal)
        self.assertTrue(terminal.terminal)
        self.assertFalse(Retryable("later").terminal)


if __name__ == "__main__":
    unittest.main()
