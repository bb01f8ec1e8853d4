"""What a plugin declares to the host: its `Registration` — name, version, primary kind, owned
and watched kinds, permissions, field indexes and limits — and the records it is made of.

Verbs, predicates and mappings are the WIT names as strings (`"create"`, `"generation-changed"`,
`"controller-owner"`) or the WIT enum members; a wrong name fails the build, which imports the
plugin.
"""

from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from wit_world.imports import plugin as wit

from ._wit import enum, gvk
from .outcome import Seconds, millis

Verb = wit.Verb
"""What a plugin may do with a kind: GET, LIST, WATCH, CREATE, UPDATE, PATCH, DELETE, STATUS."""

Predicate = wit.Predicate
"""A filter on update events: GENERATION_CHANGED, LABELS_CHANGED, ANNOTATIONS_CHANGED."""


@dataclass(frozen=True)
class Label:
    """Maps a watched object to the primary object in its namespace named by this label's value."""

    name: str


Mapping = Union[str, Label]
"""How a watched kind's events become requests: `"controller-owner"`, `"guest"` (the plugin's
mapper) or a `Label`."""


@dataclass(frozen=True)
class Permission:
    """Asks for `verbs` on `kind`, in `namespaces` only (all when empty)."""

    kind: type
    verbs: Sequence[Union[Verb, str]]
    namespaces: Sequence[str] = ()

    def to_wit(self) -> wit.Permission:
        """The WIT record."""
        return wit.Permission(gvk(self.kind), [enum(Verb, v) for v in self.verbs],
                              list(self.namespaces))


@dataclass(frozen=True)
class Watch:
    """Watches `kind`, mapping its events to primary objects with `mapping` and dropping update
    events that fail any of `predicates`."""

    kind: type
    mapping: Mapping = "guest"
    predicates: Sequence[Union[Predicate, str]] = ()

    def to_wit(self) -> wit.Watch:
        """The WIT record."""
        return wit.Watch(gvk(self.kind), _mapping(self.mapping),
                         [enum(Predicate, p) for p in self.predicates])


@dataclass(frozen=True)
class Index:
    """A field index `name` over `kind` on the dotted string field `field`, for
    `cache.list_by_index`."""

    name: str
    kind: type
    field: str

    def to_wit(self) -> wit.FieldIndex:
        """The WIT record."""
        return wit.FieldIndex(self.name, gvk(self.kind), self.field)


@dataclass(frozen=True)
class Registration:
    """Everything the host needs to run the plugin."""

    name: str
    """Lowercase letters, digits and dashes; the field manager is `wasmop/<name>`."""
    version: str
    """The plugin's own version, e.g. `1.4.0`."""
    primary: type
    """The kind this plugin reconciles."""
    predicates: Sequence[Union[Predicate, str]] = ()
    """Filters on update events of the primary kind."""
    owns: Sequence[type] = ()
    """Kinds the plugin creates and controls; their events reconcile their controller owner."""
    watches: Sequence[Watch] = ()
    """Other kinds whose events map to primary objects."""
    permissions: Sequence[Permission] = ()
    """Writes and extra reads the plugin needs."""
    indexes: Sequence[Index] = ()
    """Field indexes over cached kinds."""
    max_concurrent_reconciles: int = 1
    """How many reconciles may run at once (at least 1)."""
    reconcile_timeout: Optional[Seconds] = field(default=None)
    """How long one reconcile may take before the host interrupts it; the host's default when
    `None`."""

    def to_wit(self) -> wit.Registration:
        """The WIT record `describe` returns; raises `ValueError`/`TypeError` on a bad field."""
        timeout = None if self.reconcile_timeout is None else millis(self.reconcile_timeout)
        return wit.Registration(
            name=self.name,
            version=self.version,
            primary=gvk(self.primary),
            predicates=[enum(Predicate, p) for p in self.predicates],
            owns=[gvk(kind) for kind in self.owns],
            watches=[w.to_wit() for w in self.watches],
            permissions=[p.to_wit() for p in self.permissions],
            indexes=[i.to_wit() for i in self.indexes],
            max_concurrent_reconciles=max(1, self.max_concurrent_reconciles),
            reconcile_timeout=timeout,
        )


def _mapping(mapping: Mapping) -> wit.Mapping:
    if isinstance(mapping, Label):
        return wit.Mapping_Label(mapping.name)
    if mapping == "controller-owner":
        return wit.Mapping_ControllerOwner()
    if mapping == "guest":
        return wit.Mapping_Guest()
    raise ValueError(f"{mapping!r} is not a mapping; one of: \"controller-owner\", \"guest\", "
                     "Label(name)")
