"""Running a fixture: the registered reconciler reconciles the fixture's request against a fake
host holding only the fixture's objects, and what it did is compared with what the fixture
expects — its outcome, write by write and field by field, and event by event — as `wasmop test`
compares them. A file that is no fixture fails its own test, naming the file and what is wrong;
the other fixtures still run.
"""

import json
import os
import unittest
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from componentize_py_types import Err
from wit_world.imports import plugin as wit_plugin
from wit_world.imports import types as wit

from ..exports import WitWorld
from ..names import ObjectKey
from ..plugin import registered
from . import diff
from .fixture import Fixture, FixtureError, load_fixture, ref_of
from .host import FakeHost
from .store import Store
from .outcome import outcome_text, same_outcome

FIXTURE_EXTENSIONS = (".yaml", ".yml", ".json")
"""The files of a directory that are fixtures."""

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class FixtureResult:
    """What a fixture's reconcile did, and how it differs from what the fixture expects."""

    name: str
    """The fixture's name, or its file's when it has none."""
    source: str
    """The file it was read from."""
    outcome: str
    """How the reconcile ended, as fixtures state it: `done`, `requeue-after 30s`, `error`."""
    error: Optional[str]
    """The error it ended with, as `wasmop test` words it, if any."""
    writes: list
    """Every `FixtureWrite` it sent, in order, rejected ones included."""
    events: list
    """Every `Event` it recorded."""
    logs: list
    """Every `LogLine` it logged."""
    differences: list = field(default_factory=list)
    """Each difference from the fixture, one line each; none when it passed."""

    @property
    def passed(self) -> bool:
        """Whether it did what the fixture expects."""
        return not self.differences

    def report(self) -> str:
        """`ok` or `FAIL` with the fixture's name and file, then each difference, as `wasmop
        test` prints it; when it failed, also the error (unless a difference quotes it) and what
        the plugin logged."""
        verdict = "ok  " if self.passed else "FAIL"
        lines = [f"{verdict}  {self.name} ({self.source})"]
        lines += [f"        {difference}" for difference in self.differences]
        if self.passed:
            return "\n".join(lines)
        if self.error and not any(self.error in difference for difference in self.differences):
            lines.append(f"        error: {self.error}")
        lines += [f"        log: {line}" for line in self.logs]
        return "\n".join(lines)


def run_fixture(fixture: Union[PathLike, Fixture], source: Optional[str] = None) -> FixtureResult:
    """Runs a fixture (a file, or a parsed `Fixture` from `source`) against the plugin's
    registered reconciler, imported in this process; raises `FixtureError` for a file that is
    not a fixture."""
    if not isinstance(fixture, Fixture):
        source = os.fspath(fixture)
        fixture = load_fixture(fixture)
    source = source or "<fixture>"
    registration = registered().registration.to_wit()
    host = FakeHost(registration, fixture.objects, fixture.writes)
    cached = _cached(fixture, host.store)
    with host.installed(fixture.now):
        outcome, error = _reconcile(registration.name, fixture.request)
    differences = []
    if fixture.outcome is not None and not same_outcome(fixture.outcome, outcome):
        cause = f" ({error})" if error else ""
        differences.append(f"outcome: expected `{fixture.outcome}`, got `{outcome}`{cause}")
    differences += diff.writes(fixture.writes, host.writes, cached)
    if fixture.events is not None:
        differences += diff.events(fixture.events, [event.as_fixture() for event in host.events])
    return FixtureResult(name=source if fixture.name is None else fixture.name, source=source, outcome=outcome,
                         error=error, writes=host.writes, events=host.events, logs=host.logs,
                         differences=differences)


def fixture_files(*paths: PathLike) -> list:
    """The fixture files `paths` name: files as given, and each directory's `.yaml`, `.yml` and
    `.json` files in name order."""
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(file for file in path.iterdir() if file.suffix in FIXTURE_EXTENSIONS)
        else:
            files.append(path)
    return files


def _cached(fixture: Fixture, store: Store) -> diff.Cached:
    """The fixture's objects, as given and as `store`, seeded with them, holds them."""
    held = [json.loads(store.get(ref_of(obj))) for obj in fixture.objects]
    return diff.Cached(fixture.objects, held)


class FixtureTestCase(unittest.TestCase):
    """A `TestCase` that runs fixtures against the plugin imported in the test's process."""

    def assertFixturePasses(self, path: PathLike) -> FixtureResult:
        """Runs the fixture in `path`; fails with its report when it does not pass, and with
        the file and what is wrong when it is no fixture."""
        try:
            result = run_fixture(path)
        except FixtureError as error:
            self.fail(f"FAIL  {os.fspath(path)}\n        {error}")
        if not result.passed:
            self.fail(result.report())
        return result

    def assertFixturesPass(self, *paths: PathLike) -> None:
        """Runs every fixture `paths` name (files, and directories' fixture files), each as a
        subtest; fails when they name none."""
        files = fixture_files(*paths)
        if not files:
            self.fail(f"no fixture files in {', '.join(map(os.fspath, paths))}")
        for file in files:
            with self.subTest(fixture=os.fspath(file)):
                self.assertFixturePasses(file)


def _reconcile(plugin: str, request: ObjectKey) -> tuple:
    """Runs the reconcile export: its outcome as fixtures state it, and its error as `wasmop
    test` words it (or `None`)."""
    try:
        outcome = WitWorld().reconcile(wit.ObjectKey(request.namespace, request.name))
    except Err as err:
        terminal = isinstance(err.value, wit_plugin.ReconcileError_Terminal)
        return "error", (f"plugin {plugin}: reconcile of {request} failed"
                         f"{' (terminal)' if terminal else ''}: {err.value.value}")
    return _outcome(outcome), None


def _outcome(outcome: wit_plugin.Outcome) -> str:
    """`done`, or `requeue-after 30s` (`1500ms` when not whole seconds; ` priority N` when one
    was asked)."""
    if not isinstance(outcome, wit_plugin.Outcome_RequeueAfter):
        return "done"
    return outcome_text(outcome.value.after, outcome.value.priority)
