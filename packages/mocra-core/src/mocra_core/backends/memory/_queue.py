"""`MemoryQueue`: the in-process `QueueBackend`; payloads are passed as objects, never copied."""

from __future__ import annotations

import bisect
import time
from collections import OrderedDict, deque
from heapq import heappop, heappush
from itertools import islice
from typing import TYPE_CHECKING

import anyio
from anyio.abc import AsyncResource

from ...queue._checks import check_limits, check_payloads
from ...queue._delivery import DeadLetter, Delivery
from ...queue._inprocess import InProcessQueue
from ...queue._waiters import Waiters, new_lease_token

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ("MemoryQueue",)


class _Message:
    """One message while it lives in the queue; `Delivery` objects are made from it at each lease."""

    __slots__ = ("attempt", "created", "deadline", "id", "key", "order", "payload", "prior", "priority")

    def __init__(
        self, id: str, payload: object, key: str | None, priority: int, created: float, order: int
    ) -> None:
        self.id = id
        self.payload = payload
        self.key = key
        self.priority = priority
        self.created = created
        self.attempt = 1
        self.prior = 0  # attempts used before its last replay
        self.order = order  # place in its lane; renewed whenever it re-enters a lane's tail
        self.deadline = 0.0  # when its current lease expires


class _Lane:
    """Ready messages of one priority: `back` (came back, by old place) is handed out before `fresh`."""

    __slots__ = ("back", "fresh", "priority")

    def __init__(self, priority: int) -> None:
        self.priority = priority
        self.back: list[tuple[int, _Message]] = []
        self.fresh: deque[_Message] = deque()


