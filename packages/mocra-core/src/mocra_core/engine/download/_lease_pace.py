"""`LeasePace`: how many requests the `DomainFeeder` leases next, and when leasing pauses.

The feeder asks for as many requests as workers are idle, and only while nothing parked can start, so it
reaches a fast domain's requests queued behind a slow one's. Once more than the parking's capacity was
leased without finding a domain able to start, each further lease waits a pause (doubling, up to
`DISCOVERY_MAX`) — so a crawl of one busy domain does not churn its queue — except to keep busy domains
fed (`DomainQueues.hungry`). Only a start of a domain that parks nothing counts as found work.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._domain_queues import DomainQueues

__all__ = ("DISCOVERY_MAX", "DISCOVERY_MIN", "LeasePace")

DISCOVERY_MIN = 0.005
"""Seconds before a lease that follows one that found only busy domains; doubles each time."""
DISCOVERY_MAX = 1.0
"""Cap on that pause (seconds)."""
_STREAK_CAP = math.ceil(math.log2(DISCOVERY_MAX / DISCOVERY_MIN)) + 1
"""The streak past which the pause no longer grows (kept there: `2 ** streak` would overflow a float)."""


class LeasePace:
    """Decides each lease of the `DomainFeeder` from its parking and its idle workers.

    Args:
        clock: Monotonic seconds.
    """

    __slots__ = ("_clock", "_last_lease", "_last_size", "_scanned", "_streak")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._scanned = 0  # requests leased since one could start at once
        self._last_size = 0  # requests of the last lease
        self._streak = 0  # leases since more than `total_cap` were scanned in vain: the pause doubles
        self._last_lease = -math.inf

    def want(self, queues: DomainQueues[Any], *, waiting: int, unprepared: bool) -> tuple[int, float]:
        """How many requests to lease now, or 0 and until when (at the latest) to wait for a change.

        Args:
            queues: The parking.
            waiting: Workers idle, waiting for a request.
            unprepared: Whether leased requests wait for a worker to prepare them.
        """
        if unprepared:
            return 0, math.inf
        room = queues.total_cap - queues.parked
        if not waiting:  # every worker busy: one in reserve, as `Feeder` holds
            return (1 if room > 0 and not queues.has_ready() else 0), math.inf
        if not queues.parked:
            return waiting, math.inf
        hungry = queues.hungry()
        if hungry:
            return max(1, min(room, hungry)), math.inf
        if self._streak:
            resume = self._last_lease + min(DISCOVERY_MAX, DISCOVERY_MIN * 2 ** (self._streak - 1))
            if self._clock() < resume:
                return 0, resume
        if room < waiting:
            queues.evict(waiting - room)
            if queues.returns:  # the feeder sends them back, then decides again
                return 0, self._clock()
        return max(1, min(waiting, queues.total_cap - queues.parked)), math.inf

    def leased(self, queues: DomainQueues[Any], size: int) -> None:
        """Count the requests leased in vain: past `total_cap` of them, leases pause (see `want`)."""
        if queues.fruitful or not queues.parked:
            self._scanned = self._streak = 0
        else:
            self._scanned += self._last_size
            if self._scanned > queues.total_cap:
                self._streak = min(self._streak + 1, _STREAK_CAP)
        queues.fruitful = False
        self._last_size = size
        self._last_lease = self._clock()
