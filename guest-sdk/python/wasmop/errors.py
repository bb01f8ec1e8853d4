"""Errors: `ApiError` and one subclass per variant of the WIT `error`, for a failed cache read or
apiserver write; `Retryable` and `Terminal`, for a failed reconcile.

A reconcile that lets an `ApiError` (or any other exception) escape fails retryably, so plain
code retries with backoff; raise `Terminal` for a failure that retrying cannot fix.
"""

from wit_world.imports import types as wit
from wit_world.imports.types import DeniedBy


class ApiError(Exception):
    """A failed cache read or apiserver write, with the host's HTTP status."""

    what = "failed"

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{self.what}: {message} ({code} {reason})")
        self.code = code
        """The HTTP status code, e.g. 404; 0 when there was no HTTP response."""
        self.reason = reason
        """The machine-readable reason, e.g. `NotFound`."""
        self.message = message
        """What happened, for people."""


class NotFound(ApiError):
    """The object does not exist (404)."""

    what = "not found"


class Conflict(ApiError):
    """The write was based on a stale resourceVersion (409): re-read and retry."""

    what = "conflict"


class AlreadyExists(ApiError):
    """An object with that name already exists (409)."""

    what = "already exists"


class Forbidden(ApiError):
    """The call was not allowed (403), by the apiserver or by the plugin's declared permissions."""

    def __init__(self, code: int, reason: str, message: str, denied_by: DeniedBy) -> None:
        self.denied_by = denied_by
        """Who refused the call: `DeniedBy.APISERVER` or `DeniedBy.DECLARED_PERMISSIONS`."""
        super().__init__(code, reason, message)

    @property
    def what(self) -> str:
        """How the message opens: who refused the call."""
        if self.denied_by == DeniedBy.DECLARED_PERMISSIONS:
            return "forbidden by the plugin's declared permissions"
        return "forbidden by the apiserver"


class Invalid(ApiError):
    """The object or request was invalid (400, 422), e.g. a failed validation."""

    what = "invalid"


class Timeout(ApiError):
    """The call did not finish in time (504, or the reconcile's own deadline)."""

    what = "timed out"


class Unavailable(ApiError):
    """The apiserver or the cache is not available right now (429, 503); retry later."""

    what = "unavailable"


class Other(ApiError):
    """Anything else the host reported, with its HTTP code (0 when there was none)."""


_BY_VARIANT = {
    wit.Error_NotFound: NotFound,
    wit.Error_Conflict: Conflict,
    wit.Error_AlreadyExists: AlreadyExists,
    wit.Error_Invalid: Invalid,
    wit.Error_Timeout: Timeout,
    wit.Error_Unavailable: Unavailable,
    wit.Error_Other: Other,
}


def from_wit(error: wit.Error) -> ApiError:
    """The exception for a WIT `error` value the host returned."""
    if isinstance(error, wit.Error_Forbidden):
        denied_by, status = error.value
        return Forbidden(status.code, status.reason, status.message, denied_by)
    status = error.value
    return _BY_VARIANT[type(error)](status.code, status.reason, status.message)


class ReconcileError(Exception):
    """A failed reconcile; raise `Retryable` or `Terminal`."""

    terminal = False


class Retryable(ReconcileError):
    """A failure the host retries with per-key exponential backoff."""


class Terminal(ReconcileError):
    """A failure the host does not retry; the next event on the object reconciles it again."""

    terminal = True


def reconcile_error(exc: BaseException) -> ReconcileError:
    """The reconcile error an exception escaping a reconcile stands for: itself when it is one,
    otherwise a retryable error with its message."""
    if isinstance(exc, ReconcileError):
        return exc
    if isinstance(exc, ApiError):
        return Retryable(str(exc))
    return Retryable(f"{type(exc).__name__}: {exc}")

