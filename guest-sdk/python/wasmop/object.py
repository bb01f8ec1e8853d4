"""Kubernetes objects: `Object`, one subclass per kind, and the JSON text that crosses the
component boundary.

A kind is declared by subclassing with its group and version (the kind defaults to the class
name); `wasmop.kinds` declares the built-in ones:

    class WebApp(Object, group="example.wasmop.dev", version="v1alpha1"):
        '''A web application.'''

An object is a `Fields` (a dict with snake_case attribute access), so
`WebApp(metadata={"name": "shop"}, spec={"image": "nginx"})` builds one and `app.spec.image` reads
it. The metadata helpers (finalizers, owner references) only change the object in memory; the
reconciler writes the change with the client.
"""

import json
from typing import Any, ClassVar, Optional, TypeVar

from .fields import Fields
from .names import Gvk, ObjectKey

O = TypeVar("O", bound="Object")

_KINDS: dict = {}


class Object(Fields):
    """A Kubernetes object with `apiVersion`, `kind` and `metadata`; subclass it per kind."""

    __slots__ = ()

    GVK: ClassVar[Optional[Gvk]] = None
    """The kind's group, version and kind; `None` on `Object` itself, which stands for any kind."""

    def __init_subclass__(cls, *, group: str = "", version: Optional[str] = None,
                          kind: Optional[str] = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if version is not None:
            cls.GVK = Gvk(group, version, kind or cls.__name__)
            _KINDS[cls.GVK] = cls

    def __init__(self, *mappings: Any, **fields: Any) -> None:
        gvk = self.GVK
        header = [] if gvk is None else [{"apiVersion": gvk.api_version, "kind": gvk.kind}]
        super().__init__(*header, *mappings, **fields)
        self.setdefault("metadata", Fields())

    @property
    def gvk(self) -> Gvk:
        """The object's GVK, from its `apiVersion` and `kind` (or its class)."""
        if "apiVersion" in self and "kind" in self:
            return Gvk.from_api_version(self["apiVersion"], self["kind"])
        if self.GVK is None:
            raise ValueError("an object of no declared kind needs apiVersion and kind")
        return self.GVK

    @property
    def key(self) -> ObjectKey:
        """The object's namespace (empty for cluster-scoped kinds) and name."""
        meta = self.get("metadata") or {}
        return ObjectKey(meta.get("namespace") or "", meta.get("name") or "")

    def is_deleting(self) -> bool:
        """Whether the object is being deleted (it has a deletionTimestamp)."""
        return bool(self.metadata.deletion_timestamp)

    def has_finalizer(self, finalizer: str) -> bool:
        """Whether the object carries the finalizer."""
        return finalizer in (self.metadata.finalizers or [])

    def add_finalizer(self, finalizer: str) -> bool:
        """Adds the finalizer; returns whether it was missing."""
        if self.has_finalizer(finalizer):
            return False
        self.metadata.setdefault("finalizers", []).append(finalizer)
        return True

    def remove_finalizer(self, finalizer: str) -> bool:
        """Removes the finalizer; returns whether it was present."""
        if not self.has_finalizer(finalizer):
            return False
        self.metadata.finalizers = [f for f in self.metadata.finalizers if f != finalizer]
        return True

    def controller_owner_ref(self) -> Optional[Fields]:
        """The controller owner reference pointing at this object, for the objects it creates;
        `None` when it has no name or UID yet (it was never stored)."""
        meta = self.metadata
        if not meta.name or not meta.uid:
            return None
        return Fields(api_version=self.gvk.api_version, kind=self.gvk.kind, name=meta.name,
                      uid=meta.uid, controller=True, block_owner_deletion=True)

    def controller_ref(self) -> Optional[Fields]:
        """The owner reference of this object's controller, if any."""
        refs = self.metadata.owner_references or []
        return next((ref for ref in refs if ref.controller), None)

    def is_controlled_by(self, owner: "Object") -> bool:
        """Whether `owner` is this object's controller (same apiVersion, kind and UID)."""
        ref = self.controller_ref()
        return ref is not None and ref.uid == owner.metadata.uid and \
            Gvk.from_api_version(ref.api_version, ref.kind) == owner.gvk


def parse(text: str, kind: Optional[type] = None) -> Object:
    """Parses the host's JSON text as an object of `kind`, or of the kind its `apiVersion` and
    `kind` name when that kind is declared, or as a plain `Object`."""
    value = json.loads(text, object_hook=Fields._parsed)
    if not isinstance(value, dict):
        raise ValueError(f"the host sent {type(value).__name__} JSON, not an object")
    if kind is None:
        gvk = Gvk.from_api_version(value.get("apiVersion", ""), value.get("kind", ""))
        kind = _KINDS.get(gvk, Object)
    return kind._parsed(value)


def dump(value: Any) -> str:
    """The JSON text of an object or patch, as the host takes it."""
    return json.dumps(value, separators=(",", ":"))
