"""The difference between the writes a fixture expects and those a plugin sent, one line each, as
`wasmop test` reports it.

The two lists are aligned by target (verb, kind and key) as a text diff aligns lines, so one
write added or dropped shows as that write alone; an aligned pair differs field by field, by JSON
pointer. A write sent but not expected is explained by what it would change in the object as the
fixture cached it.
"""

from typing import Any, Optional

from ._json import same, text
from .fixture import FixtureWrite, ref_of

MAX_FIELD_DIFFERENCES = 20
"""The most differences reported for one write."""
MAX_QUOTED = 120
"""The longest JSON value quoted in a difference, in characters."""

_EXPLAINED = ("apply", "merge-patch", "update")


def writes(expected: list, sent: list, objects: list) -> list:
    """A line for each difference between `expected` and `sent` writes (`FixtureWrite`s);
    `objects` are the fixture's cached objects, which explain a write sent but not expected."""
    out: list = []
    for e, s in _align(expected, sent):
        if s is None:
            out.append(f"expected write {e} `{expected[e].target()}`: not sent")
            continue
        write = sent[s]
        prefix = f"write {s} `{write.target()}`: "
        if e is not None:
            fields: list = []
            _values("", expected[e].body, write.body, fields)
            _bounded(prefix, fields, out)
            continue
        current = _cached(write, objects)
        summary = "; against the cached object it changes:" if _explains(write, current) else ""
        out.append(f"{prefix}sent, not expected{summary}")
        changes: list = []
        if _explains(write, current):
            _setting("", write.body, current, changes)
        _bounded(prefix, changes, out)
    return out


def _same_target(a: FixtureWrite, b: FixtureWrite) -> bool:
    return a.target() == b.target() and a.force == b.force


def _align(expected: list, sent: list) -> list:
    """The longest common subsequence of targets, as `(expected index, sent index)` steps
    through both lists in order; `None` on the side a write is missing from."""
    n, m = len(expected), len(sent)
    common = [[0] * (m + 1) for _ in range(n + 1)]
    for i in reversed(range(n)):
        for j in reversed(range(m)):
            if _same_target(expected[i], sent[j]):
                common[i][j] = common[i + 1][j + 1] + 1
            else:
                common[i][j] = max(common[i + 1][j], common[i][j + 1])
    i, j, steps = 0, 0, []
    while i < n or j < m:
        if i < n and j < m and _same_target(expected[i], sent[j]):
            steps.append((i, j))
            i, j = i + 1, j + 1
        elif j < m and (i == n or common[i][j + 1] >= common[i + 1][j]):
            steps.append((None, j))
            j += 1
        else:
            steps.append((i, None))
            i += 1
    return steps


def _bounded(prefix: str, fields: list, out: list) -> None:
    """Adds `fields` to `out` after `prefix`, at most `MAX_FIELD_DIFFERENCES` of them."""
    out.extend(prefix + field for field in fields[:MAX_FIELD_DIFFERENCES])
    hidden = len(fields) - MAX_FIELD_DIFFERENCES
    if hidden > 0:
        out.append(f"{prefix}{hidden} more differences")


def _values(path: str, expected: Any, sent: Any, out: list) -> None:
    """Adds a line to `out` for each field where `expected` and `sent` differ, under `path`
    (a JSON pointer)."""
    if isinstance(expected, dict) and isinstance(sent, dict):
        for key in sorted(set(expected) | set(sent)):
            at = _pointer(path, key)
            if key not in sent:
                out.append(f"at {at}: expected {_quote(expected[key])}, absent")
            elif key not in expected:
                out.append(f"at {at}: not expected, sent {_quote(sent[key])}")
            else:
                _values(at, expected[key], sent[key], out)
    elif isinstance(expected, list) and isinstance(sent, list) and len(expected) == len(sent):
        for index, (want, got) in enumerate(zip(expected, sent)):
            _values(f"{path}/{index}", want, got, out)
    elif not same(expected, sent):
        out.append(f"at {path or '/'}: expected {_quote(expected)}, sent {_quote(sent)}")


def _cached(write: FixtureWrite, objects: list) -> Optional[dict]:
    """The cached object `write` targets, if the fixture holds it."""
    return next((obj for obj in objects if ref_of(obj) == write.ref), None)


def _explains(write: FixtureWrite, current: Optional[dict]) -> bool:
    """Whether a write sent but not expected is explained by what it changes: an applied,
    merged or replacing body, against the object cached."""
    return write.verb in _EXPLAINED and current is not None


def _setting(path: str, body: Any, current: Any, out: list) -> None:
    """Adds a line to `out` for each leaf of `body` under `path` whose value `current` lacks or
    holds otherwise; lists of one length are compared item by item, so fields the apiserver
    defaulted in the cached object are no change."""
    if isinstance(body, dict) and (current is None or isinstance(current, dict)):
        for key, value in sorted(body.items()):
            _setting(_pointer(path, key), value, (current or {}).get(key), out)
    elif isinstance(body, list) and isinstance(current, list) and len(body) == len(current):
        for index, (item, was) in enumerate(zip(body, current)):
            _setting(f"{path}/{index}", item, was, out)
    elif not same(body, current):
        out.append(f"{path or '/'} from {_quote(current)} to {_quote(body)}")


def _pointer(path: str, key: str) -> str:
    """`path` extended by `key`, escaped as JSON pointers escape."""
    return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"


def _quote(value: Any) -> str:
    """`value` as compact JSON, cut to `MAX_QUOTED` characters."""
    quoted = text(value)
    return quoted if len(quoted) <= MAX_QUOTED else quoted[:MAX_QUOTED] + "…"
