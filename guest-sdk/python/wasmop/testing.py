"""Fixture tests of a plugin under unittest, run by the host's own runner: the plugin's folder is
built into a component with `wasmop build`, and `wasmop test --format json` runs the fixtures
against it as it runs them anywhere — a fresh instance per reconcile, the host's limits and its
clock. Each fixture is a subtest that fails with the differences `wasmop test` words.

    from wasmop.testing import FixtureTestCase

    class Fixtures(FixtureTestCase):
        plugin = Path(__file__).parent.parent      # the folder to build (default: the working one)

        def test_fixtures(self):
            self.assertFixturesPass("../fixtures")

`run_fixtures(*paths, plugin=...)` returns a `FixtureResult` per fixture to inspect instead. The
`wasmop` run is `$WASMOP` when set, else the one on PATH; the component is built with this SDK,
once per plugin folder and process.
"""

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from dataclasses import dataclass
from pathlib import Path
from typing import Union

PathLike = Union[str, "os.PathLike[str]"]

GUEST_SDK = Path(__file__).resolve().parent.parent.parent
"""The guest SDKs this module belongs to, which `wasmop build` builds the plugin with."""


class WasmopError(Exception):
    """`wasmop` is missing, could not build the plugin, or could not run its fixtures."""


@dataclass(frozen=True)
class FixtureResult:
    """One fixture's verdict, as `wasmop test` reported it."""

    file: str
    """The fixture's file."""
    name: str
    """The fixture's name, or its file's when it has none."""
    passed: bool
    """Whether the plugin did what the fixture expects."""
    differences: tuple
    """Each difference from the fixture (or what is wrong with a file that is no fixture)."""

    def report(self) -> str:
        """`ok` or `FAIL` with the fixture's name and file, then each difference on its own lines."""
        verdict = "ok  " if self.passed else "FAIL"
        lines = [f"{verdict}  {self.name} ({self.file})"]
        lines += [f"        {line}" for difference in self.differences for line in difference.splitlines()]
        return "\n".join(lines)


def wasmop() -> str:
    """The `wasmop` to run: `$WASMOP`, else the one on PATH."""
    found = os.environ.get("WASMOP") or shutil.which("wasmop")
    if not found:
        raise WasmopError("no wasmop to build and test the plugin with: set WASMOP to its path or put it on PATH")
    return found


_BUILT: dict = {}


def build(plugin: PathLike = ".") -> Path:
    """The component of the plugin in the folder `plugin`, built with `wasmop build` the first time
    it is asked for in this process."""
    folder = Path(plugin).resolve()
    if folder not in _BUILT:
        scratch = tempfile.mkdtemp(prefix="wasmop-fixtures-")
        atexit.register(shutil.rmtree, scratch, True)
        component = Path(scratch) / f"{folder.name}.wasm"
        _run([wasmop(), "build", "--language", "python", "--sdk", str(GUEST_SDK), "-o", str(component),
              str(folder)], f"building {folder}")
        _BUILT[folder] = component
    return _BUILT[folder]


def run_fixtures(*paths: PathLike, plugin: PathLike = ".") -> list:
    """Runs the fixtures `paths` name (files, and each directory's fixture files) against the
    plugin in the folder `plugin`, built; a `FixtureResult` per fixture, in `wasmop test`'s order."""
    command = [wasmop(), "test", "--format", "json", str(build(plugin)), *map(os.fspath, paths)]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    reports = [json.loads(line) for line in completed.stdout.splitlines() if line.startswith("{")]
    if not any("failed" in report for report in reports):
        raise WasmopError(f"wasmop test could not run the fixtures in {', '.join(map(os.fspath, paths))}:\n"
                          f"{completed.stderr.strip()}")
    return [FixtureResult(file=report["file"], name=report["name"] or report["file"], passed=report["passed"],
                          differences=tuple(report["differences"]))
            for report in reports if "file" in report]


def _run(command: list, doing: str) -> None:
    """Runs `command`, its progress passed on to stderr; raises with its output when it fails."""
    completed = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if completed.returncode != 0:
        raise WasmopError(f"{doing} failed (exit status {completed.returncode}):\n{completed.stderr.strip()}")


class FixtureTestCase(unittest.TestCase):
    """A `TestCase` whose fixtures run against its plugin's component under `wasmop test`."""

    plugin: PathLike = "."
    """The plugin's folder, which `wasmop build` builds."""

    def assertFixturesPass(self, *paths: PathLike) -> list:
        """Runs every fixture `paths` name, each as a subtest that fails with its report; fails
        when the plugin does not build or `wasmop test` cannot run them."""
        try:
            results = run_fixtures(*paths, plugin=self.plugin)
        except WasmopError as error:
            self.fail(str(error))
        for result in results:
            with self.subTest(fixture=result.file):
                if not result.passed:
                    self.fail(result.report())
        return results
