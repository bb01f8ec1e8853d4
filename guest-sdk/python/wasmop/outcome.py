"""What a successful reconcile returns: `Done` (or `None`), or `RequeueAfter` a delay."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Optional, Union

Seconds = Union[float, timedelta]
"""A duration: seconds as a number, or a `timedelta`."""


def millis(duration: Seconds) -> int:
    """A duration in whole milliseconds, as the host takes it."""
    seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative: {seconds} s")
    return round(seconds * 1000)


@dataclass(frozen=True)
class Done:
    """Converged: nothing more to do until the next event. Returning `None` means the same."""


@dataclass(frozen=True)
class RequeueAfter:
    """Reconcile the same object again after `after` (seconds or a `timedelta`)."""

    after: Seconds
    priority: Optional[int] = None
    """Queue priority; higher runs first. The host's default (0) when `None`."""


Outcome = Union[Done, RequeueAfter, None]
"""What a reconcile function returns."""
