"""Conversions between the SDK's types and those of the bindings componentize-py generates from
the WIT package, and the one way the SDK calls a host import.
"""

from enum import Enum
from typing import Any, Callable, TypeVar, Union

from componentize_py_types import Err
from wit_world.imports import types as wit

from .errors import from_wit
from .names import Gvk, ObjectKey
from .object import Object

E = TypeVar("E", bound=Enum)
T = TypeVar("T")


def call(function: Callable[..., T], *args: Any) -> T:
    """Calls a host import, raising the `ApiError` subclass for the error it returns."""
    try:
        return function(*args)
    except Err as err:
        raise from_wit(err.value) from None


def gvk(kind: Union[type, Gvk]) -> wit.Gvk:
    """The WIT GVK of an `Object` subclass or a `Gvk`."""
    if isinstance(kind, type):
        if not issubclass(kind, Object) or kind.GVK is None:
            raise TypeError(f"{kind.__name__} is not a declared kind: subclass wasmop.Object "
                            "with group= and version=")
        kind = kind.GVK
    return wit.Gvk(kind.group, kind.version, kind.kind)


def from_gvk(value: wit.Gvk) -> Gvk:
    """The SDK's GVK of a WIT GVK."""
    return Gvk(value.group, value.version, value.kind)


def object_key(key: Union[ObjectKey, tuple]) -> wit.ObjectKey:
    """The WIT key of an `ObjectKey` or a `(namespace, name)` pair."""
    namespace, name = (key.namespace, key.name) if isinstance(key, ObjectKey) else key
    return wit.ObjectKey(namespace, name)


def enum(cls: type[E], value: Union[E, str]) -> E:
    """The member of a WIT enum, given as itself or by its WIT name (`generation-changed`)."""
    if isinstance(value, cls):
        return value
    try:
        return cls[value.replace("-", "_").upper()]
    except (KeyError, AttributeError):
        names = ", ".join(m.name.lower().replace("_", "-") for m in cls)
        raise ValueError(f"{value!r} is not a {cls.__name__.lower()}; one of: {names}") from None
