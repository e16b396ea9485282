"""Time as a seam: `SystemClock` for real runs, `ManualClock` for tests that must not sleep."""

from __future__ import annotations

import time
from heapq import heappop, heappush
from typing import Protocol

import anyio
import anyio.lowlevel

__all__ = ("Clock", "ManualClock", "SystemClock")


class Clock(Protocol):
    """Where the engine reads the time and sleeps: backoff, breaker windows, lease expiry and renewal.

    `now()` is epoch seconds: leases stored in a durable store are compared across processes, so a
    monotonic clock (which restarts per boot) would not do. Timeouts are not measured on this clock: they
    are anyio cancel scopes on the event loop's own clock.
    """

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return after `seconds` have passed on this clock."""
        ...


class SystemClock:
    """The real time: `time.time()` and `anyio.sleep`.

    Example:
        >>> SystemClock().now() > 1.7e9
        True
    """

    __slots__ = ()

    def now(self) -> float:
        """Seconds since the epoch."""
        return time.time()

    async def sleep(self, seconds: float) -> None:
        """Sleep on the event loop."""
        await anyio.sleep(seconds)


class ManualClock:
    """A clock that moves only when told to, so tests control windows and expiry without sleeping.

    `sleep` blocks until `advance` (or `set`) moves the time past its deadline.

    Args:
        start: The initial time in seconds.

    Example:
        >>> import anyio
        >>> clock = ManualClock(100.0)
        >>> async def main():
        ...     woke = []
        ...     async def sleeper():
        ...         await clock.sleep(5)
        ...         woke.append(clock.now())
        ...     async with anyio.create_task_group() as tg:
        ...         tg.start_soon(sleeper)
        ...         await anyio.wait_all_tasks_blocked()
        ...         clock.advance(3)  # not yet
        ...         await anyio.wait_all_tasks_blocked()
        ...         clock.advance(3)
        ...     return woke
        >>> anyio.run(main)
        [106.0]
    """

    __slots__ = ("_now", "_seq", "_sleepers")

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._seq = 0
        self._sleepers: list[tuple[float, int, anyio.Event]] = []

    def now(self) -> float:
        """The current manual time."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Wait until the clock has been moved `seconds` forward (returns at once if `seconds <= 0`)."""
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        wake = anyio.Event()
        self._seq += 1
        heappush(self._sleepers, (self._now + seconds, self._seq, wake))
        await wake.wait()

    def advance(self, seconds: float) -> None:
        """Move the time forward by `seconds` and wake every sleeper whose deadline has passed."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back: advance({seconds!r})")
        self.set(self._now + seconds)

    def set(self, now: float) -> None:
        """Move the time to `now` (not backwards) and wake every sleeper whose deadline has passed."""
        if now < self._now:
            raise ValueError(f"a clock cannot go back: {now!r} < {self._now!r}")
        self._now = now
        while self._sleepers and self._sleepers[0][0] <= now:
            heappop(self._sleepers)[2].set()

    @property
    def sleepers(self) -> int:
        """How many `sleep` calls are waiting (cancelled ones included until their deadline passes)."""
        return len(self._sleepers)
