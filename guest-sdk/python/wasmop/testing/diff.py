"""The difference between what a fixture expects and what a plugin did, one line each, as `wasmop
test` reports it: the writes it sent and the events it recorded.

Each pair of lists is aligned by target (for writes the verb, kind and key; for events the type,
reason and object) as a text diff aligns lines, so one write added or dropped shows as that write
alone; an aligned pair of writes differs field by field, by JSON pointer. A write sent but not
expected is explained against the closest expected write (one to the same object by another
verb), or else against the object the host held, whatever its verb. Fields the host gave a fixture
object that lacked them (uid, resourceVersion, generation) are not differences where the expected
write omits them too.
"""

import copy
from typing import Any, Optional

from ._json import same, text
from .fixture import FixtureWrite, ref_of

MAX_FIELD_DIFFERENCES = 20
"""The most differences reported for one write."""
MAX_QUOTED = 120
"""The longest JSON value quoted in a difference, in characters."""

_ASSIGNED = ("uid", "resourceVersion", "generation")


class Cached:
    """The objects a fixture's host held before the reconcile: as the fixture gives them
    (`given`), and as the host holds them (`held`, with the uid, resourceVersion and generation
    it gave those that lacked them), in the same order."""

    def __init__(self, given: list, held: list) -> None:
        self.given, self.held = given, held

    def object(self, write: FixtureWrite) -> Optional[tuple]:
        """The object `write` targets, as the host held it and as the fixture gave it."""
        found = [i for i, obj in enumerate(self.given) if ref_of(obj) == write.ref]
        return (self.held[found[-1]], self.given[found[-1]]) if found else None

    def without_assigned(self, write: FixtureWrite, expected: Any) -> Any:
        """`write`'s body without the metadata the host gave its target — fields the fixture's
        object lacked and `expected` omits too — when it carries the value the host gave."""
        body = write.body
        pair = self.object(write)
        if pair is None or not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
            return body
        held, given = pair
        body = copy.deepcopy(body)
        for field in _ASSIGNED:
            stated = _meta(given, field) is not None or _meta(expected, field) is not None
            if not stated and field in body["metadata"] and \
                    same(body["metadata"][field], _meta(held, field)):
                del body["metadata"][field]
        return body


def _meta(obj: Any, field: str) -> Any:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta.get(field) if isinstance(meta, dict) else None


def writes(expected: list, sent: list, cached: Cached) -> list:
    """A line for each difference between `expected` and `sent` writes (`FixtureWrite`s);
    `cached` is what the host held before the reconcile, which explains a write sent but not
    expected."""
    out: list = []
    steps = _align(expected, sent, _same_target)
    unmatched = [e for e, s in steps if s is None]
    for e, s in steps:
        if s is None:
            out.append(f"expected write {e} `{expected[e].target()}`: not sent")
            continue
        write = sent[s]
        prefix = f"write {s} `{write.target()}`: "
        if e is not None:
            fields: list = []
            _values("", expected[e].body, cached.without_assigned(write, expected[e].body), fields)
            _bounded(prefix, fields, out)
            continue
        closest = next((i for i in unmatched if expected[i].ref == write.ref), None)
        summary, details = _unexpected(write, closest, expected, cached)
        out.append(f"{prefix}sent, not expected{summary}")
        _bounded(prefix, details, out)
    return out


def events(expected: list, sent: list) -> list:
    """A line for each difference between `expected` and `sent` events (`FixtureEvent`s)."""
    out: list = []
    for e, s in _align(expected, sent, lambda a, b: a.target() == b.target()):
        if s is None:
            out.append(f"expected event {e} `{expected[e].target()}`: not recorded")
        elif e is None:
            out.append(f"event {s} `{sent[s].target()}`: recorded, not expected: "
                       f"{_quote(sent[s].message)}")
        elif expected[e].message != sent[s].message:
            out.append(f"event {s} `{sent[s].target()}`: message: expected "
                       f"{_quote(expected[e].message)}, recorded {_quote(sent[s].message)}")
    return out


def _unexpected(write: FixtureWrite, closest: Optional[int], expected: list,
                cached: Cached) -> tuple:
    """Why `write`, sent but not expected, was not: a few words to follow "sent, not expected",
    and a line for each field that explains it."""
    if closest is not None:
        fields: list = []
        _values("", expected[closest].body, write.body, fields)
        body = ", whose body differs:" if fields else ", with the same body"
        return f"; the closest expected is write {closest} `{expected[closest].target()}`{body}", \
            fields
    pair = cached.object(write)
    if pair is None:
        if write.verb in ("create", "apply"):
            return "; the fixture holds no such object: it creates one", []
        return "; the fixture holds no such object (the apiserver answers NotFound)", []
    current = pair[0]
    if write.verb == "delete":
        version = _quote(_meta(current, "resourceVersion"))
        return f"; it deletes the cached object, at resourceVersion {version}", []
    out: list = []
    if write.verb == "update-status":
        status = write.body.get("status") if isinstance(write.body, dict) else None
        _setting("/status", status, current.get("status"), out)
        summary = "; against the cached object's status it changes"
    elif write.verb == "json-patch":
        _operations(write.body, current, out)
        summary = "; against the cached object its operations"
    elif write.verb == "create":
        _setting("", write.body, current, out)
        summary = ("; the cached object exists already (the apiserver answers AlreadyExists), "
                   "and it changes")
    else:
        _setting("", write.body, current, out)
        summary = "; against the cached object it changes"
    return (f"{summary}:" if out else f"{summary} nothing"), out


def _operations(patch: Any, current: Any, out: list) -> None:
    """Adds a line to `out` for each operation of a JSON patch: the path it sets and what
    `current` held there, or what it removes, moves or copies."""
    for operation in patch if isinstance(patch, list) else []:
        op, path = operation.get("op", ""), operation.get("path", "")
        was, value = _at(current, path), operation.get("value")
        if op in ("add", "replace"):
            out.append(f"{op} {path} from {_quote(was)} to {_quote(value)}")
        elif op == "remove":
            out.append(f"remove {path}, which was {_quote(was)}")
        elif op == "test":
            out.append(f"test {path} is {_quote(value)}; it is {_quote(was)}")
        else:
            out.append(f"{op} {operation.get('from', '')} to {path}")


def _at(value: Any, path: str) -> Any:
    """The value at JSON pointer `path` in `value`, `None` when there is none."""
    for part in path.split("/")[1:] if path else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _same_target(a: FixtureWrite, b: FixtureWrite) -> bool:
    return a.target() == b.target() and a.force == b.force


def _align(expected: list, sent: list, same_target) -> list:
    """The longest common subsequence of items that are the `same_target`, as `(expected index,
    sent index)` steps through both lists in order; `None` on the side an item is missing from."""
    n, m = len(expected), len(sent)
    common = [[0] * (m + 1) for _ in range(n + 1)]
    for i in reversed(range(n)):
        for j in reversed(range(m)):
            if same_target(expected[i], sent[j]):
                common[i][j] = common[i + 1][j + 1] + 1
            else:
                common[i][j] = max(common[i + 1][j], common[i][j + 1])
    i, j, steps = 0, 0, []
    while i < n or j < m:
        if i < n and j < m and same_target(expected[i], sent[j]):
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
