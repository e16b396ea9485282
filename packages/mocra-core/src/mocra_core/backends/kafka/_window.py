"""`Window`: what one `KafkaQueue` group member has fetched and not finished, and how it leases from it.

Ready messages wait in one heap per lane (highest lane first, then by `created`), messages of a busy key
are parked per key, delayed ones wait in a heap by due time, leases in a heap by deadline. Leasing is
pure bookkeeping (no I/O); `Reader` (`_reader.py`) fills the window and does the I/O.

Each assigned partition (`Part`) keeps its records by offset until they are done, so its committed
offset (`Part.mark`) is its oldest record not done: commits only move past a contiguous run of done
records.
"""

from __future__ import annotations

import bisect
import itertools
import time
from heapq import heappop, heappush
from typing import TYPE_CHECKING

import anyio

from ...queue._delivery import Delivery
from ...queue._waiters import Waiters, new_lease_token

if TYPE_CHECKING:
    from ...queue._envelope import Envelope
    from ._driver import Consumer, TopicPartition
    from ._state import State

__all__ = ("PREFETCH", "Held", "Part", "Window")

PREFETCH = 1000  # messages one partition holds (ready, parked, leased) before its fetching pauses

_seq = itertools.count()


class Part:
    """One assigned partition: its records not done yet, by offset (oldest first)."""

    __slots__ = (
        "committed",
        "delayed",
        "dirty",
        "dropped",
        "inherited",
        "lane",
        "live",
        "lost",
        "next",
        "paused",
        "target",
        "tp",
    )

    def __init__(self, tp: TopicPartition, lane: int, position: int) -> None:
        self.tp = tp
        self.lane = lane
        self.live: dict[int, Held] = {}  # offset -> record not done yet, in offset order
        self.lost: set[int] = set()  # offsets in `live` leased by a member that left without finishing them
        self.next = position  # offset after the last record fetched
        self.committed = position  # last offset committed (or found committed) for the group
        self.target = position  # end offset when the partition was assigned
        self.inherited: State | None = None  # how the previous owner left what is not fetched yet
        self.dirty = False  # leased or finished since its `State` was last written
        self.delayed = 0
        self.paused = False
        self.dropped = False

    def mark(self) -> int:
        """The offset to commit: the oldest record not done, or the fetch position."""
        return next(iter(self.live), self.next)


class Held:
    """A fetched record until it is done (acked, requeued or dead-lettered)."""

    __slots__ = (
        "deadline", "due", "env", "lost", "offset", "part", "payload", "raw", "reason", "seq", "token"
    )  # fmt: skip

    def __init__(self, part: Part, offset: int, env: Envelope, payload: object, due: float) -> None:
        self.part = part
        self.offset = offset
        self.env = env
        self.payload = payload
        self.due = due  # epoch seconds it is held back until (0: none)
        self.seq = next(_seq)
        self.raw = False  # env.body is the raw record value (not an envelope)
        self.reason = ""  # why it is poison
        self.lost = False  # leased by a member that left without finishing it (attempt counted up)
        self.token = 0
        self.deadline = 0.0


