"""`DomainQueues`: leased requests parked per domain until their domain can start one (no head-of-line).

A download worker takes a request only when its domain admits a start now. The requests of a busy domain
(all slots taken), a spaced one (delay, slow-down) or a blocked one (`Retry-After`) wait here, per domain
and highest priority first, and a worker serves the domains that can start one, round-robin. Synchronous
and I/O-free: `DomainFeeder` does the leasing, the waking and the handing back that it decides.

States of a domain that holds parked requests:

- *ready*: in the round-robin ring; a worker asks the limiter (`try_acquire`) when it comes to it;
- *full*: all its slots are taken; ready again when one is given back (`released`);
- *timed*: its next start (or a full job-wide gate's next try) is `ready_at`; ready again then (`due`);
- *blocked*: its next start is further away than the horizon: its requests go back to the queue with a
  delay until then (`returns`), and so does every request of it that comes meanwhile.

Bounds: at most `total_cap` requests parked in all; per domain, what it is expected to start within
`LOOKAHEAD` seconds (from how long its slots are held, `DomainPace`: at least twice its concurrency, at
most `domain_cap`); none expected to start later than `horizon` seconds from now or parked longer than
`max_park` seconds. Beyond them a request goes back to the queue with a delay matching when its domain is
expected to take it (`returns`). A request
already retried (attempt > 1) is not sent back for the caps (handing it back costs it an attempt), only
for the horizon and `max_park`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from typing import TYPE_CHECKING, Generic, TypeVar

from ...download._gate_limiter import POLL_MAX, POLL_MIN
from ._domain_pace import FULL, IDLE, READY, TIMED, DomainPace, DomainRecord

if TYPE_CHECKING:
    from collections.abc import Callable

    from ...download._permit import DomainAdmission, Permit
    from ...queue import Delivery

__all__ = ("DomainQueues", "Parked")

T = TypeVar("T")

_FORGET = 60.0  # seconds an idle domain's record (its average) is kept


class Parked(Generic[T]):
    """A leased request waiting for its domain: the delivery, its domain and what the stage prepared."""

    __slots__ = ("delivery", "domain", "prepared", "seq", "since")

    def __init__(self, delivery: Delivery, domain: str, prepared: T) -> None:
        self.delivery = delivery
        self.domain = domain
        self.prepared = prepared
        self.seq = 0
        self.since = 0.0

    def key(self) -> tuple[int, int]:
        return -self.delivery.priority, self.seq


class DomainQueues(Generic[T]):
    """Parked requests per domain, the ring of domains that may start one, and their timers.

    Args:
        limiter: Hands out the domains' slots without waiting.
        total_cap: Most requests parked at once, in all.
        domain_cap: Most requests parked at once for one domain (a fast one; a slow one parks fewer).
        horizon: A domain whose next start is further away (seconds) is blocked: its requests go back.
        max_park: Seconds a request may stay parked (well under the queue's visibility timeout).
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        limiter: DomainAdmission,
        *,
        total_cap: int,
        domain_cap: int,
        horizon: float,
        max_park: float,
        clock: Callable[[], float],
    ) -> None:
        self._limiter = limiter
        self._pace = DomainPace(limiter, domain_cap)
        self.total_cap = total_cap
        self.horizon = horizon
        self.max_park = max_park
        self._clock = clock
        self._domains: dict[str, DomainRecord[T]] = {}
        self._ring: deque[DomainRecord[T]] = deque()
        self._busy: set[DomainRecord[T]] = set()  # domains that parked requests (some may have none left)
        self._timers: list[tuple[float, int, DomainRecord[T]]] = []
        self._reserved: list[tuple[float, int, Parked[T], Permit]] = []
        self._seq = itertools.count(1)  # 0: not parked yet
        self.parked = 0
        """Requests parked (reserved ones included)."""
        self.returns: deque[tuple[Parked[T], float, str]] = deque()
        """Requests to hand back to the queue: (request, delay in seconds, reason); the caller sends them."""
        self.fruitful = False
        """Set when a request of a domain not parking could start at once: leasing found new work."""
        self.on_timer: Callable[[float], None] | None = None
        """Called with a new deadline (monotonic seconds) whenever one is set."""

    # ------------------------------------------------------------------ taking work

    def offer(self, entry: Parked[T]) -> Permit | None:
        """A permit to start `entry` now, or None: it is parked (or in `returns`). O(1) for a free domain."""
        rec = self._domains.get(entry.domain)
        if rec is not None and rec.blocked_until and rec.blocked_until <= self._clock():
            rec.blocked_until = 0.0
        if rec is None or not (rec.entries or rec.blocked_until):
            got = self._limiter.try_acquire(entry.domain)
            if not isinstance(got, float):
                if rec is None:
                    self.fruitful = True
                return got
            if rec is None:
                rec = self._record(entry.domain)
            self._wait(rec, got)
        self._park(rec, entry)
        return None

    def take(self) -> tuple[Parked[T], Permit] | None:
        """A parked request whose domain grants a start now, with its permit; round-robin over domains."""
        if self._reserved and self._reserved[0][0] <= self._clock():
            _, _, entry, permit = heapq.heappop(self._reserved)
            self.parked -= 1
            return entry, permit
        ring = self._ring
        while ring:
            rec = ring.popleft()
            rec.in_ring = False
            if rec.state != READY or not rec.entries:
                continue
            got = self._limiter.try_acquire(rec.name)
            if isinstance(got, float):
                self._wait(rec, got)
                continue
            _, entry = heapq.heappop(rec.entries)
            self.parked -= 1
            if rec.entries:
                self._to_ring(rec)  # at the back: the other domains come first
            else:
                rec.state = IDLE
            return entry, got
        return None

    def has_ready(self) -> bool:
        """Whether a domain may start a parked request now (a worker would take it)."""
        return bool(self._ring) or bool(self._reserved and self._reserved[0][0] <= self._clock())

    def hungry(self) -> int:
        """Requests wanted to keep the busy domains fed: those with less than half their cap parked."""
        need = 0
        now = self._clock()
        for rec in list(self._busy):
            if not rec.entries:
                self._busy.discard(rec)
                continue
            cap = self._pace.pace(rec, now)[1]
            if 2 * len(rec.entries) < cap:
                need += cap - len(rec.entries)
        return need

    # ------------------------------------------------------------------ events

    def released(self, permit: Permit) -> bool:
        """A slot of `permit.domain` was given back; True when that made the domain ready (wake a worker)."""
        rec = self._domains.get(permit.domain)
        if rec is None:  # a domain that never parked: nothing to wake, nothing to measure
            return False
        now = self._clock()
        held = max(0.0, now - permit.acquired)
        self._pace.held(rec, held)
        rec.used = now
        if rec.entries and (rec.state == FULL or (rec.state == TIMED and rec.poll)):
            self._to_ring(rec)
            return True
        return False

    def refused(self, entry: Parked[T], retry: float) -> None:
        """The job-wide gate refused `entry`'s domain: park it again, ask after `retry` seconds at most."""
        rec = self._domains.get(entry.domain) or self._record(entry.domain)
        now = self._clock()
        if not entry.seq:  # it had not been parked yet
            entry.seq, entry.since = next(self._seq), now
        heapq.heappush(rec.entries, (entry.key(), entry))
        self.parked += 1
        self._busy.add(rec)
        rec.poll = min(POLL_MAX, rec.poll * 2) if rec.poll else POLL_MIN
        self._set_timer(rec, now + min(retry, rec.poll))

    def admitted(self, domain: str) -> None:
        """The job-wide gate admitted a request of `domain`: stop polling it."""
        rec = self._domains.get(domain)
        if rec is not None:
            rec.poll = 0.0

    def reserve(self, entry: Parked[T], permit: Permit, wait: float) -> None:
        """Hold `entry` with its admitted `permit` until the start the gate reserved, `wait` seconds away."""
        due = self._clock() + wait
        heapq.heappush(self._reserved, (due, next(self._seq), entry, permit))
        self.parked += 1
        if self.on_timer is not None:
            self.on_timer(due)

    def due(self) -> int:
        """Make the domains whose time has come ready; how many became ready (reserved starts included)."""
        now = self._clock()
        woken = 0
        timers = self._timers
        while timers and timers[0][0] <= now:
            at, _, rec = heapq.heappop(timers)
            if rec.state == TIMED and rec.ready_at == at and rec.entries:
                self._to_ring(rec)
                woken += 1
        return woken + sum(1 for due, *_ in self._reserved if due <= now)

    def next_deadline(self) -> float:
        """The earliest time a timed domain or a reserved start comes due (`math.inf`: none)."""
        first = self._timers[0][0] if self._timers else math.inf
        return min(first, self._reserved[0][0]) if self._reserved else first

    # ------------------------------------------------------------------ bounds

    def sweep(self) -> None:
        """Send back the requests parked longer than `max_park`; forget domains idle for a while."""
        now = self._clock()
        for name, rec in list(self._domains.items()):
            stale = [item for item in rec.entries if now - item[1].since > self.max_park]
            if stale:
                rec.entries = [item for item in rec.entries if now - item[1].since <= self.max_park]
                heapq.heapify(rec.entries)
                self.parked -= len(stale)
                for index, (_, entry) in enumerate(sorted(stale, key=lambda item: item[0])):
                    self.returns.append((entry, self._pace.expected(rec, index, now), "parked too long"))
                if not rec.entries:
                    rec.state = IDLE
            if not rec.entries and rec.blocked_until <= now and now - rec.used > _FORGET:
                del self._domains[name]
                self._busy.discard(rec)

    def evict(self, count: int) -> None:
        """Make room for `count` requests: send back the last first-attempt ones of the largest domain."""
        recs = sorted(self._domains.values(), key=lambda rec: len(rec.entries), reverse=True)
        now = self._clock()
        for rec in recs:
            if count <= 0 or not rec.entries:
                return
            rec.entries.sort(key=lambda item: item[0])  # a sorted list is a heap
            keep: list[tuple[tuple[int, int], Parked[T]]] = []
            gone: list[tuple[tuple[int, int], Parked[T]]] = []
            for item in reversed(rec.entries):
                (gone if count > len(gone) and item[1].delivery.attempt == 1 else keep).append(item)
            rec.entries = keep[::-1]
            self.parked -= len(gone)
            count -= len(gone)
            for index, (_, entry) in enumerate(reversed(gone)):
                delay = self._pace.expected(rec, len(rec.entries) + index, now)
                self.returns.append((entry, delay, "too many requests parked"))
            if not rec.entries:
                rec.state = IDLE

    def drain(self) -> tuple[list[Parked[T]], list[Permit]]:
        """Take out every parked request (and the permits of the reserved ones), e.g. when the stage stops."""
        entries = [entry for rec in self._domains.values() for _, entry in rec.entries]
        entries += [entry for _, _, entry, _ in self._reserved]
        permits = [permit for *_, permit in self._reserved]
        self._domains.clear()
        self._ring.clear()
        self._busy.clear()
        self._timers.clear()
        self._reserved.clear()
        self.parked = 0
        return entries, permits

    # ------------------------------------------------------------------ internals

    def _record(self, name: str) -> DomainRecord[T]:
        rec = self._domains[name] = DomainRecord(name, self._clock())
        return rec

    def _park(self, rec: DomainRecord[T], entry: Parked[T]) -> None:
        now = self._clock()
        if rec.blocked_until:
            if rec.blocked_until > now:
                delay = self._pace.backlog(rec, rec.blocked_until - now, now)
                self.returns.append((entry, delay, "domain blocked"))
                return
            rec.blocked_until = 0.0
        position = len(rec.entries)
        if entry.delivery.attempt == 1:
            over = position >= self._pace.pace(rec, now)[1] or self.parked >= self.total_cap
            expected = self._pace.expected(rec, position, now)
            if over or expected > self.horizon:
                self.returns.append((entry, self._pace.backlog(rec, expected, now), "domain busy"))
                return
        entry.seq = next(self._seq)
        entry.since = now
        heapq.heappush(rec.entries, (entry.key(), entry))
        self.parked += 1
        self._busy.add(rec)
        if rec.state == IDLE:
            self._to_ring(rec)

    def _wait(self, rec: DomainRecord[T], wait: float) -> None:
        """The limiter refused `rec`: full (`inf`), timed or, beyond the horizon, blocked."""
        if wait == math.inf:
            rec.state = FULL
            return
        now = self._clock()
        if wait <= self.horizon:
            self._set_timer(rec, now + wait)
            return
        rec.blocked_until = now + wait
        entries = sorted(rec.entries, key=lambda item: item[0])
        rec.entries = []
        rec.state = IDLE
        self.parked -= len(entries)
        for _, entry in entries:
            self.returns.append((entry, self._pace.backlog(rec, wait, now), "domain blocked"))

    def _set_timer(self, rec: DomainRecord[T], at: float) -> None:
        rec.state = TIMED
        rec.ready_at = at
        heapq.heappush(self._timers, (at, next(self._seq), rec))
        if self.on_timer is not None:
            self.on_timer(at)

    def _to_ring(self, rec: DomainRecord[T]) -> None:
        rec.state = READY
        if not rec.in_ring:
            rec.in_ring = True
            self._ring.append(rec)
