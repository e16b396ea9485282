"""The error a seen-set raises when its store fails.

Defined here until it moves into `mocra_core._errors` (`MocraError` → `SeenSetError`).
"""

from __future__ import annotations

from .._errors import MocraError

__all__ = ("SeenSetError",)


class SeenSetError(MocraError):
    """A seen-set's store could not be opened, read or written; `path` names it.

    Example:
        >>> str(SeenSetError("/jobs/a/seen", "Permission denied"))
        "seen set '/jobs/a/seen': Permission denied"
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"seen set {path!r}: {problem}")
        self.path = path
