"""A fake host for the SDK's tests: replaces the generated import functions with recorders."""

import contextlib
from typing import Any, Callable, Iterator
from unittest import mock

from componentize_py_types import Err
from wit_world.imports import types as wit


def status(code: int, reason: str) -> wit.Status:
    """A host status whose message names its reason."""
    return wit.Status(code, reason, f"{reason} happened")


def failing(error: wit.Error) -> Callable[..., Any]:
    """An import that fails with `error`, as the host returns it."""
    def call(*args: Any) -> Any:
        raise Err(error)
    return call


@contextlib.contextmanager
def imports(module: Any, **functions: Callable[..., Any]) -> Iterator[list]:
    """Replaces functions of a generated import module; yields the list of calls made
    (`(name, args)`)."""
    calls: list = []

    def recorder(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            calls.append((name, args))
            return function(*args)
        return call

    with contextlib.ExitStack() as stack:
        for name, function in functions.items():
            stack.enter_context(mock.patch.object(module, name, recorder(name, function)))
        yield calls
