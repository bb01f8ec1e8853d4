"""Unit tests of a plugin as fixtures: the fixture files `wasmop test` runs against a built
component, run here in-process against the plugin imported by the test, with no WebAssembly
build. A fake host serves the fixture's objects to the cache reads, applies and records the writes
(answering those the fixture rejects with its error), checks the plugin's declared permissions
and fixes the SDK's clock to the fixture's `now`; the writes sent and the outcome are compared
with the fixture's, and so are the events when the fixture states them; every difference is
reported as `wasmop test` reports it.

    import webapp                                  # registers the plugin's reconciler
    from wasmop.testing import FixtureTestCase

    class Fixtures(FixtureTestCase):
        def test_fixtures(self):
            self.assertFixturesPass("fixtures")    # each file a subtest

`run_fixture(path)` returns a `FixtureResult` (outcome, error, writes, events, logs,
differences) to inspect instead. Needs PyYAML. Where this differs from `wasmop test`: the
plugin's module state lives on from one fixture to the next (the host starts each reconcile in a
fresh instance), only the SDK's clock is stopped (`wasmop.conditions.now`), not `datetime` or
`time` themselves, and limits (memory, time, write rate) are not enforced.
"""

from .check import FixtureResult, FixtureTestCase, fixture_files, run_fixture
from .fixture import (DEFAULT_NOW, VERBS, Fixture, FixtureError, FixtureEvent, FixtureWrite,
                      Rejection, load_fixture, parse_fixture)
from .host import Event, LogLine

__all__ = [
    "DEFAULT_NOW", "Event", "Fixture", "FixtureError", "FixtureEvent", "FixtureResult", "FixtureTestCase",
    "FixtureWrite", "LogLine", "Rejection", "VERBS", "fixture_files", "load_fixture",
    "parse_fixture", "run_fixture",
]
