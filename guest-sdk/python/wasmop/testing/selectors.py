"""Label selectors (`app=web,tier!=db,env in (a,b),team,!legacy`) and field selectors
(`metadata.name=web,status.phase!=Failed`) as the host parses and matches them. Keys and values
are taken as written; only the shape of each requirement is checked.
"""

import re
from typing import Any, Callable, Optional

Lookup = Callable[[str], Optional[str]]
"""A label's (or a field's) text value by key (or dotted path), `None` when absent."""

Requirement = Callable[[Lookup], bool]
"""One requirement: whether the values a lookup finds satisfy it."""

_SET = re.compile(r"^(\S+)\s+(in|notin)\s+\((.*)\)$")
_FIELD_PATH = re.compile(r"^[A-Za-z0-9._-]+$")


class Selector:
    """A parsed selector: every requirement must hold; the empty one matches everything."""

    def __init__(self, requirements: list) -> None:
        self.requirements = requirements

    def matches(self, lookup: Lookup) -> bool:
        """Whether the values `lookup` finds satisfy every requirement."""
        return all(requirement(lookup) for requirement in self.requirements)


def _parts(text: str, split: Callable[[str], list]) -> list:
    return [part.strip() for part in split(text or "") if part.strip()]


def _top_level(text: str) -> list:
    """`text` split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "()":
            depth = depth + 1 if char == "(" else max(depth - 1, 0)
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    return parts + [text[start:]]


def label_selector(text: Optional[str]) -> Selector:
    """Parses a label selector; raises `ValueError` naming a malformed requirement."""
    return Selector([_label_requirement(part) for part in _parts(text, _top_level)])


def field_selector(text: Optional[str]) -> Selector:
    """Parses a field selector; raises `ValueError` naming a malformed requirement."""
    return Selector([_field_requirement(part) for part in _parts(text, lambda t: t.split(","))])


def _label_requirement(part: str) -> Requirement:
    if part.startswith("!"):
        key = part[1:].strip()
        return lambda lookup: lookup(key) is None
    for op in ("!=", "==", "="):
        if op in part:
            key, value = (side.strip() for side in part.split(op, 1))
            return _equality(key, value, op != "!=")
    found = _SET.match(part)
    if found:
        key, op, values = found.groups()
        allowed = {value.strip() for value in values.split(",")}
        if op == "in":
            return lambda lookup: lookup(key) in allowed
        return lambda lookup: lookup(key) not in allowed
    if any(char.isspace() for char in part):
        raise ValueError(f"{part!r} is not a label requirement")
    return lambda lookup: lookup(part) is not None


def _field_requirement(part: str) -> Requirement:
    equal = "!=" not in part
    path, _, value = part.partition("=" if equal else "!=")
    value = value[1:] if equal and value.startswith("=") else value
    path, value = path.strip(), value.strip()
    if (equal and "=" not in part) or not _FIELD_PATH.match(path) or set(value) & set("=!"):
        raise ValueError(f"field selector {part!r} is not path=value")
    return _equality(path, value, equal)


def _equality(key: str, value: str, equal: bool) -> Requirement:
    return lambda lookup: (lookup(key) == value) == equal


def equals(path: str, value: str) -> Selector:
    """The field selector of one equality, `path=value`."""
    return Selector([_equality(path, value, True)])


def selected(labels: Selector, fields: Selector) -> Callable[[dict], bool]:
    """Whether an object passes both selectors: labels looked up in metadata.labels, fields by
    dotted path; only text values count."""
    def label(obj: dict, key: str) -> Optional[str]:
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(key)
        return value if isinstance(value, str) else None

    def field(obj: dict, path: str) -> Optional[str]:
        value: Any = obj
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        return value if isinstance(value, str) else None

    return lambda obj: (labels.matches(lambda key: label(obj, key))
                        and fields.matches(lambda path: field(obj, path)))
