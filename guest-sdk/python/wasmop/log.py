"""Logging through Python's `logging`, written by the host's logger tagged with the plugin's name
and the request.

Importing `wasmop` puts a `HostHandler` on the root logger and lets every level through, so the
host's filter (its `RUST_LOG`) decides what is kept. Attributes passed with `extra=` become the
line's key-value fields:

    log = logging.getLogger(__name__)
    log.info("released WebApp %s", key, extra={"finalizer": FINALIZER})
"""

import logging

from wit_world.imports import log as wit

TRACE = 5
"""A level below DEBUG, for the host's trace level."""

logging.addLevelName(TRACE, "TRACE")

_STANDARD_ATTRIBUTES = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


def host_level(levelno: int) -> wit.Level:
    """The host's level for a `logging` level number."""
    if levelno >= logging.ERROR:
        return wit.Level.ERROR
    if levelno >= logging.WARNING:
        return wit.Level.WARN
    if levelno >= logging.INFO:
        return wit.Level.INFO
    if levelno >= logging.DEBUG:
        return wit.Level.DEBUG
    return wit.Level.TRACE


def fields(record: logging.LogRecord) -> list[tuple[str, str]]:
    """The key-value fields of a record: the attributes `extra=` added, as text."""
    return [(key, str(value)) for key, value in record.__dict__.items()
            if key not in _STANDARD_ATTRIBUTES]


class HostHandler(logging.Handler):
    """A `logging` handler that writes each record through the host's `log` import."""

    def emit(self, record: logging.LogRecord) -> None:
        """Writes the record, formatted (with its traceback, if any), through the host."""
        try:
            wit.log(host_level(record.levelno), self.format(record), fields(record))
        except Exception:
            self.handleError(record)


def install(level: int = TRACE) -> None:
    """Puts a `HostHandler` on the root logger, once, and sets the root level."""
    root = logging.getLogger()
    if not any(isinstance(handler, HostHandler) for handler in root.handlers):
        root.addHandler(HostHandler())
    root.setLevel(level)
