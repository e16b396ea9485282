"""`FencedResource`: the receiving end of fencing tokens, which refuses writes from a stale holder."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

from ._errors import StaleToken

__all__ = ("FencedResource",)

T = TypeVar("T")


class FencedResource(Generic[T]):
    """A value that accepts a write only with a token at least as high as every token it has seen.

    This is the rule a storage target applies to make a lock safe: a lock holder that paused past its
    lease (GC, network partition) still believes it holds the lock, but its token is lower than its
    successor's, so its late write is refused. Equal tokens are accepted (one holder writing twice).
    Thread-safe.

    Example:
        >>> resource = FencedResource(b"")
        >>> resource.write(2, b"from the new holder")
        >>> resource.write(1, b"from the stale holder")
        Traceback (most recent call last):
        ...
        mocra_cluster._errors.StaleToken: fencing token 1 is stale: a write with token 2 was already accepted
        >>> resource.value, resource.highest
        (b'from the new holder', 2)
    """

    def __init__(self, value: T) -> None:
        self._value = value
        self._highest = 0
        self._lock = threading.Lock()

    @property
    def value(self) -> T:
        """The last accepted value."""
        return self._value

    @property
    def highest(self) -> int:
        """The highest token accepted so far (0 before the first write)."""
        return self._highest

    def write(self, token: int, value: T) -> None:
        """Store `value` if `token` is not lower than the highest token seen.

        Raises:
            StaleToken: `token` is lower; nothing changed.
        """
        with self._lock:
            if token < self._highest:
                raise StaleToken(token, highest=self._highest)
            self._highest = token
            self._value = value
