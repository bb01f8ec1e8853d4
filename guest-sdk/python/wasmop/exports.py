"""The component's exports — `describe`, `reconcile` and `map`, and the `webhooks` interface — over
the registered reconciler.

The build generates the entry module componentize-py wraps: `WitWorld = export("<plugin>")`.
A reconcile that raises fails: `Terminal` terminally, anything else retryably (an unexpected
exception is logged with its traceback first).
"""

import importlib
import json
import logging
from typing import Optional

import wit_world
from componentize_py_types import Err
from wit_world import exports as wit_exports
from wit_world.exports import webhooks as wit_webhooks
from wit_world.imports import plugin as wit
from wit_world.imports import types as wit_types

from . import _wit
from .errors import ApiError, ReconcileError, reconcile_error
from .names import Request
from .object import Object, parse
from .outcome import Outcome, RequeueAfter, millis
from .plugin import registered
from .webhooks import AdmissionRequest, ConversionFailed, Denied, UserInfo

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


class Webhooks(wit_exports.Webhooks):
    """The component's webhooks, delegating to those of the registered reconciler; a plugin
    that sets none declares none, and the host serves none for it."""

    def describe_webhooks(self) -> wit_webhooks.Registration:
        """The webhooks the plugin serves."""
        hooks = registered().webhooks

        def rules(declared: list) -> list:
            return [wit_webhooks.Rule(_wit.gvk(r.kind), [_wit.enum(wit_webhooks.Operation, op)
                                                         for op in r.operations])
                    for r in declared]
        return wit_webhooks.Registration(rules(hooks.validate), rules(hooks.default),
                                         [_wit.gvk(kind) for kind in hooks.convert])

    def validate(self, req: wit_webhooks.AdmissionRequest) -> wit_webhooks.Verdict:
        """Runs the validator: admitted with its warnings, or refused with its `Denied`."""
        validator = registered().webhooks.validator
        if validator is None:
            raise RuntimeError("the plugin serves no validating webhook")
        try:
            warnings = validator(admission_request(req))
        except Denied as denied:
            return wit_webhooks.Verdict_Denied(wit_webhooks.Denial(denied.message,
                                                                   denied.warnings))
        return wit_webhooks.Verdict_Allowed(list(warnings or []))

    def default(self, req: wit_webhooks.AdmissionRequest) -> str:
        """Runs the defaulter: the object with its defaults, or `Err` with its `Denied`."""
        defaulter = registered().webhooks.defaulter
        if defaulter is None:
            raise RuntimeError("the plugin serves no defaulting webhook")
        try:
            return json.dumps(defaulter(admission_request(req)))
        except Denied as denied:
            raise Err(wit_webhooks.Denial(denied.message, denied.warnings)) from None

    def convert(self, obj: str, api_version: str) -> str:
        """Runs the converter: the converted object, or `Err` with why it could not."""
        converter = registered().webhooks.converter
        if converter is None:
            raise RuntimeError("the plugin serves no conversion webhook")
        try:
            return json.dumps(converter(parse(obj), api_version))
        except ConversionFailed as failed:
            raise Err(str(failed)) from None


def admission_request(req: wit_webhooks.AdmissionRequest) -> AdmissionRequest:
    """The SDK's view of a WIT admission request."""
    def read(text: Optional[str]) -> Optional[Object]:
        return None if text is None else parse(text)
    user = UserInfo(req.user_info.username, req.user_info.uid, list(req.user_info.groups))
    return AdmissionRequest(req.uid, _wit.from_gvk(req.kind), req.namespace, req.name,
                            req.operation.name.lower(), read(req.object), read(req.old_object),
                            user, req.dry_run)


def export(plugin: str) -> type:
    """Imports the plugin module (which registers its reconciler) and returns the exports class;
    raises, failing the build, when the plugin registers no reconciler."""
    importlib.import_module(plugin)
    registered()
    return WitWorld
