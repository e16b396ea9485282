"""The error a coordination backend raises on purpose.

Defined here until it moves into `mocra_core._errors` (`MocraError` → `CoordinationError`).
"""

from __future__ import annotations

from .._errors import MocraError

__all__ = ("CoordinationError",)


class CoordinationError(MocraError):
    """A key holds the wrong kind of data, a counter overflowed, or the backend failed.

    `key` names the key concerned ("" when the failure is not about one key).

    Example:
        >>> str(CoordinationError("jobs/seen", "holds a list, not a value"))
        "coordination key 'jobs/seen': holds a list, not a value"
    """

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"coordination key {key!r}: {problem}" if key else f"coordination: {problem}")
        self.key = key
