"""A fake host for running a plugin in-process: the generated WIT import functions are replaced by
calls on a `Store` holding a fixture's objects. Calls are checked against the plugin's declared
permissions as the host checks them (a refused call is not sent, so not recorded); every write
sent is recorded and answered with the fixture's rejection for it, if any; events and log lines
are kept; the SDK's clock (`wasmop.conditions.now`) reads the fixture's time.
"""

import builtins
import contextlib
import json
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterator, Optional
from unittest import mock

from componentize_py_types import Err
from wit_world.imports import cache as wit_cache
from wit_world.imports import client as wit_client
from wit_world.imports import events as wit_events
from wit_world.imports import log as wit_log
from wit_world.imports import plugin as wit_plugin
from wit_world.imports import types as wit

from .. import conditions
from .._wit import from_gvk
from ..names import Gvk, ObjectKey
from .fixture import FixtureEvent, FixtureWrite, Ref
from .selectors import equals, field_selector, label_selector, selected
from .store import Refused, Store

Verb = wit_plugin.Verb

_READS = (Verb.GET, Verb.LIST, Verb.WATCH)
_ERRORS = {
    "NotFound": (404, wit.Error_NotFound),
    "Conflict": (409, wit.Error_Conflict),
    "AlreadyExists": (409, wit.Error_AlreadyExists),
    "Invalid": (422, wit.Error_Invalid),
    "Timeout": (504, wit.Error_Timeout),
    "ServiceUnavailable": (503, wit.Error_Unavailable),
}


@dataclass(frozen=True)
class Event:
    """An event the plugin recorded: `Normal` or `Warning`, its reason and message, and the
    object it is about (`Kind namespace/name`, and as `ref` its apiVersion, kind and key)."""

    type: str
    reason: str
    message: str
    regarding: str
    ref: Optional[Ref] = None

    def as_fixture(self) -> FixtureEvent:
        """The event as a fixture states it."""
        return FixtureEvent(self.type, self.reason, self.message, self.ref)


@dataclass(frozen=True)
class LogLine:
    """A line the plugin logged: its level (`INFO`), message and key-value fields."""

    level: str
    message: str
    fields: tuple

    def __str__(self) -> str:
        fields = "".join(f" {key}={value}" for key, value in self.fields)
        return f"{self.level} {self.message}{fields}"


class Undeclared(Refused):
    """A call the plugin declared no permission for."""


