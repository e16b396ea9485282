"""The error a sink raises when it cannot take a batch.

Defined here until it moves into `mocra_core._errors` (`MocraError` → `SinkError`).
"""

from __future__ import annotations

from .._errors import MocraError

__all__ = ("SinkError",)


class SinkError(MocraError):
    """A sink could not open, write or close; nothing of the failed batch was kept.

    Attributes:
        path: The file concerned, if any.
        retryable: `False` when writing the same batch again cannot succeed (an item that cannot be
            encoded, a closed channel, a sink used before `open`); `True` for I/O errors (disk full,
            permissions fixed meanwhile).

    Example:
        >>> err = SinkError("cannot write 'out.jsonl': No space left on device", path="out.jsonl")
        >>> err.path, err.retryable
        ('out.jsonl', True)
    """

    def __init__(self, message: str, *, path: str | None = None, retryable: bool = True) -> None:
        super().__init__(message)
        self.path = path
        self.retryable = retryable
