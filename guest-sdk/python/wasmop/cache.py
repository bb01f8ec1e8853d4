"""Typed reads from the host's informer cache. Reads never reach the apiserver, and return this
plugin's own writes or newer.

    deployment = cache.get(Deployment, "shop", "web")          # raises NotFound when missing
    marker = cache.get_or_none(ConfigMap, "shop", "marker")    # None when missing
    pods = cache.list(Pod, namespace="shop", label_selector={"app": "web"})
"""

import builtins
from typing import Mapping, Optional, TypeVar, Union

from wit_world.imports import cache as wit

from ._wit import call, gvk
from .errors import NotFound
from .object import Object, parse

O = TypeVar("O", bound=Object)

Selector = Union[str, Mapping[str, str], None]
"""A selector in Kubernetes syntax (`app=web,tier!=db`) or a dict of required labels."""


def get(kind: type[O], namespace: str, name: str) -> O:
    """Gets one object; `namespace` is empty for cluster-scoped kinds. Missing: `NotFound`."""
    return parse(call(wit.get, gvk(kind), namespace, name), kind)


def get_or_none(kind: type[O], namespace: str, name: str) -> Optional[O]:
    """Gets one object, or `None` when it does not exist."""
    try:
        return get(kind, namespace, name)
    except NotFound:
        return None


def list(kind: type[O], *, namespace: Optional[str] = None, label_selector: Selector = None,
         field_selector: Selector = None) -> builtins.list[O]:
    """Lists the objects of `kind` in `namespace` (all when `None`) matching both selectors."""
    options = wit.ListOptions(namespace, _selector(label_selector), _selector(field_selector))
    return [parse(text, kind) for text in call(wit.list, gvk(kind), options)]


def list_by_index(kind: type[O], index: str, value: str) -> builtins.list[O]:
    """Lists the objects of `kind` whose value for the declared field index `index` is `value`."""
    return [parse(text, kind) for text in call(wit.list_by_index, gvk(kind), index, value)]


def _selector(selector: Selector) -> Optional[str]:
    if selector is None or isinstance(selector, str):
        return selector
    return ",".join(f"{key}={value}" for key, value in selector.items())