class FakeHost:
    """The host of one fixture's reconcile: its objects, the plugin's registration, and the
    answers to the writes it expects."""

    def __init__(self, registration: wit_plugin.Registration, objects: list,
                 expected: list) -> None:
        self.store = Store()
        """The objects, as written so far."""
        self.writes: list = []
        """Every `FixtureWrite` sent, in order, rejected ones included."""
        self.events: list = []
        """Every `Event` recorded, in order."""
        self.logs: list = []
        """Every `LogLine` logged, in order."""
        self._registration = registration
        self._cached = {from_gvk(kind) for kind in
                        [registration.primary, *registration.owns,
                         *(watch.kind for watch in registration.watches)]}
        self._answers: dict = {}
        for obj in objects:
            self.store.seed(obj)
        for write in expected:
            self._answers.setdefault(write.target(), deque()).append(write.rejected)

    @contextlib.contextmanager
    def installed(self, now: datetime) -> Iterator["FakeHost"]:
        """Replaces the import functions with this host's, and the SDK's clock with `now`, for
        the duration of the block."""
        imports = {
            wit_cache: {"get": self.get, "list": self.list, "list_by_index": self.list_by_index},
            wit_client: {"create": self.create, "update": self.update,
                         "update_status": self.update_status, "patch": self.patch,
                         "patch_status": self.patch_status, "delete": self.delete},
            wit_events: {"record": self.record},
            wit_log: {"log": self.log},
        }
        with contextlib.ExitStack() as stack:
            for module, functions in imports.items():
                for name, function in functions.items():
                    stack.enter_context(mock.patch.object(module, name, _answering(function)))
            stack.enter_context(mock.patch.object(conditions, "datetime", _clock(now)))
            yield self

    def get(self, kind: wit.Gvk, namespace: str, name: str) -> str:
        """The `cache.get` import."""
        gvk = from_gvk(kind)
        self._check(Verb.GET, gvk, namespace)
        return self.store.get(Ref(gvk.api_version, gvk.kind, namespace, name))

    def list(self, kind: wit.Gvk, options: wit_cache.ListOptions) -> list:
        """The `cache.list` import."""
        gvk = from_gvk(kind)
        try:
            matches = selected(label_selector(options.label_selector),
                               field_selector(options.field_selector))
        except ValueError as error:
            raise Refused("Invalid", str(error)) from None
        self._check(Verb.LIST, gvk, options.namespace or "")
        return self.store.list(gvk.api_version, gvk.kind, options.namespace, matches)

    def list_by_index(self, kind: wit.Gvk, index: str, value: str) -> builtins.list:
        """The `cache.list-by-index` import; as `wasmop test`'s memory host does, it matches
        the field at the dotted path named by the index's name."""
        gvk = from_gvk(kind)
        self._check(Verb.LIST, gvk, "")
        return self.store.list(gvk.api_version, gvk.kind, None,
                               selected(label_selector(None), equals(index, value)))

    def create(self, obj: str) -> str:
        """The `client.create` import."""
        return self._send(_object_write("create", obj), Verb.CREATE)

    def update(self, obj: str) -> str:
        """The `client.update` import."""
        return self._send(_object_write("update", obj), Verb.UPDATE)

    def update_status(self, obj: str) -> str:
        """The `client.update-status` import."""
        return self._send(_object_write("update-status", obj), Verb.STATUS)

    def patch(self, kind: wit.Gvk, namespace: str, name: str,
              body: wit_client.PatchBody) -> str:
        """The `client.patch` import."""
        return self._send(_patch_write(from_gvk(kind), ObjectKey(namespace, name), body, False),
                          Verb.PATCH)

    def patch_status(self, kind: wit.Gvk, namespace: str, name: str,
                     body: wit_client.PatchBody) -> str:
        """The `client.patch-status` import."""
        return self._send(_patch_write(from_gvk(kind), ObjectKey(namespace, name), body, True),
                          Verb.STATUS)

    def delete(self, kind: wit.Gvk, namespace: str, name: str,
               options: wit_client.DeleteOptions) -> None:
        """The `client.delete` import."""
        gvk = from_gvk(kind)
        write = FixtureWrite("delete", gvk.api_version, gvk.kind, name, namespace,
                             body=_delete_body(options))
        self._send(write, Verb.DELETE)

    def record(self, about: wit_events.Regarding, type: wit_events.EventType, reason: str,
               message: str) -> None:
        """The `events.record` import."""
        regarding = f"{about.kind.kind} {ObjectKey(about.namespace, about.name)}"
        gvk = from_gvk(about.kind)
        ref = Ref(gvk.api_version, gvk.kind, about.namespace, about.name)
        self.events.append(Event(type.name.capitalize(), reason, message, regarding, ref))

    def log(self, level: wit_log.Level, message: str, fields: builtins.list) -> None:
        """The `log.log` import."""
        self.logs.append(LogLine(level.name, message, tuple(fields)))

    def _check(self, verb: Verb, gvk: Gvk, namespace: str) -> None:
        """Refuses a call the plugin declared no permission for, as the host does."""
        if verb in _READS and gvk in self._cached:
            return
        if any(from_gvk(p.kind) == gvk and verb in p.verbs
               and (not p.namespaces or namespace in p.namespaces)
               for p in self._registration.permissions):
            return
        place = f"in namespace {namespace}" if namespace else "across namespaces"
        raise Undeclared("Forbidden", f"plugin {self._registration.name} may not "
                                      f"{verb.name.capitalize()} {gvk.kind}.{gvk.api_version} "
                                      f"{place}: describe() declared no such permission")

    def _send(self, write: FixtureWrite, verb: Verb) -> Optional[str]:
        """Checks, records and answers a write: with its rejection, or by applying it."""
        self._check(verb, Gvk.from_api_version(write.api_version, write.kind), write.namespace)
        answers = self._answers.get(write.target())
        rejection = answers.popleft() if answers else None
        self.writes.append(write)
        if rejection is not None:
            raise Refused(rejection.reason, rejection.message)
        return self.store.write(write)


