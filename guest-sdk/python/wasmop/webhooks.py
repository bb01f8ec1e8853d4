"""The webhooks a plugin may serve for its kinds, beside its reconciler: `validate` admits or
refuses a request, `default` returns the object with its defaults set (the host sends the
difference to the apiserver as a JSONPatch), `convert` turns an object into another version of
its custom resource. Each is a decorator on the registered reconciler:

    @reconcile.validator(WebApp, operations=["create", "update"])
    def validate(request: AdmissionRequest) -> None:
        if request.object.spec.get("replicas", 1) > 50:
            raise Denied("spec.replicas must be at most 50")

    @reconcile.defaulter(WebApp, operations=["create", "update"])
    def default(request: AdmissionRequest) -> Object:
        request.object.spec.setdefault("port", 8080)
        return request.object

    @reconcile.converter(WebApp)
    def convert(obj: Object, api_version: str) -> Object:
        ...

A validator returns nothing (or warnings) to admit and raises `Denied` to refuse; a defaulter
that raises `Denied` refuses the request too. A converter raises `ConversionFailed` when it
cannot convert. Any other exception is the plugin failing: the host answers with the plugin's
failure policy.
"""

from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Union

from .names import Gvk
from .object import Object

OPERATIONS = ("create", "update", "delete", "connect")
"""The operations a validating or defaulting webhook may be called for."""


@dataclass
class UserInfo:
    """Who sent the request, as the apiserver authenticated them."""

    username: str
    uid: str
    groups: List[str]


@dataclass
class AdmissionRequest:
    """One admission request: the operation, the object as it would be stored (`None` on
    delete) and as it is stored (`None` on create), and who asks."""

    uid: str
    kind: Gvk
    namespace: str
    name: str
    operation: str
    object: Optional[Object]
    old_object: Optional[Object]
    user: UserInfo
    dry_run: bool


class Denied(Exception):
    """Refuses an admission request with `message`, shown to the client, and `warnings`."""

    def __init__(self, message: str, warnings: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.warnings = list(warnings)


class ConversionFailed(Exception):
    """Fails a conversion, saying why."""


Validator = Callable[[AdmissionRequest], Optional[Iterable[str]]]
"""Admits a request (returning warnings, or nothing) or refuses it by raising `Denied`."""

Defaulter = Callable[[AdmissionRequest], Object]
"""Returns the request's object with its defaults set, or raises `Denied`."""

Converter = Callable[[Object, str], Object]
"""Returns the object in `api_version` (`group/version`), or raises `ConversionFailed`."""


@dataclass
class Rule:
    """The operations a webhook is called for, on one kind."""

    kind: Gvk
    operations: List[str]


def rule(kind: Union[type, Gvk], operations: Iterable[str]) -> Rule:
    """A rule for `kind` (an `Object` subclass or a `Gvk`) and `operations`, checked."""
    operations = [op.lower() for op in operations]
    unknown = [op for op in operations if op not in OPERATIONS]
    if unknown or not operations:
        raise ValueError(f"operations must be some of {', '.join(OPERATIONS)}; got {operations}")
    if isinstance(kind, type):
        if not issubclass(kind, Object) or kind.GVK is None:
            raise TypeError(f"{kind.__name__} is not a declared kind")
        kind = kind.GVK
    return Rule(kind, operations)


@dataclass
class Webhooks:
    """What a reconciler serves besides reconciles: its rules and functions."""

    validate: List[Rule] = field(default_factory=list)
    default: List[Rule] = field(default_factory=list)
    convert: List[Gvk] = field(default_factory=list)
    validator: Optional[Validator] = None
    defaulter: Optional[Defaulter] = None
    converter: Optional[Converter] = None
