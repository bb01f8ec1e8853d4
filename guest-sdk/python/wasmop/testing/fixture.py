"""The fixture format `wasmop test` reads: one reconcile's world and what it should do, as a YAML
(or JSON) file.

    name: a new WebApp gets its Deployment        # optional; the file's name otherwise
    now: 2026-01-01T00:00:00Z                     # the guest's wall clock; this when absent
    objects:                                      # what the cache holds before the reconcile
      - {apiVersion: example.wasmop.dev/v1, kind: WebApp, metadata: {namespace: shop, name: web}}
    request: {namespace: shop, name: web}         # a key of the plugin's primary kind
    expect:
      outcome: done                               # done | requeue-after 30s | error; or unchecked
      writes:                                     # every write, in order; none if absent
        - {verb: apply, force: true, apiVersion: apps/v1, kind: Deployment, namespace: shop,
           name: web, body: {...}}
      events:                                     # every event, in order; unchecked if absent
        - {type: Normal, reason: Created, message: Created Deployment shop/web,
           regarding: {apiVersion: example.wasmop.dev/v1, kind: WebApp, namespace: shop, name: web}}

A write's `verb` is one of `VERBS`; a patch of the status subresource has `status: true`, a forced
apply `force: true`; `body` is the object or patch sent (a delete's preconditions and
propagation). A write with `rejected: {reason: Conflict, message: ...}` is answered with that
error instead of being applied (the n-th write to a target gets the n-th such answer). An event's
`type` is `Normal` or `Warning`. An outcome's duration compares as a duration: `5m` is `300s`.
"""

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Optional, Union

import yaml

from ..names import ObjectKey
from . import _yaml
from .outcome import check_outcome

DEFAULT_NOW = "2026-01-01T00:00:00Z"
"""The time a fixture's guest reads when the fixture names none."""

EVENT_TYPES = ("Normal", "Warning")
"""The types an event may have."""

VERBS = ("create", "update", "update-status", "merge-patch", "json-patch", "apply", "delete")
"""What a write does, as fixtures name it."""

_RFC3339 = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(\.\d+)?"
                      r"(?:([Zz])|([+-])(\d\d):(\d\d))$")


class FixtureError(Exception):
    """A fixture file could not be read, or is not a fixture; the message names the file and
    what is wrong."""


@dataclass(frozen=True)
class Ref:
    """The kind and key of an object, as its apiVersion, kind, namespace and name."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version} {ObjectKey(self.namespace, self.name)}"


@dataclass(frozen=True)
class Rejection:
    """The error the apiserver answers a write with: its reason (`Conflict`, `AlreadyExists`,
    `NotFound`, `Forbidden`, `Invalid`, `Timeout`, `ServiceUnavailable` or another) and message."""

    reason: str
    message: str = ""


@dataclass
class FixtureWrite:
    """One write: as a fixture expects it, or as the plugin sent it."""

    verb: str
    api_version: str
    kind: str
    name: str
    namespace: str = ""
    status: bool = False
    """A patch of the status subresource."""
    force: bool = False
    """An apply that takes conflicting fields."""
    body: Any = None
    """The object or patch sent; a delete's options (`None` when it has none)."""
    rejected: Optional[Rejection] = None
    """The error to answer it with instead of applying it; never compared."""

    @property
    def ref(self) -> Ref:
        """The object it targets."""
        return Ref(self.api_version, self.kind, self.namespace, self.name)

    def target(self) -> str:
        """`verb apiVersion kind namespace/name`, to name it in a report."""
        status = " (status)" if self.status else ""
        key = ObjectKey(self.namespace, self.name)
        return f"{self.verb}{status} {self.api_version} {self.kind} {key}"


@dataclass(frozen=True)
class FixtureEvent:
    """One event: as a fixture expects it, or as the plugin recorded it."""

    type: str
    """`Normal` or `Warning`."""
    reason: str
    message: str
    regarding: Ref
    """The object it is about."""

    def target(self) -> str:
        """`type reason apiVersion kind namespace/name`, to name it in a report."""
        about = self.regarding
        key = ObjectKey(about.namespace, about.name)
        return f"{self.type} {self.reason} {about.api_version} {about.kind} {key}"


