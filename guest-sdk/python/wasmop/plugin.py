"""The reconciler a plugin declares: `@reconciler(...)` on its reconcile function registers the
function with the plugin's `Registration`; `@<reconciler>.mapper` adds the function that maps
objects of kinds watched with the `"guest"` mapping to requests.

    @wasmop.reconciler(name="stamp", version="0.1.0", primary=ConfigMap,
                       permissions=[Permission(ConfigMap, ["patch"])])
    def reconcile(req: Request) -> Outcome:
        ...

A component holds one reconciler; the build imports the plugin and fails when it registers none
or a bad registration.
"""

from typing import Any, Callable, Iterable, Optional, Union

from .names import Gvk, ObjectKey, Request
from .object import Object
from .outcome import Outcome
from .registration import Registration

ReconcileFunction = Callable[[Request], Outcome]
"""Converges the primary object a request names; raises `Retryable` or `Terminal` on failure."""

MapFunction = Callable[[Gvk, Object], Iterable[Union[ObjectKey, tuple]]]
"""Maps a changed object of a kind watched with the `"guest"` mapping to requests: keys or
`(namespace, name)` pairs."""


class Reconciler:
    """A registered reconciler: the plugin's registration, reconcile function and mapper."""

    def __init__(self, registration: Registration, reconcile: ReconcileFunction) -> None:
        self.registration = registration
        """What the plugin declares to the host."""
        self.reconcile = reconcile
        """The reconcile function."""
        self.map: MapFunction = lambda kind, obj: []
        """The mapper; maps nothing unless the plugin sets one with `mapper`."""

    def __call__(self, request: Request) -> Outcome:
        return self.reconcile(request)

    def mapper(self, function: MapFunction) -> MapFunction:
        """Decorator: makes `function` this reconciler's mapper."""
        self.map = function
        return function


_registered: Optional[Reconciler] = None


def reconciler(name: str, version: str, primary: type,
               **options: Any) -> Callable[[ReconcileFunction], Reconciler]:
    """Decorator: registers the reconcile function of the plugin `name` at `version`, reconciling
    `primary`; `options` are the other fields of `Registration` (owns, watches, permissions,
    indexes, predicates, max_concurrent_reconciles, reconcile_timeout)."""
    registration = Registration(name=name, version=version, primary=primary, **options)
    registration.to_wit()

    def register(function: ReconcileFunction) -> Reconciler:
        global _registered
        if _registered is not None:
            taken = _registered.registration.name
            raise RuntimeError(f"a component holds one reconciler; {taken!r} is already "
                               f"registered, so {name!r} cannot be")
        _registered = Reconciler(registration, function)
        return _registered

    return register


def registered() -> Reconciler:
    """The plugin's reconciler; raises when the plugin registered none."""
    if _registered is None:
        raise RuntimeError("no reconciler is registered: decorate the plugin's reconcile function "
                           "with @wasmop.reconciler(name=..., version=..., primary=...)")
    return _registered
