"""`ActivityQueue`: a queue that counts this process's writes, so the idle check reads a consistent snapshot.

The run ends when every topic's `pending` is 0, but `pending` is read one topic at a time, and work moves
between topics while it is read: a parse worker publishes a listing's follow-up requests and then acks the
response, so a check that reads the request topic just before the publish and the response topic just
after the ack sees nothing anywhere while the crawl goes on. On a broker each read is a round trip, which
widens that window to milliseconds (a Kafka crawl ended after 59 of 1,000 listing pages).

Every message a worker handles sits in some topic (ready, delayed or leased) until the handler's own
publishes are done and it acks, so the counts describe a real moment whenever no write of this process
ran while they were read: `quiet()` before and `unchanged(mark)` after the reads tell exactly that.
Other workers' writes are not seen here; the engine reads twice, some time apart, for them.

`settled`, if given, is called after every ack, nack and dead-letter that worked: a job dir saves its
counts there, so they stay in step with the work its queue holds as done. `dead_lettered`, if given, is
called for every message this process sends to a dead-letter queue, whether a stage asked for it
(`dead_letter`) or the queue moved it there because its attempts ran out (`nack` at `max_attempts`): the
one place the run's dead-letter count is kept, so it agrees with the queue. `open_work`, if given, hears of
every message queued and every one settled (acknowledged or dead-lettered), for the generations' drain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType
    from typing import Self

    from ..queue import DeadLetter, Delivery, QueueBackend
    from ._open_work import OpenWork

__all__ = ("ActivityQueue",)


class ActivityQueue:
    """Wraps a `QueueBackend`; counts the writes in flight and the writes done (publish, ack, nack, DLQ).

    Args:
        inner: The queue.
        settled: Called after each ack, nack and dead-letter that worked (not after one that raised).
        dead_lettered: Called after each message this process sent to a dead-letter queue.
        max_attempts: The queue's `max_attempts`: a `nack` of a delivery on that attempt dead-letters it.
        open_work: Counts the messages of each generation queued and settled (`OpenWork`).

    Example:
        >>> import anyio
        >>> from mocra_core.queue import MemoryQueue
        >>> async def main() -> tuple[bool, bool]:
        ...     async with ActivityQueue(MemoryQueue()) as queue:
        ...         mark = queue.quiet()
        ...         await queue.publish("t", ["x"])
        ...         return mark is not None, queue.unchanged(mark)
        >>> anyio.run(main)
        (True, False)
    """

    __slots__ = ("_busy", "_dead_lettered", "_done", "_max_attempts", "_open", "_settled", "inner")

    def __init__(
        self,
        inner: QueueBackend,
        *,
        settled: Callable[[], None] | None = None,
        dead_lettered: Callable[[], None] | None = None,
        max_attempts: int | None = None,
        open_work: OpenWork | None = None,
    ) -> None:
        self.inner = inner
        self._open = open_work
        self._busy = 0
        self._done = 0
        self._settled = settled
        self._dead_lettered = dead_lettered
        self._max_attempts = max_attempts

    def quiet(self) -> int | None:
        """A mark to pass to `unchanged`, or None while a write of this process is in flight."""
        return None if self._busy else self._done

    def unchanged(self, mark: int) -> bool:
        """True when no write of this process started or ended since `quiet` returned `mark`."""
        return not self._busy and self._done == mark

    async def publish(
        self,
        topic: str,
        payloads: Sequence[object],
        *,
        key: str | None = None,
        priority: int = 0,
        delay: float = 0.0,
    ) -> None:
        """`QueueBackend.publish`, counted."""
        self._busy += 1
        try:
            await self.inner.publish(topic, payloads, key=key, priority=priority, delay=delay)
        finally:
            self._busy -= 1
            self._done += 1
        if self._open is not None:
            self._open.published(payloads)

    async def consume(
        self, topic: str, *, group: str, max_messages: int = 1, wait: float = 1.0
    ) -> Sequence[Delivery]:
        """`QueueBackend.consume` (a lease moves nothing out of `pending`: not counted)."""
        return await self.inner.consume(topic, group=group, max_messages=max_messages, wait=wait)

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """`QueueBackend.ack`, counted."""
        self._busy += 1
        try:
            await self.inner.ack(deliveries)
        finally:
            self._busy -= 1
            self._done += 1
        if self._open is not None:
            self._open.settled(deliveries)
        if self._settled is not None:
            self._settled()

    async def nack(self, delivery: Delivery, *, delay: float = 0.0, reason: str = "") -> None:
        """`QueueBackend.nack`, counted."""
        self._busy += 1
        try:
            await self.inner.nack(delivery, delay=delay, reason=reason)
        finally:
            self._busy -= 1
            self._done += 1
        limit = self._max_attempts
        if limit is not None and delivery.attempt >= limit:
            if self._dead_lettered is not None:
                self._dead_lettered()
            if self._open is not None:
                self._open.settled((delivery,))
        if self._settled is not None:
            self._settled()

    async def dead_letter(self, delivery: Delivery, *, reason: str) -> None:
        """`QueueBackend.dead_letter`, counted."""
        self._busy += 1
        try:
            await self.inner.dead_letter(delivery, reason=reason)
        finally:
            self._busy -= 1
            self._done += 1
        if self._open is not None:
            self._open.settled((delivery,))
        if self._dead_lettered is not None:
            self._dead_lettered()
        if self._settled is not None:
            self._settled()

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """`QueueBackend.dead_letters`."""
        return await self.inner.dead_letters(topic, limit=limit)

    async def replay(self, topic: str, ids: Sequence[str] | None = None) -> int:
        """`QueueBackend.replay`, counted."""
        self._busy += 1
        try:
            return await self.inner.replay(topic, ids)
        finally:
            self._busy -= 1
            self._done += 1

    async def pending(self, topic: str) -> int:
        """`QueueBackend.pending`."""
        return await self.inner.pending(topic)

    async def aclose(self) -> None:
        """Close the wrapped backend."""
        await self.inner.aclose()

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.inner.__aexit__(exc_type, exc, tb)

    def __repr__(self) -> str:
        return f"<ActivityQueue {self.inner!r}>"
