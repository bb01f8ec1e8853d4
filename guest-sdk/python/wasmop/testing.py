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

Webhooks are unit-tested without a build: `admission_request(obj, old)` is the `AdmissionRequest`
a validator or defaulter gets in the sandbox, filled in as `wasmop test` fills in a fixture's, and
`admission_review(request)` and `conversion_review(api_version, objects)` are the reviews the
apiserver would post, as dicts to write to fixture files or hand to other tools.

    from wasmop.testing import admission_request

    def test_too_many_replicas_are_refused(self):
        request = admission_request({"apiVersion": "example.wasmop.dev/v1alpha1", "kind": "WebApp",
                                     "metadata": {"name": "web"}, "spec": {"replicas": 99}})
        with self.assertRaisesRegex(Denied, "not 99"):
            validate(request)
"""

import hashlib
import json
import os
import shutil
import subprocess
import unittest
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from .names import Gvk
from .object import Object, dump, parse
from .webhooks import OPERATIONS, AdmissionRequest, UserInfo

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


TEST_UID = "wasmop-test"
"""The uid of the reviews built here (and the user of their requests) unless told otherwise, as
`wasmop test` gives a fixture's."""


def admission_request(object: Optional[dict] = None, old_object: Optional[dict] = None, *,
                      operation: Optional[str] = None, user: str = TEST_UID,
                      groups: Iterable[str] = (), dry_run: bool = False,
                      uid: str = TEST_UID) -> AdmissionRequest:
    """The admission request a validator or defaulter gets for `object` (as it would be stored)
    and `old_object` (as it is stored), to call it in a unit test.

    What is not given is filled in as `wasmop test` fills in a fixture's request: the operation
    is `"create"` with `object` alone, `"update"` with both and `"delete"` with `old_object`
    alone; the kind is read from the `apiVersion` and `kind` of `object` (else `old_object`), the
    namespace and name from its metadata (empty when absent); the user is `user` in `groups`,
    with no uid. The objects (dicts or `Object`s) are copied and parsed as the runtime parses the
    JSON the host sends — a declared kind's subclass, else `Object` — so the function sees what
    it sees in the sandbox, and may change them without changing the arguments.

    Raises `ValueError` when neither object is given or `operation` is none of
    `wasmop.webhooks.OPERATIONS` (in upper or lower case), `TypeError` when an object is not a
    dict.
    """
    if object is None and old_object is None:
        raise ValueError("an admission request needs its object or old_object (or both)")
    if operation is None:
        operation = "delete" if object is None else "create" if old_object is None else "update"
    if operation.lower() not in OPERATIONS:
        raise ValueError(f"operation must be one of {', '.join(OPERATIONS)}; got {operation!r}")
    new, old = _received(object, "object"), _received(old_object, "old_object")
    shown = next(obj for obj in (new, old) if obj is not None)
    kind = Gvk.from_api_version(_text(shown.get("apiVersion")), _text(shown.get("kind")))
    metadata = shown.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    return AdmissionRequest(uid, kind, _text(metadata.get("namespace")), _text(metadata.get("name")),
                            operation.lower(), new, old, UserInfo(user, "", list(groups)), dry_run)


def admission_review(request: AdmissionRequest) -> dict:
    """The `admission.k8s.io/v1` AdmissionReview the apiserver would post for `request`, as JSON
    data: for a fixture file, or any tool that takes a review.

    Its request has the uid, kind, resource (the kind in lower case, plus `s`), namespace (when
    not empty), name, operation (upper case), `userInfo` (the user name, and the groups when
    any), `object` and `oldObject` (when present) and `dryRun` of `request`; the objects are
    plain dicts, copied.
    """
    kind = request.kind
    body: dict = {
        "uid": request.uid,
        "kind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
        "resource": {"group": kind.group, "version": kind.version, "resource": f"{kind.kind.lower()}s"},
    }
    if request.namespace:
        body["namespace"] = request.namespace
    body["name"] = request.name
    body["operation"] = request.operation.upper()
    user: dict = {"username": request.user.username}
    if request.user.groups:
        user["groups"] = list(request.user.groups)
    body["userInfo"] = user
    if request.object is not None:
        body["object"] = _plain(request.object, "object")
    if request.old_object is not None:
        body["oldObject"] = _plain(request.old_object, "old_object")
    body["dryRun"] = request.dry_run
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def conversion_review(desired_api_version: str, objects: Iterable[dict]) -> dict:
    """The `apiextensions.k8s.io/v1` ConversionReview the apiserver would post to convert
    `objects` (dicts or `Object`s) to `desired_api_version` (`group/version`), as JSON data.

    Its uid is `TEST_UID`, as `wasmop test` gives a fixture's; the objects are plain dicts,
    copied. Raises `TypeError` when an object is not a dict.
    """
    converted = [_plain(obj, f"objects[{i}]") for i, obj in enumerate(objects)]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": TEST_UID, "desiredAPIVersion": desired_api_version, "objects": converted},
    }


def _checked(value: Any, name: str) -> dict:
    """`value`, which must be a dict (an `Object` is one) to be sent as an object."""
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict or an Object, not {type(value).__name__}")
    return value


def _received(value: Optional[dict], name: str) -> Optional[Object]:
    """`value` as the runtime hands it to a webhook: its JSON text parsed (`None` stays `None`)."""
    return None if value is None else parse(dump(_checked(value, name)))


def _plain(value: Any, name: str) -> dict:
    """A copy of the object `value` made of plain dicts and lists, as JSON reads."""
    return json.loads(dump(_checked(value, name)))


def _text(value: Any) -> str:
    """`value` when it is a string, else the empty string (as the host reads a missing field)."""
    return value if isinstance(value, str) else ""
