"""The reconciler a plugin declares: `@reconciler(...)` on its reconcile function registers the
function with the plugin's `Registration`; `@<reconciler>.mapper` adds the function that maps
objects of kinds watched with the `"guest"` mapping to requests, and `@<reconciler>.validator`,
`.defaulter` and `.converter` the webhooks it serves (`wasmop.webhooks`).

    @wasmop.reconciler(name="stamp", version="0.1.0", primary=ConfigMap,
                       permissions=[Permission(ConfigMap, ["patch"])])
    def reconcile(req: Request) -> Outcome:
        ...

A component holds one reconciler; the build imports the plugin and fails when it registers none
or a bad registration.
"""

from typing import Any, Callable, Iterable, Optional, TypeVar, Union

from . import webhooks
from .names import Gvk, ObjectKey, Request
from .object import Object
from .outcome import Outcome
from .registration import Registration

V = TypeVar("V", bound=webhooks.Validator)
D = TypeVar("D", bound=webhooks.Defaulter)
C = TypeVar("C", bound=webhooks.Converter)

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
        self.webhooks = webhooks.Webhooks()
        """The webhooks it serves; none unless the plugin sets them with `validator`,
        `defaulter` and `converter`."""

    def __call__(self, request: Request) -> Outcome:
        return self.reconcile(request)

    def mapper(self, function: MapFunction) -> MapFunction:
        """Decorator: makes `function` this reconciler's mapper."""
        self.map = function
        return function

    def validator(self, *kinds: Union[type, Gvk],
                  operations: Iterable[str] = ("create", "update")) -> Callable[[V], V]:
        """Decorator: makes `function` the validating webhook for `kinds` and `operations`."""
        rules = [webhooks.rule(kind, operations) for kind in kinds]
        return self._serve("validate", "validator", rules)

    def defaulter(self, *kinds: Union[type, Gvk],
                  operations: Iterable[str] = ("create", "update")) -> Callable[[D], D]:
        """Decorator: makes `function` the defaulting webhook for `kinds` and `operations`."""
        rules = [webhooks.rule(kind, operations) for kind in kinds]
        return self._serve("default", "defaulter", rules)

    def converter(self, *kinds: Union[type, Gvk]) -> Callable[[C], C]:
        """Decorator: makes `function` the conversion webhook of the custom resources `kinds`
        (their group and kind; the version is ignored)."""
        gvks = [webhooks.rule(kind, ["create"]).kind for kind in kinds]
        return self._serve("convert", "converter", gvks)

    def _serve(self, declared: str, function: str, rules: list) -> Callable[[Any], Any]:
        """A decorator that records `rules` as the webhooks' `declared` field and the function
        it decorates as their `function` field."""
        def register(decorated: Any) -> Any:
            setattr(self.webhooks, declared, rules)
            setattr(self.webhooks, function, decorated)
            return decorated
        return register


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