@dataclass
class Fixture:
    """One reconcile: the objects cached before it, its request and what it should do."""

    request: ObjectKey
    name: Optional[str] = None
    now: datetime = field(default_factory=lambda: parse_time(DEFAULT_NOW))
    """The time the guest's wall clock reads."""
    objects: list = field(default_factory=list)
    """The objects in the cache (and the in-memory apiserver) before the reconcile."""
    outcome: Optional[str] = None
    """`done`, `requeue-after <duration>` or `error`; not checked when `None`."""
    writes: list = field(default_factory=list)
    """Every `FixtureWrite` expected, in the order sent."""
    events: Optional[list] = None
    """Every `FixtureEvent` expected, in the order recorded; not checked when `None`."""


def load_fixture(path: Union[str, os.PathLike]) -> Fixture:
    """Reads the fixture in the YAML or JSON file `path`; raises `FixtureError`."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        raise FixtureError(f"reading fixture {os.fspath(path)}: {error}") from None
    return parse_fixture(text, os.fspath(path))


def parse_fixture(text: str, source: str = "<text>") -> Fixture:
    """Reads a fixture from YAML or JSON text; `source` names it in errors (`FixtureError`)."""
    try:
        value = _yaml.load(text)
    except yaml.YAMLError as error:
        raise FixtureError(f"fixture {source}: not valid YAML: {error}") from None
    try:
        return _fixture(value)
    except ValueError as error:
        raise FixtureError(f"fixture {source}: {error}") from None


def parse_time(text: str) -> datetime:
    """An RFC 3339 time (`2026-01-01T00:00:00Z`) as an aware datetime; raises `ValueError`,
    also for times before 1970."""
    match = _RFC3339.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not an RFC 3339 time like {DEFAULT_NOW}")
    year, month, day, hour, minute, second, fraction, utc, sign, hours, minutes = match.groups()
    offset = timedelta(0)
    if not utc:
        offset = timedelta(hours=int(hours), minutes=int(minutes)) * (-1 if sign == "-" else 1)
    micros = round(float(fraction or 0) * 1_000_000)
    time = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                    tzinfo=timezone(offset)) + timedelta(microseconds=micros)
    if time < datetime(1970, 1, 1, tzinfo=timezone.utc):
        raise ValueError(f"{text!r} is before 1970")
    return time.astimezone(timezone.utc)


def ref_of(obj: Any) -> Optional[Ref]:
    """The kind and key of a JSON object, if it has an apiVersion, a kind and a name."""
    if not isinstance(obj, dict):
        return None
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    namespace = meta.get("namespace")
    namespace = namespace if isinstance(namespace, str) else ""
    texts = [obj.get("apiVersion"), obj.get("kind"), meta.get("name")]
    if not all(isinstance(text, str) for text in texts):
        return None
    api_version, kind, name = texts
    return Ref(api_version, kind, namespace, name)


def _fixture(value: Any) -> Fixture:
    top = _fields(value, "", ["name", "now", "objects", "request", "expect"], ["request"])
    expect = _fields(top.get("expect", {}), "expect.", ["outcome", "writes", "events"], [])
    objects = _typed(top, "", "objects", list, [])
    for index, obj in enumerate(objects):
        if ref_of(obj) is None:
            raise ValueError(f"objects[{index}] has no apiVersion, kind or metadata.name")
    try:
        now = parse_time(_typed(top, "", "now", str, DEFAULT_NOW))
    except ValueError as error:
        raise ValueError(f"now: {error}") from None
    writes = _typed(expect, "expect.", "writes", list, [])
    events = _typed(expect, "expect.", "events", list, None)
    outcome = _typed(expect, "expect.", "outcome", str, None)
    if outcome is not None:
        try:
            check_outcome(outcome)
        except ValueError as error:
            raise ValueError(f"expect.outcome: {error}") from None
    return Fixture(request=_request(top["request"]), name=_typed(top, "", "name", str, None),
                   now=now, objects=objects, outcome=outcome,
                   writes=[_write(write, f"expect.writes[{index}].")
                           for index, write in enumerate(writes)],
                   events=None if events is None else
                   [_event(event, f"expect.events[{index}].") for index, event in enumerate(events)])


def _request(value: Any) -> ObjectKey:
    request = _fields(value, "request.", ["namespace", "name"], ["name"])
    return ObjectKey(_typed(request, "request.", "namespace", str, ""),
                     _typed(request, "request.", "name", str, None))


def _write(value: Any, path: str) -> FixtureWrite:
    fields = _fields(value, path, ["verb", "status", "force", "apiVersion", "kind", "namespace",
                                   "name", "body", "rejected"],
                     ["verb", "apiVersion", "kind", "name"])
    verb = _typed(fields, path, "verb", str, None)
    if verb not in VERBS:
        raise ValueError(f"{path}verb: {verb!r} is not a verb; one of: {', '.join(VERBS)}")
    rejected = None
    if "rejected" in fields:
        where = f"{path}rejected."
        rejection = _fields(fields["rejected"], where, ["reason", "message"], ["reason"])
        rejected = Rejection(_typed(rejection, where, "reason", str, None),
                             _typed(rejection, where, "message", str, ""))
    return FixtureWrite(verb=verb, api_version=_typed(fields, path, "apiVersion", str, None),
                        kind=_typed(fields, path, "kind", str, None),
                        name=_typed(fields, path, "name", str, None),
                        namespace=_typed(fields, path, "namespace", str, ""),
                        status=_typed(fields, path, "status", bool, False),
                        force=_typed(fields, path, "force", bool, False),
                        body=fields.get("body"), rejected=rejected)


def _event(value: Any, path: str) -> FixtureEvent:
    fields = _fields(value, path, ["type", "reason", "message", "regarding"],
                     ["type", "reason", "message", "regarding"])
    kind = _typed(fields, path, "type", str, None)
    if kind not in EVENT_TYPES:
        raise ValueError(f"{path}type: {kind!r} is not an event type; one of: Normal, Warning")
    where = f"{path}regarding."
    about = _fields(fields["regarding"], where, ["apiVersion", "kind", "namespace", "name"],
                    ["apiVersion", "kind", "name"])
    regarding = Ref(_typed(about, where, "apiVersion", str, None),
                    _typed(about, where, "kind", str, None),
                    _typed(about, where, "namespace", str, ""), _typed(about, where, "name", str, None))
    return FixtureEvent(kind, _typed(fields, path, "reason", str, None),
                        _typed(fields, path, "message", str, None), regarding)


def _fields(value: Any, path: str, known: list, required: list) -> dict:
    """`value`, found at `path` (`expect.`; empty for the top level), as a mapping with no field
    but the `known` ones and every `required` one."""
    where = f"in {path[:-1]}" if path else "at the top level"
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping {where}, found {_TYPES.get(type(value), 'null')}")
    unknown = next((key for key in value if key not in known), None)
    if unknown is not None:
        expected = ", ".join(f"`{key}`" for key in known)
        raise ValueError(f"unknown field `{unknown}` {where}, expected one of {expected}")
    missing = next((key for key in required if key not in value), None)
    if missing is not None:
        raise ValueError(f"missing field `{missing}` {where}")
    return value


def _typed(fields: dict, path: str, key: str, kind: type, default: Any) -> Any:
    """The field `key` of `fields` (found at `path`), which must be a `kind` when present;
    `default` when absent."""
    if key not in fields:
        return default
    value = fields[key]
    if not isinstance(value, kind):
        found = _TYPES.get(type(value), "null")
        raise ValueError(f"{path}{key}: expected {_TYPES[kind]}, found {found}")
    return value


_TYPES = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
          list: "a sequence", dict: "a mapping"}
