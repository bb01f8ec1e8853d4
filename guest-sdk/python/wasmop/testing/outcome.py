"""How a reconcile ended, in a fixture's words: `done`, `error`, or `requeue-after <duration>`
with ` priority N` when it asked for one. Durations compare as durations, as `wasmop test`
compares them: an expected `requeue-after 5m` is met by a reconcile that asked for 300 seconds,
whichever way either is written (`300s`, `5m`, `0.5s`, `500ms`, `1m30s`, `1h`).
"""

import re
from typing import Optional, Tuple

_UNITS = {"ms": 10**6, "h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")


def check_outcome(text: str) -> None:
    """Raises `ValueError` when `text` is not an outcome a fixture may state."""
    _read(text)


def same_outcome(expected: str, got: str) -> bool:
    """Whether the outcome a fixture `expected` is the one a reconcile `got`: the same words, or
    the same requeue after the same duration at the same priority."""
    try:
        return _read(expected) == _read(got)
    except ValueError:
        return expected == got


def outcome_text(after_millis: Optional[int], priority: Optional[int]) -> str:
    """`done` when `after_millis` is `None`, else `requeue-after 30s` (`1500ms` when not whole
    seconds; ` priority N` when one was asked)."""
    if after_millis is None:
        return "done"
    duration = f"{after_millis // 1000}s" if after_millis % 1000 == 0 else f"{after_millis}ms"
    return f"requeue-after {duration}" + (f" priority {priority}" if priority is not None else "")


def _read(text: str) -> Tuple:
    """`text` as a comparable tuple; raises `ValueError` when it is no outcome."""
    words = text.split()
    if words in (["done"], ["error"]):
        return (words[0],)
    if len(words) in (2, 4) and words[0] == "requeue-after":
        nanos = _nanos(words[1])
        if len(words) == 2:
            return ("requeue-after", nanos, None)
        if words[2] == "priority" and re.fullmatch(r"[+-]?\d+", words[3]):
            return ("requeue-after", nanos, int(words[3]))
    raise ValueError(f"`{text}` is no outcome: done, error or requeue-after <duration> like 30s "
                     "or 5m, then priority N if asked")


def _nanos(text: str) -> int:
    """A duration like `300s`, `5m`, `1.5s` or `1m30s` in nanoseconds; `ValueError` if none."""
    parts = _PART.findall(text)
    if not text or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(text)
    return round(sum(float(number) * _UNITS[unit] for number, unit in parts))