def _object_write(verb: str, text: str) -> FixtureWrite:
    """A write of a whole object, targeting what the object names; a create may leave the name
    to `generateName`."""
    obj = _parse(text, "object")
    if not isinstance(obj, dict):
        raise Refused("Invalid", "an object must be a JSON object")
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not (isinstance(api_version, str) and api_version and isinstance(kind, str) and kind):
        raise Refused("Invalid", "object has no apiVersion or kind")
    name = meta.get("name") or ""
    if not isinstance(name, str) or not (name or verb == "create" and meta.get("generateName")):
        raise Refused("Invalid", f"name {name!r} is not a valid object name")
    return FixtureWrite(verb, api_version, kind, name, meta.get("namespace") or "", body=obj)


def _patch_write(gvk: Gvk, key: ObjectKey, body: wit_client.PatchBody,
                 status: bool) -> FixtureWrite:
    """A patch of the object `key`, or of its status."""
    if isinstance(body, wit_client.PatchBody_Apply):
        verb, text, force = "apply", body.value.object, body.value.force
    else:
        json_patch = isinstance(body, wit_client.PatchBody_Json)
        verb, text, force = "json-patch" if json_patch else "merge-patch", body.value, False
    patch = _parse(text, verb)
    shape, shape_name = (list, "array") if verb == "json-patch" else (dict, "object")
    if not isinstance(patch, shape):
        raise Refused("Invalid", f"a {verb} must be a JSON {shape_name}")
    return FixtureWrite(verb, gvk.api_version, gvk.kind, key.name, key.namespace, status=status,
                        force=force, body=patch)


def _parse(text: str, what: str) -> Any:
    """The JSON value in a guest's `text`; `Refused` Invalid when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError as error:
        raise Refused("Invalid", f"{what} is not valid JSON: {error}") from None


def _delete_body(options: wit_client.DeleteOptions) -> Optional[dict]:
    """A delete's options as a fixture states them: only those set; `None` when none is."""
    preconditions = options.preconditions or wit_client.Preconditions(None, None)
    body = {"uid": preconditions.uid, "resourceVersion": preconditions.resource_version,
            "propagationPolicy": options.propagation and options.propagation.name.capitalize()}
    return {key: value for key, value in body.items() if value is not None} or None


def _wit_error(refused: Refused) -> wit.Error:
    """The WIT error the host returns for a refusal, with the conventional code and reason for
    its kind (`InternalError` for reasons of no known kind)."""
    if refused.reason == "Forbidden":
        denied_by = (wit.DeniedBy.DECLARED_PERMISSIONS if isinstance(refused, Undeclared)
                     else wit.DeniedBy.APISERVER)
        return wit.Error_Forbidden((denied_by, wit.Status(403, "Forbidden", refused.message)))
    code, variant = _ERRORS.get(refused.reason, (500, wit.Error_Other))
    reason = refused.reason if refused.reason in _ERRORS else "InternalError"
    return variant(wit.Status(code, reason, refused.message))


def _answering(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` as an import: a refusal is returned as the WIT error it stands for."""
    def call(*args: Any) -> Any:
        try:
            return function(*args)
        except Refused as refused:
            raise Err(_wit_error(refused)) from None
    return call


def _clock(time: datetime) -> type:
    """A `datetime` class whose `now()` is `time`."""
    class Clock(datetime):
        """`datetime`, stopped at the fixture's time."""

        @classmethod
        def now(cls, tz: Any = None) -> datetime:
            """The fixture's time, in `tz` (naive local time without one)."""
            local = time.astimezone(tz)
            return local if tz is not None else local.replace(tzinfo=None)
    return Clock
