"""Kubernetes Events about an object, for `kubectl describe` to show. Recording is best effort:
the host logs a failure and never returns it to the guest.

    events.normal(app, "Created", f"Created Deployment {key}")
"""

from typing import Union

from wit_world.imports import events as wit

from ._wit import enum, gvk
from .object import Object

EventType = wit.EventType
"""Normal or Warning, as Kubernetes Events have it."""


def record(obj: Object, type: Union[EventType, str], reason: str, message: str) -> None:
    """Records an event about `obj`; `reason` is a short CamelCase word, `message` a sentence."""
    meta = obj.metadata
    about = wit.Regarding(gvk(obj.gvk), meta.namespace or "", meta.name or "", meta.uid or "")
    wit.record(about, enum(EventType, type), reason, message)


def normal(obj: Object, reason: str, message: str) -> None:
    """Records a Normal event about `obj`."""
    record(obj, EventType.NORMAL, reason, message)


def warning(obj: Object, reason: str, message: str) -> None:
    """Records a Warning event about `obj`."""
    record(obj, EventType.WARNING, reason, message)
