"""JSON values as the host compares and sends them."""

import json
from typing import Any


def same(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal as JSON: `1` is not `1.0`, and `true` is not `1`."""
    if _json_type(a) is not _json_type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def text(value: Any) -> str:
    """`value` as compact JSON text with its keys sorted, as the host writes JSON."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _json_type(value: Any) -> type:
    if isinstance(value, bool) or value is None:
        return type(value)
    if isinstance(value, int):
        return int
    return float if isinstance(value, float) else type(value)
