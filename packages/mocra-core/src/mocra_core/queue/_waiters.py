"""`Waiters`: consumers blocked in `consume` on one topic, woken one per ready message."""

from __future__ import annotations

import itertools
from collections import deque
from typing import TYPE_CHECKING, TypeVar

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("POLL_INTERVAL", "Waiters", "new_lease_token")

T = TypeVar("T")

POLL_INTERVAL = 0.05
"""Seconds between checks for due delayed messages and expired leases while a consumer waits.

The clock is injectable (tests), so its readings cannot be turned into sleeps; one waiting consumer per
topic (the *keeper*) re-checks at this interval, or sooner when the clock says something is due sooner.
"""

new_lease_token: Callable[[], int] = itertools.count(1).__next__
"""A process-wide unique lease token, so a delivery of one queue never matches a lease of another."""


class Waiters:
    """The consumers waiting on one topic, in arrival order.

    `notify(n)` wakes the `n` longest-waiting consumers (not all of them: no thundering herd when many
    workers idle on one topic). A consumer woken and then cancelled passes its wakeup on. One waiter at a
    time keeps the clock (polls for due delayed messages and expired leases); `nudge` makes sure one does
    once something time-dependent exists.
    """

    __slots__ = ("_events", "_keeper")

    def __init__(self) -> None:
        self._events: deque[anyio.Event] = deque()
        self._keeper = False

    def __len__(self) -> int:
        return len(self._events)

    def notify(self, n: int = 1) -> None:
        """Wake up to `n` waiting consumers."""
        events = self._events
        while n > 0 and events:
            events.popleft().set()
            n -= 1

    def notify_all(self) -> None:
        """Wake every waiting consumer (used on close)."""
        self.notify(len(self._events))

    def nudge(self) -> None:
        """Something will become ready by time alone: wake a waiter to keep the clock if none does."""
        if not self._keeper and self._events:
            self.notify(1)

    async def wait_for(
        self, take: Callable[[], list[T]], due_in: Callable[[], float | None], wait: float
    ) -> list[T]:
        """Wait until `take()` returns something, or `wait` seconds pass (then return `[]`).

        Args:
            take: Leases what is ready now (may raise, e.g. when the queue was closed meanwhile).
            due_in: Seconds until a delayed message or a lease may be due by the backend's clock, `None`
                when nothing is time-dependent.
            wait: Seconds to wait at most, measured by the event loop's clock.
        """
        deadline = anyio.current_time() + wait
        try:
            while True:
                remaining = deadline - anyio.current_time()
                if remaining <= 0:
                    return []
                await self._wait(remaining, due_in())
                found = take()
                if found:
                    return found
        finally:
            if due_in() is not None:
                self.nudge()  # we may have kept the clock: hand it on

    async def _wait(self, seconds: float, due_in: float | None) -> None:
        keeper = due_in is not None and not self._keeper
        if keeper:
            self._keeper = True
            seconds = min(seconds, POLL_INTERVAL, max(due_in or 0.0, 0.001))
        event = anyio.Event()
        self._events.append(event)
        try:
            with anyio.move_on_after(seconds):
                await event.wait()
        except BaseException:
            if event.is_set():
                self.notify(1)  # woken, then cancelled: pass the wakeup on
            raise
        finally:
            if keeper:
                self._keeper = False
            if not event.is_set():
                self._events.remove(event)