class _Topic:
    __slots__ = (
        "busy",
        "delayed",
        "dlq",
        "group",
        "lanes",
        "leases",
        "name",
        "parked",
        "pending",
        "ranked",
        "waiters",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.lanes: dict[int, _Lane] = {}
        self.ranked: list[_Lane] = []  # highest priority first
        self.delayed: list[tuple[float, int, _Message]] = []  # heap by due time
        self.leases: OrderedDict[int, _Message] = OrderedDict()  # token -> message, by deadline
        self.busy: set[str] = set()  # keys with a leased message
        self.parked: dict[str, list[tuple[int, int, _Message]]] = {}  # key -> heap of waiting messages
        self.dlq: dict[str, tuple[DeadLetter, _Message]] = {}  # id -> entry, oldest first
        self.pending = 0
        self.group: str | None = None
        self.waiters = Waiters()

    def lane(self, priority: int) -> _Lane:
        lane = self.lanes.get(priority)
        if lane is None:
            if not isinstance(priority, int) or not -(2**63) <= priority < 2**63:
                raise ValueError(f"priority must be a 64-bit int, got {priority!r}")
            lane = self.lanes[priority] = _Lane(priority)
            bisect.insort(self.ranked, lane, key=lambda x: -x.priority)
        return lane


class MemoryQueue(InProcessQueue[_Topic], AsyncResource):
    """A `QueueBackend` in process memory, for single-process crawls and tests.

    Payload objects are handed to consumers as they were published (no serialisation, no copy): do not
    mutate a payload after publishing it. Each operation is O(1) or O(log n); `publish`, `ack`, `nack` and
    `dead_letter` complete without yielding to the event loop, `consume` always yields once.

    Args:
        visibility_timeout: Seconds a delivery may stay unacked before it comes back with `attempt + 1`.
        max_attempts: Deliveries of one message before a nack or an expired lease dead-letters it.
        clock: Monotonic seconds for delays and leases (inject a fake one in tests).
        wall_clock: Epoch seconds for `Delivery.created` and `DeadLetter.failed_at`.

    Example:
        >>> import anyio
        >>> async def main():
        ...     async with MemoryQueue() as queue:
        ...         await queue.publish("fetch", ["https://example.com/"])
        ...         [delivery] = await queue.consume("fetch", group="download")
        ...         await queue.ack([delivery])
        ...         return delivery.payload, delivery.attempt, await queue.pending("fetch")
        >>> anyio.run(main)
        ('https://example.com/', 1, 0)
    """

    def __init__(
        self,
        *,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        check_limits(visibility_timeout, max_attempts)
        self.visibility_timeout = visibility_timeout
        self.max_attempts = max_attempts
        self._clock = clock
        self._wall_clock = wall_clock
        self._topics: dict[str, _Topic] = {}
        self._next = 1  # message ids and lane places
        self._closed = False

    def __repr__(self) -> str:
        return f"<MemoryQueue topics={len(self._topics)}{' closed' if self._closed else ''}>"

    def _topic(self, topic: str) -> _Topic:
        if self._closed:
            raise anyio.ClosedResourceError
        state = self._topics.get(topic)
        if state is None:
            if not isinstance(topic, str) or not topic:
                raise ValueError(f"topic must be a non-empty str, got {topic!r}")
            state = self._topics[topic] = _Topic(topic)
        return state

    async def publish(
        self,
        topic: str,
        payloads: Sequence[object],
        *,
        key: str | None = None,
        priority: int = 0,
        delay: float = 0.0,
    ) -> None:
        """Add `payloads` to `topic`, in order (see `QueueBackend.publish`)."""
        state = self._topic(topic)
        check_payloads(payloads)
        count = len(payloads)
        if not count:
            return
        lane = state.lane(priority)
        if state.delayed:
            self._reclaim(state)  # what is due joins its lane before these messages
        created = self._wall_clock()
        first = self._next
        self._next = first + count
        messages = [_Message(str(i), p, key, priority, created, i) for i, p in enumerate(payloads, first)]
        state.pending += count
        if delay > 0:
            due = self._clock() + delay
            for message in messages:
                heappush(state.delayed, (due, message.order, message))
            state.waiters.nudge()
            return
        lane.fresh.extend(messages)
        state.waiters.notify(count)

    def _take(self, topic: str, max_messages: int) -> list[Delivery]:
        state = self._topic(topic)
        if state.leases or state.delayed:
            self._reclaim(state)
        found: list[Delivery] = []
        busy = state.busy
        deadline = 0.0
        for lane in state.ranked:
            back, fresh = lane.back, lane.fresh
            while back or fresh:
                message = heappop(back)[1] if back else fresh.popleft()
                key = message.key
                if key is not None:
                    if key in busy:  # wait for the key's lease to end
                        heappush(
                            state.parked.setdefault(key, []), (-message.priority, message.order, message)
                        )
                        continue
                    busy.add(key)
                if not deadline:
                    deadline = self._clock() + self.visibility_timeout
                token = new_lease_token()
                message.deadline = deadline
                state.leases[token] = message
                found.append(
                    Delivery(
                        message.id,
                        topic,
                        message.payload,
                        key,
                        message.priority,
                        message.attempt,
                        message.created,
                        token,
                        message.prior,
                    )
                )
                if len(found) == max_messages:
                    state.waiters.nudge()
                    return found
        if found:
            state.waiters.nudge()  # leases expire by time: make sure a waiter keeps the clock
        return found

    def _reclaim(self, state: _Topic) -> None:
        """Move due delayed messages to their lanes and expired leases back (or to the DLQ)."""
        now = self._clock()
        moved = 0
        delayed = state.delayed
        while delayed and delayed[0][0] <= now:
            message = heappop(delayed)[2]
            message.order = self._next
            self._next += 1
            state.lane(message.priority).fresh.append(message)
            moved += 1
        leases = state.leases
        while leases:
            message = next(iter(leases.values()))
            if message.deadline > now:
                break
            leases.popitem(last=False)
            reason = f"lease expired (visibility timeout {self.visibility_timeout:g} s)"
            self._give_back(state, message, 0.0, reason)
            moved += 1
        if moved:
            state.waiters.notify(moved)

    def _give_back(self, state: _Topic, message: _Message, delay: float, reason: str) -> None:
        """A lease ended without an ack: ready again (at its old place) or delayed, or dead-lettered."""
        if message.attempt >= self.max_attempts:
            self._bury(state, message, f"{reason} on attempt {message.attempt} of {self.max_attempts}")
            return
        message.attempt += 1
        if delay > 0:
            heappush(state.delayed, (self._clock() + delay, message.order, message))
            state.waiters.nudge()
        else:
            heappush(state.lane(message.priority).back, (message.order, message))
            state.waiters.notify(1)
        if message.key is not None:
            self._release(state, message.key)

    def _bury(self, state: _Topic, message: _Message, reason: str) -> None:
        state.pending -= 1
        letter = DeadLetter(
            message.id,
            state.name,
            message.payload,
            message.key,
            message.attempt,
            reason,
            self._wall_clock(),
            message.priority,
            message.created,
        )
        state.dlq[message.id] = (letter, message)
        if message.key is not None:
            self._release(state, message.key)

    def _release(self, state: _Topic, key: str) -> None:
        """The lease of `key` ended: its next waiting message goes back to its lane."""
        state.busy.discard(key)
        parked = state.parked.get(key)
        if parked:
            message = heappop(parked)[2]
            if not parked:
                del state.parked[key]
            heappush(state.lane(message.priority).back, (message.order, message))
            state.waiters.notify(1)

    def _end_lease(self, delivery: Delivery) -> tuple[_Topic, _Message] | None:
        state = self._topic(delivery.topic)
        message = state.leases.get(delivery._lease)
        if message is None or message.id != delivery.id:
            return None  # stale: acked already, or expired and handed out again
        del state.leases[delivery._lease]
        return state, message

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Finish `deliveries`; stale ones are ignored (see `QueueBackend.ack`)."""
        for delivery in deliveries:
            ended = self._end_lease(delivery)
            if ended is not None:
                state, message = ended
                state.pending -= 1
                if message.key is not None:
                    self._release(state, message.key)

    async def nack(self, delivery: Delivery, *, delay: float = 0.0, reason: str = "") -> None:
        """Hand `delivery` back for a later attempt, or to the DLQ (see `QueueBackend.nack`)."""
        ended = self._end_lease(delivery)
        if ended is not None:
            self._give_back(*ended, delay, reason or "nacked")

    async def dead_letter(self, delivery: Delivery, *, reason: str) -> None:
        """Move `delivery` to its topic's DLQ (see `QueueBackend.dead_letter`)."""
        ended = self._end_lease(delivery)
        if ended is not None:
            state, message = ended
            self._bury(state, message, reason)

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Read up to `limit` dead letters of `topic`, oldest first."""
        entries = islice(self._topic(topic).dlq.values(), max(limit, 0))
        return [letter for letter, _ in entries]

    async def replay(self, topic: str, ids: Sequence[str] | None = None) -> int:
        """Move dead letters of `topic` back to it with the attempt reset (its fence goes on); how many."""
        state = self._topic(topic)
        if state.delayed:
            self._reclaim(state)  # what is due joins its lane before the replayed messages
        dlq = state.dlq
        chosen = list(dlq) if ids is None else [i for i in dict.fromkeys(ids) if i in dlq]
        for id in chosen:
            message = dlq.pop(id)[1]
            message.prior += message.attempt
            message.attempt = 1
            message.order = self._next
            self._next += 1
            state.lane(message.priority).fresh.append(message)
        state.pending += len(chosen)
        state.waiters.notify(len(chosen))
        return len(chosen)

    async def pending(self, topic: str) -> int:
        """Messages of `topic` ready, delayed or leased."""
        return self._topic(topic).pending

    async def aclose(self) -> None:
        """Drop every message and wake waiting consumers, which raise `anyio.ClosedResourceError`."""
        if not self._closed:
            self._closed = True
            for state in self._topics.values():
                state.waiters.notify_all()
            self._topics.clear()
