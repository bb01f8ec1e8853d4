"""Typed writes to the apiserver. The host checks every call against the plugin's declared
permissions; successful writes return the object as the apiserver stored it, of the same class.

    client.apply(deployment, force=True)                        # server-side apply
    client.patch(WebApp, "shop", "web", {"metadata": {"labels": {"a": "b"}}})   # merge patch
    client.patch(WebApp, "shop", "web", [{"op": "remove", "path": "/spec/x"}])  # JSON patch
    client.delete(ConfigMap, "shop", "marker", missing_ok=True)
"""

from typing import Optional, TypeVar, Union

from wit_world.imports import client as wit

from ._wit import call, enum, gvk
from .errors import NotFound
from .object import Object, dump, parse

O = TypeVar("O", bound=Object)

Patch = Union[dict, list]
"""A JSON merge patch (RFC 7386) as a dict, or a JSON patch (RFC 6902) as a list of operations."""

Propagation = wit.Propagation
"""What happens to an object's dependents when it is deleted: BACKGROUND, FOREGROUND, ORPHAN."""


def create(obj: O) -> O:
    """Creates an object; its namespace and kind come from the object itself."""
    return parse(call(wit.create, dump(obj)), type(obj))


def update(obj: O) -> O:
    """Replaces an object; its metadata.resourceVersion guards against lost updates (`Conflict`)."""
    return parse(call(wit.update, dump(obj)), type(obj))


def update_status(obj: O) -> O:
    """Replaces the status subresource of an object, guarded by its resourceVersion."""
    return parse(call(wit.update_status, dump(obj)), type(obj))


def apply(obj: O, *, force: bool = False) -> O:
    """Server-side applies `obj` (the fields this plugin owns) under the field manager
    `wasmop/<plugin>`; `force` takes fields other managers own instead of failing with
    `Conflict`."""
    body = wit.PatchBody_Apply(wit.ApplyPatch(dump(obj), force))
    return parse(call(wit.patch, gvk(obj.gvk), *_key(obj), body), type(obj))


def apply_status(obj: O, *, force: bool = False) -> O:
    """Server-side applies the status of `obj` (the status fields this plugin owns)."""
    body = wit.PatchBody_Apply(wit.ApplyPatch(dump(obj), force))
    return parse(call(wit.patch_status, gvk(obj.gvk), *_key(obj), body), type(obj))


def patch(kind: type[O], namespace: str, name: str, body: Patch) -> O:
    """Patches the object `namespace/name`: a merge patch for a dict, a JSON patch for a list."""
    return parse(call(wit.patch, gvk(kind), namespace, name, _body(body)), kind)


def patch_status(kind: type[O], namespace: str, name: str, body: Patch) -> O:
    """Patches the status subresource of the object `namespace/name`, like `patch`."""
    return parse(call(wit.patch_status, gvk(kind), namespace, name, _body(body)), kind)


def delete(kind: type[Object], namespace: str, name: str, *, uid: Optional[str] = None,
           resource_version: Optional[str] = None,
           propagation: Union[Propagation, str, None] = None, missing_ok: bool = False) -> None:
    """Deletes the object `namespace/name`, only at `uid`/`resource_version` when given, with
    the host's default propagation unless `propagation` says otherwise. An object already gone
    raises `NotFound` unless `missing_ok`."""
    preconditions = None
    if uid is not None or resource_version is not None:
        preconditions = wit.Preconditions(uid, resource_version)
    if propagation is not None:
        propagation = enum(Propagation, propagation)
    options = wit.DeleteOptions(preconditions, propagation)
    try:
        call(wit.delete, gvk(kind), namespace, name, options)
    except NotFound:
        if not missing_ok:
            raise


def _key(obj: Object) -> tuple:
    key = obj.key
    return key.namespace, key.name


def _body(body: Patch) -> wit.PatchBody:
    if isinstance(body, list):
        return wit.PatchBody_Json(dump(body))
    if isinstance(body, dict):
        return wit.PatchBody_Merge(dump(body))
    raise TypeError("a patch is a dict (merge patch) or a list (JSON patch), "
                    f"not {type(body).__name__}")
