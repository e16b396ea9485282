"""`LocalCoordination`: the `Coordination` of one process, in dicts."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ...coordination._errors import CoordinationError
from ...coordination._protocol import LockInfo, check_key, check_lock_key, check_ttl, parse_counter

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import Self

__all__ = ("LocalCoordination",)

_Entry = tuple["bytes | list[bytes]", "float | None"]  # value or list, deadline (None: never)
_Grant = tuple[str, int, float]  # holder, token, deadline

_MIN_SWEEP = 1024


class LocalCoordination:
    """Coordination for the tasks of one process: dicts, O(1) per call, nothing shared beyond the process.

    Every call runs to completion without suspending, so calls are atomic with respect to each other
    (the event loop runs one at a time). Expired values are dropped when next touched, and by a sweep of
    the whole store once there were as many TTL writes as keys were left by the previous sweep (amortised
    O(1), so keys that are never touched again do not pile up). Lock grants stay until released or taken
    over, so that a holder that paused past its expiry can still renew (see `Coordination`). Fencing
    tokens start at 1 and live as long as the object. `is_leader` is always True. `aclose` does nothing:
    the object keeps working.

    Args:
        clock: Judges expiry, in seconds (monotonic by default; inject a fake one in tests).

    Example:
        >>> import anyio
        >>> async def main():
        ...     async with LocalCoordination() as shared:
        ...         first = await shared.set_if_absent("seeded/quotes")
        ...         again = await shared.set_if_absent("seeded/quotes")
        ...         token = await shared.acquire_lock("login/alice", holder="worker-1", ttl=30)
        ...         other = await shared.acquire_lock("login/alice", holder="worker-2", ttl=30)
        ...         return first, again, token, other, await shared.incr("pages", 3)
        >>> anyio.run(main)
        (True, False, 1, None, 3)
    """

    __slots__ = ("_clock", "_data", "_locks", "_sweep_after", "_token", "_ttl_writes")

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._data: dict[str, _Entry] = {}
        self._locks: dict[str, _Grant] = {}
        self._token = 0
        self._ttl_writes, self._sweep_after = 0, _MIN_SWEEP

    # ------------------------------------------------------------------ values

    def _live(self, key: str) -> _Entry | None:
        entry = self._data.get(key)
        if entry is not None and entry[1] is not None and entry[1] <= self._clock():
            del self._data[key]
            return None
        return entry

    def _value(self, key: str) -> tuple[bytes | None, float | None]:
        entry = self._live(key)
        if entry is None:
            return None, None
        payload, deadline = entry
        if isinstance(payload, list):
            raise CoordinationError(key, "holds a list, not a value")
        return payload, deadline

    def _deadline(self, ttl: float | None) -> float | None:
        if ttl is None:
            return None
        check_ttl(ttl)
        now = self._clock()
        self._ttl_writes += 1
        if self._ttl_writes >= self._sweep_after:  # amortised O(1): as many writes as keys left last time
            self._ttl_writes = 0
            expired = [k for k, (_, d) in self._data.items() if d is not None and d <= now]
            for k in expired:
                del self._data[k]
            self._sweep_after = max(_MIN_SWEEP, len(self._data))
        return now + ttl

    async def get(self, key: str) -> bytes | None:
        """Return the value of `key`, or None if absent or expired."""
        check_key(key)
        return self._value(key)[0]

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store `value` under `key`, replacing whatever was there."""
        check_key(key)
        self._data[key] = (value, self._deadline(ttl))

    async def set_if_absent(self, key: str, value: bytes = b"1", *, ttl: float | None = None) -> bool:
        """Store `value` if `key` is absent or expired; True if stored."""
        check_key(key)
        check_ttl(ttl)
        if self._live(key) is not None:
            return False
        self._data[key] = (value, self._deadline(ttl))
        return True

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes | None, *, ttl: float | None = None
    ) -> bool:
        """Replace (or, with `value=None`, delete) the value of `key` if it equals `expected`."""
        check_key(key)
        check_ttl(ttl)
        if self._value(key)[0] != expected:
            return False
        if value is None:
            self._data.pop(key, None)
        else:
            self._data[key] = (value, self._deadline(ttl))
        return True

    async def delete(self, key: str) -> None:
        """Remove `key`."""
        check_key(key)
        self._data.pop(key, None)

    async def incr(self, key: str, delta: int = 1) -> int:
        """Add `delta` to the counter `key` (missing = 0), keeping its expiry; return the new value."""
        check_key(key)
        current, deadline = self._value(key)
        new = parse_counter(key, current, delta)
        self._data[key] = (str(new).encode(), deadline)
        return new

    async def append(self, key: str, value: bytes) -> int:
        """Append `value` to the list `key`; return its new length."""
        check_key(key)
        entry = self._data.get(key)
        if entry is None or (entry[1] is not None and entry[1] <= self._clock()):
            self._data[key] = ([value], None)
            return 1
        payload = entry[0]
        if not isinstance(payload, list):
            raise CoordinationError(key, "holds a value, not a list")
        payload.append(value)
        return len(payload)

    async def items(self, key: str) -> list[bytes]:
        """Return a copy of the list `key` (empty if missing)."""
        check_key(key)
        entry = self._live(key)
        if entry is None:
            return []
        payload = entry[0]
        if not isinstance(payload, list):
            raise CoordinationError(key, "holds a value, not a list")
        return list(payload)

    # ------------------------------------------------------------------ locks

    async def acquire_lock(self, key: str, holder: str, ttl: float) -> int | None:
        """Take the lock if free, expired or ours; return a new fencing token, or None."""
        check_lock_key(key)
        check_ttl(ttl)
        now = self._clock()
        grant = self._locks.get(key)
        if grant is not None and grant[2] > now and grant[0] != holder:
            return None
        self._token += 1
        self._locks[key] = (holder, self._token, now + ttl)
        return self._token

    async def renew_lock(self, key: str, holder: str, token: int, ttl: float) -> bool:
        """Extend the lock if its latest grant is `(holder, token)`."""
        check_lock_key(key)
        check_ttl(ttl)
        grant = self._locks.get(key)
        if grant is None or grant[0] != holder or grant[1] != token:
            return False
        self._locks[key] = (holder, token, self._clock() + ttl)
        return True

    async def release_lock(self, key: str, holder: str, token: int) -> bool:
        """Free the lock if its latest grant is `(holder, token)`."""
        check_lock_key(key)
        grant = self._locks.get(key)
        if grant is None or grant[0] != holder or grant[1] != token:
            return False
        del self._locks[key]
        return True

    async def lock_holder(self, key: str) -> LockInfo | None:
        """Return the live holder of the lock, or None."""
        check_key(key)
        grant = self._locks.get(key)
        if grant is None or grant[2] <= self._clock():
            return None
        return LockInfo(holder=grant[0], token=grant[1], expires=grant[2])

    # ------------------------------------------------------------------ leadership, lifecycle

    async def is_leader(self) -> bool:
        """Always True: one process is the only node."""
        return True

    async def aclose(self) -> None:
        """Nothing to release; the store keeps working."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
