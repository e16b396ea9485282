"""`LeaseReturns`: what becomes of an `LmdbQueue` lease that ends without an ack, on disk and in memory.

An expired or nacked lease comes back with `attempt + 1` (after its delay), or goes to the DLQ once it
had `max_attempts`; a dead-lettered one goes there at once. Each change is one LMDB write transaction,
then the topic's in-memory state (pending count, busy keys, delayed heap, waiters) follows it.
"""

from __future__ import annotations

from collections import OrderedDict
from heapq import heappop, heappush
from typing import TYPE_CHECKING

from ...queue._waiters import Waiters

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._queue_store import LmdbStore, Txn

__all__ = ("Lease", "LeaseReturns", "TopicState")


class Lease:
    """A message leased from a topic: where it is stored and what its next attempt keeps."""

    __slots__ = ("attempt", "deadline", "id", "key", "lane", "order", "seq")

    def __init__(
        self, seq: int, lane: int, order: int, attempt: int, key: str | None, deadline: float
    ) -> None:
        self.seq = seq
        self.id = str(seq)
        self.lane = lane
        self.order = order
        self.attempt = attempt
        self.key = key
        self.deadline = deadline


class TopicState:
    """A topic's in-memory state beside its records on disk."""

    __slots__ = ("busy", "delayed", "group", "leases", "name", "p", "pending", "waiters")

    def __init__(self, name: str, p: bytes) -> None:
        self.name = name
        self.p = p  # key prefix in every sub-database
        self.pending = 0
        self.group: str | None = None
        self.leases: OrderedDict[int, Lease] = OrderedDict()  # token -> lease, by deadline
        self.busy: set[str] = set()  # keys with a leased message
        self.delayed: list[tuple[float, int]] = []  # heap of (due by `clock`, seq)
        self.waiters = Waiters()


class LeaseReturns:
    """Brings leases back (or to the DLQ) and delayed messages to their lanes when due.

    Args:
        store: The queue's LMDB store.
        visibility_timeout: Seconds a lease lives (named in the reason of an expired one).
        max_attempts: Deliveries of one message before it is dead-lettered.
        clock: Monotonic seconds (delays, lease deadlines).
        wall_clock: Epoch seconds (`failed_at`, stored due times).
    """

    __slots__ = ("_clock", "_store", "_wall_clock", "max_attempts", "visibility_timeout")

    def __init__(
        self,
        store: LmdbStore,
        *,
        visibility_timeout: float,
        max_attempts: int,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
    ) -> None:
        self._store = store
        self.visibility_timeout = visibility_timeout
        self.max_attempts = max_attempts
        self._clock = clock
        self._wall_clock = wall_clock

    def reclaim(self, state: TopicState) -> None:
        """Move due delayed messages to their lanes and expired leases back (or to the DLQ)."""
        now = self._clock()
        due: list[int] = []
        while state.delayed and state.delayed[0][0] <= now:
            due.append(heappop(state.delayed)[1])
        expired: list[Lease] = []
        while state.leases:
            lease = next(iter(state.leases.values()))
            if lease.deadline > now:
                break
            state.leases.popitem(last=False)
            expired.append(lease)
        if not due and not expired:
            return
        reason = f"lease expired (visibility timeout {self.visibility_timeout:g} s)"
        failed_at = self._wall_clock()

        def change(tx: Txn) -> None:
            for seq in due:
                tx.undelay(state.p, seq)
            for lease in expired:
                self._on_disk(tx, state, lease, 0.0, reason, failed_at)

        self._store.write(change)
        state.waiters.notify(len(due))
        for lease in expired:
            self._in_memory(state, lease, 0.0)

    def give_back(self, state: TopicState, lease: Lease, delay: float, reason: str) -> None:
        """`lease` comes back after `delay` seconds with `attempt + 1`, or goes to the DLQ (its last)."""
        failed_at = self._wall_clock()
        self._store.write(lambda tx: self._on_disk(tx, state, lease, delay, reason, failed_at))
        self._in_memory(state, lease, delay)

    def bury(self, state: TopicState, lease: Lease, reason: str) -> None:
        """Move `lease`'s message to the DLQ with `reason`."""

        def change(tx: Txn) -> None:
            tx.unlease(state.p, lease.seq)
            tx.bury(state.p, lease.seq, lease.attempt, reason, failed_at)
            if lease.key is not None:
                tx.release(state.p, lease.key)

        failed_at = self._wall_clock()
        self._store.write(change)
        state.pending -= 1
        if lease.key is not None:
            state.busy.discard(lease.key)
            state.waiters.notify(1)

    def _on_disk(
        self, tx: Txn, state: TopicState, lease: Lease, delay: float, reason: str, failed_at: float
    ) -> None:
        tx.unlease(state.p, lease.seq)
        if lease.attempt >= self.max_attempts:
            reason = f"{reason} on attempt {lease.attempt} of {self.max_attempts}"
            tx.bury(state.p, lease.seq, lease.attempt, reason, failed_at)
        elif delay > 0:
            tx.delay(state.p, lease.seq, failed_at + delay, lease.lane, lease.attempt + 1, lease.key)
        else:
            tx.ready(state.p, lease.seq, lease.lane, lease.order, lease.attempt + 1, lease.key)
        if lease.key is not None:
            tx.release(state.p, lease.key)

    def _in_memory(self, state: TopicState, lease: Lease, delay: float) -> None:
        if lease.attempt >= self.max_attempts:
            state.pending -= 1
        elif delay > 0:
            heappush(state.delayed, (self._clock() + delay, lease.seq))
            state.waiters.nudge()
        else:
            state.waiters.notify(1)
        if lease.key is not None:
            state.busy.discard(lease.key)
            state.waiters.notify(1)  # its next parked message (if any) is ready
