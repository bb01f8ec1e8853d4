"""Status conditions in the standard `metav1.Condition` shape: set one so that its
lastTransitionTime moves only when its status does, which keeps a converged status stable.

    conditions = status.setdefault("conditions", [])
    changed = set_condition(conditions, condition("Ready", True, "Available", "2/2 replicas ready"))
"""

from datetime import datetime, timezone
from typing import Optional, Union

from .fields import Fields


def now() -> str:
    """The wall clock in RFC 3339 at the one-second precision the apiserver stores times with."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type: str, status: Union[bool, str], reason: str, message: str, *,
              observed_generation: Optional[int] = None) -> Fields:
    """A condition of `type` with status `True`/`False` (a bool) or `Unknown`, transitioned now."""
    if isinstance(status, bool):
        status = "True" if status else "False"
    cond = Fields(type=type, status=status, reason=reason, message=message,
                  last_transition_time=now())
    if observed_generation is not None:
        cond.observed_generation = observed_generation
    return cond


def find_condition(conditions: Optional[list], type: str) -> Optional[Fields]:
    """The condition of `type`, if present."""
    return next((c for c in conditions or [] if c.get("type") == type), None)


def is_condition_true(conditions: Optional[list], type: str) -> bool:
    """Whether the condition of `type` is present with status `True`."""
    found = find_condition(conditions, type)
    return found is not None and found.get("status") == "True"


def set_condition(conditions: list, cond: dict) -> bool:
    """Sets `cond`, replacing the condition of the same type. When the status is unchanged the
    old lastTransitionTime is kept. Returns whether anything other than lastTransitionTime
    changed."""
    for index, existing in enumerate(conditions):
        if existing.get("type") != cond.get("type"):
            continue
        cond = Fields(cond)
        if existing.get("status") == cond.get("status"):
            cond["lastTransitionTime"] = existing.get("lastTransitionTime")
        conditions[index] = cond
        return existing != cond
    conditions.append(Fields(cond))
    return True
