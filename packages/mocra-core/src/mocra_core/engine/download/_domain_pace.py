"""`DomainPace`: how fast a domain that parks requests is expected to start them, and the record it reads.

`DomainQueues` parks per domain what it expects the domain to start within `LOOKAHEAD` seconds, and
sends back what it expects later with a delay matching when the domain should take it. Both come from
here: the seconds between two starts of a domain (its delay, or how long its slots are held over its
concurrency, an average of what it gave back) and from them when a request at a place in line starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from ...download._permit import DomainAdmission
    from ._domain_queues import Parked

__all__ = ("FULL", "IDLE", "LOOKAHEAD", "READY", "TIMED", "DomainPace", "DomainRecord")

T = TypeVar("T")

LOOKAHEAD = 1.0
"""Seconds of a domain's work kept parked at most (within its cap)."""

IDLE, READY, FULL, TIMED = range(4)
"""States of a domain in `DomainQueues` (see its module docstring)."""

_EWMA = 0.2  # weight of the latest slot-holding time in a domain's average
_FIRST_GUESS = 0.05  # seconds a slot is held, guessed before the domain gave one back


class DomainRecord(Generic[T]):
    """What `DomainQueues` keeps of one domain: its parked requests, its state, its timers and pace."""

    __slots__ = (
        "backlog",
        "blocked_until",
        "created",
        "duration",
        "entries",
        "in_ring",
        "name",
        "poll",
        "ready_at",
        "state",
        "used",
    )

    def __init__(self, name: str, now: float) -> None:
        self.name = name
        self.entries: list[tuple[tuple[int, int], Parked[T]]] = []  # a heap, highest priority first
        self.state = IDLE
        self.in_ring = False
        self.ready_at = 0.0
        self.blocked_until = 0.0
        self.backlog = 0.0  # when the requests sent back so far are expected to be taken
        self.poll = 0.0  # the next wait before asking a full job-wide gate again (0: not polling)
        self.duration = 0.0  # average seconds a slot of the domain is held (0: none given back yet)
        self.created = self.used = now


class DomainPace:
    """Expected starts of the domains, from their limits (`limiter.state`) and their records.

    Args:
        limiter: The politeness limiter (its domains' concurrency, delay and `Retry-After` blocks).
        domain_cap: Most requests parked at once for one domain.
    """

    __slots__ = ("_default_limit", "_limiter", "domain_cap")

    def __init__(self, limiter: DomainAdmission, domain_cap: int) -> None:
        self._limiter = limiter
        self._default_limit = limiter.state("").concurrency
        self.domain_cap = domain_cap

    @staticmethod
    def held(rec: DomainRecord[T], seconds: float) -> None:
        """A slot of the domain was held `seconds`: fold it into its average."""
        rec.duration = rec.duration + _EWMA * (seconds - rec.duration) if rec.duration else seconds

    def pace(self, rec: DomainRecord[T], now: float) -> tuple[float, int]:
        """Seconds between two starts the domain is expected to make, and how many requests it may park.

        Optimistic: a slow-down after 429/503 (extra delay, fewer slots) ends with the next success, so
        the domain's configured pace counts. A request sent back too early meets a busy domain again and
        goes back once more; one sent back too late leaves its domain idle.
        """
        state = self._limiter.state(rec.name)
        limit = max(1, state.concurrency, self._default_limit)
        duration = rec.duration or max(
            _FIRST_GUESS, now - rec.created
        )  # its slots are held that long at least
        per_start = max(state.delay, duration / limit)
        least = min(self.domain_cap, max(4, 2 * limit))
        return per_start, max(least, min(self.domain_cap, int(LOOKAHEAD / per_start)))

    def expected(self, rec: DomainRecord[T], position: int, now: float) -> float:
        """Seconds until the domain is expected to start its request at `position` in line."""
        blocked_for = self._limiter.state(rec.name).blocked_for
        start = max(blocked_for, rec.ready_at - now if rec.state == TIMED else 0.0)
        return start + (position + 1) * self.pace(rec, now)[0]

    def backlog(self, rec: DomainRecord[T], delay: float, now: float) -> float:
        """`delay`, or later: requests sent back one after another come back spaced one start apart."""
        at = max(now + delay, rec.backlog + self.pace(rec, now)[0])
        rec.backlog = at
        return at - now
