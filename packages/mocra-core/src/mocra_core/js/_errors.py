"""The errors a script run raises: `JsError`, and its `JsTimeout` and `JsMemoryError`."""

from __future__ import annotations

from .._errors import MocraError

__all__ = ("JsError", "JsMemoryError", "JsTimeout")


class JsError(MocraError):
    """A script threw, did not parse, overflowed its stack or gave a value that has no Python form.

    The message is the engine's: the JavaScript error, then its stack (`at f (<input>:1:9)`).

    Example:
        >>> str(JsError("ReferenceError: x is not defined"))
        'ReferenceError: x is not defined'
    """


class JsTimeout(JsError):
    """A script ran past its time limit and was stopped (the context stays usable)."""


class JsMemoryError(JsError):
    """A script asked for more memory than its limit and was stopped (the context stays usable)."""