class Window:
    """The records one member holds for one topic; see the module docstring."""

    def __init__(
        self, topic: str, *, visibility_timeout: float, published: dict[TopicPartition, int]
    ) -> None:
        self.topic = topic
        self.visibility_timeout = visibility_timeout
        self.parts: dict[TopicPartition, Part] = {}
        self.leases: dict[int, Held] = {}
        self.waiters = Waiters()
        self._published = published  # offsets after what this queue published, by partition
        self._deadlines: list[tuple[float, int]] = []  # heap of (deadline, token), stale entries skipped
        self._ready: dict[int, list[tuple[float, int, Held]]] = {}  # lane -> heap by (created, seq)
        self._ranked: list[int] = []  # lanes, highest first
        self._parked: dict[str, list[tuple[int, float, int, Held]]] = {}
        self._busy: set[str] = set()
        self._delayed: list[tuple[float, int, Held]] = []
        self._consumer: Consumer | None = None
        self._rebalancing = True
        self._closed = False
        self._progress = anyio.Event()
        self._commit_wanted = anyio.Event()

    # ------------------------------------------------------------------ leasing

    def take(self, max_messages: int, cutoff: float | None = None) -> list[Delivery]:
        """Lease up to `max_messages` ready messages, highest lane first; `cutoff` skips any due after it."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._rebalancing:
            return []
        found: list[Delivery] = []
        skipped: list[tuple[float, int, Held]] = []
        deadline = time.monotonic() + self.visibility_timeout
        for lane in self._ranked:
            heap = self._ready[lane]
            while heap and len(found) < max_messages:
                entry = heappop(heap)
                held = entry[2]
                if held.part.dropped:
                    continue
                if cutoff is not None and held.due > cutoff:
                    skipped.append(entry)
                    continue
                key = held.env.key
                if key is not None:
                    if key in self._busy:
                        heappush(self._parked.setdefault(key, []), (-lane, *entry))
                        continue
                    self._busy.add(key)
                found.append(self._lease(held, deadline))
            for entry in skipped:
                heappush(heap, entry)
            skipped.clear()
            if len(found) == max_messages:
                break
        return found

    def _lease(self, held: Held, deadline: float) -> Delivery:
        held.token = token = new_lease_token()
        held.deadline = deadline
        self.leases[token] = held
        heappush(self._deadlines, (deadline, token))
        part = held.part
        part.dirty = True
        self._commit_wanted.set()
        env = held.env
        return Delivery(
            env.id, self.topic, held.payload, env.key, part.lane, env.attempt, env.created, token,
            env.prior_attempts,
        )  # fmt: skip

    def end_lease(self, delivery: Delivery) -> Held | None:
        """End the lease of `delivery` and return its record, or `None` if the delivery is stale."""
        held = self.leases.get(delivery._lease)
        if held is None or held.env.id != delivery.id:
            return None
        del self.leases[delivery._lease]
        return held

    def restore(self, held: Held, deadline: float | None = None) -> None:
        """Give back a lease `end_lease` ended (its requeue failed); its key stays busy."""
        if held.part.dropped:
            return
        if deadline is not None:
            held.deadline = deadline
        self.leases[held.token] = held
        heappush(self._deadlines, (held.deadline, held.token))

    def expired(self) -> list[Held]:
        """End and return the leases whose deadline has passed."""
        now = time.monotonic()
        found: list[Held] = []
        while self._deadlines and self._deadlines[0][0] <= now:
            deadline, token = heappop(self._deadlines)
            held = self.leases.get(token)
            if held is not None and held.deadline == deadline:
                del self.leases[token]
                found.append(held)
        return found

    def finish(self, held: Held, *, leased: bool = True) -> None:
        """`held` is done (acked, requeued or dead-lettered): forget it, free its key, commit."""
        part = held.part
        if not part.dropped and part.live.pop(held.offset, None) is not None:
            part.lost.discard(held.offset)
            part.dirty = True
            self._commit_wanted.set()
            if part.paused and len(part.live) - part.delayed < PREFETCH and self._consumer is not None:
                part.paused = False
                self._consumer.resume(part.tp)
        if leased and held.env.key is not None:
            self._release(held.env.key)

    def _release(self, key: str) -> None:
        self._busy.discard(key)
        parked = self._parked.get(key)
        while parked:
            entry = heappop(parked)
            if not entry[3].part.dropped:
                self._push(entry[3])
                self.waiters.notify(1)
                break
        if not parked:
            self._parked.pop(key, None)

    # ------------------------------------------------------------------ filing

    def file(self, held: Held, now: float) -> bool:
        """Hold a fetched record: delayed if it is due after `now` (epoch seconds); whether it is ready."""
        held.part.live[held.offset] = held
        if held.due > now:
            heappush(self._delayed, (held.due, held.seq, held))
            held.part.delayed += 1
            return False
        self._push(held)
        return True

    def _push(self, held: Held) -> None:
        lane = held.part.lane
        heap = self._ready.get(lane)
        if heap is None:
            heap = self._ready[lane] = []
            bisect.insort(self._ranked, lane, key=lambda x: -x)
        heappush(heap, (held.env.created, held.seq, held))

    def release_due(self) -> None:
        """Make delayed records that are due ready (and wake consumers)."""
        now = time.time()
        moved = 0
        while self._delayed and self._delayed[0][0] <= now:
            held = heappop(self._delayed)[2]
            if not held.part.dropped:
                held.part.delayed -= 1
                self._push(held)
                moved += 1
        if moved:
            self.waiters.notify(moved)

    def next_timer(self, limit: float) -> float:
        """Seconds until a delayed record is due or a lease expires, at most `limit`."""
        seconds = limit
        if self._delayed:
            seconds = min(seconds, self._delayed[0][0] - time.time())
        if self._deadlines:
            seconds = min(seconds, self._deadlines[0][0] - time.monotonic())
        return max(seconds, 0.0)

    def drop(self, part: Part) -> None:
        """Forget a partition this member lost: its records, and its leases (acks of them are stale)."""
        part.dropped = True
        for token, held in [(t, h) for t, h in self.leases.items() if h.part is part]:
            del self.leases[token]
            if held.env.key is not None:
                self._release(held.env.key)

    # ------------------------------------------------------------------ waiting and accounting

    def caught_up(self) -> bool:
        """Whether every partition was fetched past its end when assigned and past this queue's writes."""
        if self._rebalancing:
            return False
        published = self._published
        return all(p.next >= max(p.target, published.get(tp, 0)) for tp, p in self.parts.items())

    async def sync(self, seconds: float) -> None:
        """Wait (up to `seconds`) until `caught_up`: read-your-writes for `consume(wait=0)`."""
        with anyio.move_on_after(seconds):
            while not self.caught_up() and not self._closed:
                await self._progress.wait()
        if self._closed:
            raise anyio.ClosedResourceError

    def progressed(self) -> None:
        """The fetch loop went round: wake `sync`."""
        self._progress.set()
        self._progress = anyio.Event()

    def local_pending(self, tp: TopicPartition, end: int) -> int | None:
        """Messages of a partition this member holds or has not fetched yet, or `None` if not its own."""
        part = self.parts.get(tp)
        if part is None or self._rebalancing:
            return None
        return max(end - part.next, 0) + len(part.live)

    def close(self) -> None:
        """Refuse further calls and wake everything waiting (they raise `ClosedResourceError`)."""
        self._closed = True
        self.waiters.notify_all()
        self._progress.set()
