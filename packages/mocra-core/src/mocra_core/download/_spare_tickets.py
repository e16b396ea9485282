"""`SpareTickets`: finished requests' job-wide tickets that a `GatedLimiter` keeps for its next request."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ._gate import Ticket

__all__ = ("SpareTickets",)


class SpareTickets:
    """Tickets kept per domain for up to `idle` seconds, the newest taken first, the oldest given back first.

    Args:
        idle: Seconds a spare ticket waits for a next request of its domain before it goes back.
        leave: Gives a ticket back to the gate.
    """

    __slots__ = ("_added", "_leave", "_spares", "idle")

    def __init__(self, idle: float, leave: Callable[[Ticket], Awaitable[None]]) -> None:
        self.idle = idle
        self._leave = leave
        self._spares: dict[str, deque[tuple[Ticket, float]]] = {}  # domain -> (ticket, since), oldest first
        self._added = anyio.Event()

    def take(self, key: str) -> Ticket | None:
        """A spare ticket of domain `key`, taken out of the spares, or None."""
        spares = self._spares.get(key)
        if not spares:
            return None
        ticket = spares.pop()[0]  # the newest: the oldest go back first
        if not spares:
            del self._spares[key]
        return ticket

    def keep(self, ticket: Ticket, now: float) -> None:
        """Keep `ticket` (its request finished at `now`) for the next request of its domain."""
        self._spares.setdefault(ticket.domain, deque()).append((ticket, now))
        self._added.set()

    async def return_idle(self) -> None:
        """Give back the spare tickets nobody took within `idle` seconds (until cancelled)."""
        while True:
            while not self._spares:  # a spare may be taken again before this task runs
                self._added = anyio.Event()
                await self._added.wait()
            oldest = min(spares[0][1] for spares in self._spares.values())
            await anyio.sleep(max(0.0, oldest + self.idle - anyio.current_time()))
            now = anyio.current_time()
            for domain, spares in list(self._spares.items()):
                while spares and now - spares[0][1] >= self.idle:
                    await self._leave(spares.popleft()[0])
                if not spares and self._spares.get(domain) is spares:
                    del self._spares[domain]

    def drain(self) -> list[Ticket]:
        """Take out every spare ticket (to give them back)."""
        spares, self._spares = self._spares, {}
        return [ticket for queue in spares.values() for ticket, _ in queue]
