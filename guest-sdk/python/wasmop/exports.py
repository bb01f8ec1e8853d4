"""The component's exports — `describe`, `reconcile` and `map` — over the registered reconciler.

The build generates the entry module componentize-py wraps: `WitWorld = export("<plugin>")`.
A reconcile that raises fails: `Terminal` terminally, anything else retryably (an unexpected
exception is logged with its traceback first).
"""

import importlib
import logging

import wit_world
from componentize_py_types import Err
from wit_world.imports import plugin as wit
from wit_world.imports import types as wit_types

from . import _wit
from .errors import ApiError, ReconcileError, reconcile_error
from .names import Request
from .object import parse
from .outcome import Outcome, RequeueAfter, millis
from .plugin import registered

_log = logging.getLogger("wasmop")


def outcome(result: Outcome) -> wit.Outcome:
    """The WIT outcome of what a reconcile function returned."""
    if isinstance(result, RequeueAfter):
        return wit.Outcome_RequeueAfter(wit.Requeue(millis(result.after), result.priority))
    return wit.Outcome_Done()


def failure(exc: BaseException) -> wit.ReconcileError:
    """The WIT reconcile error of an exception a reconcile function raised."""
    error = reconcile_error(exc)
    if error.terminal:
        return wit.ReconcileError_Terminal(str(error))
    return wit.ReconcileError_Retryable(str(error))


class WitWorld(wit_world.WitWorld):
    """The component's exports, delegating to the registered reconciler."""

    def describe(self) -> wit.Registration:
        """The plugin's registration."""
        return registered().registration.to_wit()

    def reconcile(self, req: wit_types.ObjectKey) -> wit.Outcome:
        """Runs the reconcile function; raises `Err` with the WIT reconcile error on failure."""
        try:
            return outcome(registered().reconcile(Request(req.namespace, req.name)))
        except Exception as exc:
            if not isinstance(exc, (ApiError, ReconcileError)):
                _log.exception("reconcile of %s/%s raised", req.namespace, req.name)
            raise Err(failure(exc)) from None

    def map(self, kind: wit_types.Gvk, obj: str) -> list[wit_types.ObjectKey]:
        """Runs the mapper; a mapper that raises maps to nothing (and is logged)."""
        try:
            keys = registered().map(_wit.from_gvk(kind), parse(obj))
            return [_wit.object_key(key) for key in keys]
        except Exception:
            _log.exception("mapping a %s/%s raised", kind.group or "core", kind.kind)
            return []


def export(plugin: str) -> type:
    """Imports the plugin module (which registers its reconciler) and returns the exports class;
    raises, failing the build, when the plugin registers no reconciler."""
    importlib.import_module(plugin)
    registered()
    return WitWorld
