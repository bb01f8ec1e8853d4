"""JSON patch (RFC 6902): `add`, `remove`, `replace`, `move`, `copy` and `test`, applied to a copy
so that a failed patch changes nothing.
"""

import copy
from typing import Any

from ._json import same


class PatchFailed(ValueError):
    """A JSON patch that is malformed or does not apply to the document."""


def apply_patch(document: Any, operations: Any) -> Any:
    """`document` with the JSON patch `operations` applied; raises `PatchFailed`."""
    if not isinstance(operations, list):
        raise PatchFailed("a JSON patch must be an array of operations")
    document = copy.deepcopy(document)
    for index, operation in enumerate(operations):
        try:
            document = _apply(document, operation)
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise PatchFailed(f"operation {index} ({operation!r}) failed: {error}") from None
    return document


def _apply(document: Any, operation: dict) -> Any:
    op, path = operation["op"], _tokens(operation["path"])
    if op == "test":
        if not same(_get(document, path), operation["value"]):
            raise ValueError(f"{operation['path']} does not hold the value tested")
        return document
    if op == "remove":
        return _remove(document, path)
    if op == "replace":
        return _replace(document, path, copy.deepcopy(operation["value"]))
    if op == "add":
        return _add(document, path, copy.deepcopy(operation["value"]))
    source = _tokens(operation["from"])
    value = copy.deepcopy(_get(document, source))
    if op == "move":
        return _add(_remove(document, source), path, value)
    if op == "copy":
        return _add(document, path, value)
    raise ValueError(f"unknown op {op!r}")


def _tokens(pointer: str) -> list:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer")
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _index(container: list, token: str, adding: bool) -> int:
    if adding and token == "-":
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise ValueError(f"{token!r} is not an array index")
    index = int(token)
    if index > len(container) or (index == len(container) and not adding):
        raise IndexError(f"index {index} is out of bounds")
    return index


def _get(document: Any, path: list) -> Any:
    for token in path:
        if isinstance(document, list):
            document = document[_index(document, token, adding=False)]
        else:
            document = document[token]
    return document


def _add(document: Any, path: list, value: Any) -> Any:
    if not path:
        return value
    parent = _get(document, path[:-1])
    if isinstance(parent, list):
        parent.insert(_index(parent, path[-1], adding=True), value)
    elif isinstance(parent, dict):
        parent[path[-1]] = value
    else:
        raise TypeError(f"cannot add to a {type(parent).__name__}")
    return document


def _replace(document: Any, path: list, value: Any) -> Any:
    if not path:
        return value
    return _add(_remove(document, path), path, value)


def _remove(document: Any, path: list) -> Any:
    if not path:
        raise ValueError("cannot remove the whole document")
    parent = _get(document, path[:-1])
    if isinstance(parent, list):
        del parent[_index(parent, path[-1], adding=False)]
    else:
        del parent[path[-1]]
    return document
