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
`wasmop` run is `$WASMOP` when set, else the one on PATH. The component is built with this SDK
and kept in `$XDG_CACHE_HOME/wasmop/fixture-components` (the newest `KEPT` of them) under a
digest of what it is built from — the plugin's files but its tests, the SDK, the WIT package and
the wasmop binary — so a test run after an edit of the tests alone builds nothing.
"""

import hashlib
import json
import os
import shutil
import subprocess
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


KEPT = 8
"""How many built components the cache keeps; older ones are removed."""

SKIPPED = {"tests", "__pycache__", ".pytest_cache"}
"""Folders whose files a component is not built from."""


def build(plugin: PathLike = ".") -> Path:
    """The component of the plugin in the folder `plugin`: the cached one built from the same
    files, else one built now with `wasmop build`."""
    folder = Path(plugin).resolve()
    command = wasmop()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wasmop" / "fixture-components"
    component = cache / f"{folder.parent.name}-{folder.name}-{_digest(folder, command)}.wasm"
    if not component.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        partial = component.with_suffix(f".{os.getpid()}.tmp")
        _run([command, "build", "--language", "python", "--sdk", str(GUEST_SDK), "-o", str(partial), str(folder)],
             f"building {folder}")
        partial.replace(component)
        for old in sorted(cache.glob("*.wasm"), key=lambda path: path.stat().st_mtime)[:-KEPT]:
            old.unlink(missing_ok=True)
    return component


def _digest(folder: Path, command: str) -> str:
    """A digest of what the plugin in `folder` is built from: its files (but its tests and built
    components), this SDK's package, the WIT package, and the wasmop binary's path, size and time."""
    digest = hashlib.sha256()
    roots = [folder, GUEST_SDK / "python" / "wasmop", GUEST_SDK.parent / "wit"]
    for root in roots:
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root)
            if path.is_file() and path.suffix != ".wasm" and not SKIPPED.intersection(relative.parts):
                digest.update(f"{root}/{relative}\0".encode())
                digest.update(path.read_bytes())
    binary = Path(shutil.which(command) or command).resolve()
    stat = binary.stat()
    digest.update(f"{binary}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


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
