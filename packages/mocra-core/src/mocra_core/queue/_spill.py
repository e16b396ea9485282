"""`SpillingQueue`: a `MemoryQueue` that moves the overflow of chosen topics to disk (an `LmdbQueue`).

A crawl's request topic (its frontier) can grow to millions of messages; kept as Python objects that is
~850 bytes each. Past `threshold` messages of a spilled topic, new messages go to an `LmdbQueue` in a
temporary directory (~100 bytes of memory each, the rest on disk) and come back from it once the
in-memory part is drained. Everything else stays in memory and is passed without serialising.

Order: while a topic has messages on disk, new ones go to disk too, and memory is consumed first, so
FIFO order per lane holds. Priority across the two parts is approximate: a higher lane on disk waits
until the in-memory part of the topic is empty.

Ids: each part numbers its messages from 1, so the disk part's are shown with the prefix `s:` (a
delivery's and a dead letter's `id`, and what `replay` takes): two messages of a topic never share an id,
and so never a claim (`Fence`).
"""

from __future__ import annotations

import tempfile
import time
from typing import TYPE_CHECKING

import anyio
import msgspec

from ..backends.lmdb._queue import LmdbQueue
from ..backends.memory._queue import MemoryQueue

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._backend import QueueBackend
    from ._codec import Codec
    from ._delivery import DeadLetter, Delivery

__all__ = ("SpillingQueue",)

_POLL = 0.05
_DISK = "s:"  # the id prefix of the disk part's messages


class SpillingQueue:
    """A `QueueBackend` keeping at most `threshold` messages per spilled topic in memory.

    Args:
        codec: Encodes the payloads that go to disk.
        topics: Topics that may spill (others stay in memory whatever their size); `None`: all.
        threshold: Messages of a spilled topic kept in memory before new ones go to disk.
        visibility_timeout: As for `MemoryQueue`.
        max_attempts: As for `MemoryQueue`.
        directory: Where the disk part lives; a temporary directory (removed on close) by default.

    Example:
        >>> import anyio
        >>> from mocra_core.queue import MsgpackCodec
        >>> async def main() -> int:
        ...     async with SpillingQueue(codec=MsgpackCodec(), topics={"fetch"}, threshold=2) as q:
        ...         await q.publish("fetch", [{"n": n} for n in range(5)])
        ...         return q.spilled
        >>> anyio.run(main)
        3
    """

    def __init__(
        self,
        *,
        codec: Codec,
        topics: set[str] | None,
        threshold: int = 100_000,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        directory: str | None = None,
    ) -> None:
        if threshold < 1:
            raise ValueError(f"threshold must be at least 1, got {threshold!r}")
        self._memory = MemoryQueue(visibility_timeout=visibility_timeout, max_attempts=max_attempts)
        self._codec = codec
        self._topics = topics
        self._threshold = threshold
        self._visibility_timeout = visibility_timeout
        self._max_attempts = max_attempts
        self._directory = directory
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._disk: LmdbQueue | None = None
        self.spilled = 0

    def _spills(self, topic: str) -> bool:
        return self._topics is None or topic in self._topics

    async def __aenter__(self) -> SpillingQueue:
        await self._memory.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _open_disk(self) -> LmdbQueue:
        if self._disk is None:
            if self._directory is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="mocra-spill-")
                self._directory = self._tmp.name
            self._disk = LmdbQueue(
                f"{self._directory}/queue",
                codec=self._codec,
                visibility_timeout=self._visibility_timeout,
                max_attempts=self._max_attempts,
            )
        return self._disk

    async def publish(
        self,
        topic: str,
        payloads: Sequence[object],
        *,
        key: str | None = None,
        priority: int = 0,
        delay: float = 0.0,
    ) -> None:
        """Publish to memory, or to disk once the topic holds `threshold` messages in memory."""
        if self._spills(topic) and payloads:
            on_disk = await self._disk.pending(topic) if self._disk is not None else 0
            room = 0 if on_disk else max(0, self._threshold - await self._memory.pending(topic))
            if room < len(payloads):
                head, tail = payloads[:room], payloads[room:]
                if head:
                    await self._memory.publish(topic, head, key=key, priority=priority, delay=delay)
                await self._open_disk().publish(topic, tail, key=key, priority=priority, delay=delay)
                self.spilled += len(tail)
                return
        await self._memory.publish(topic, payloads, key=key, priority=priority, delay=delay)

    async def consume(
        self, topic: str, *, group: str, max_messages: int = 1, wait: float = 1.0
    ) -> Sequence[Delivery]:
        """Lease from memory first, then from disk; waits up to `wait` seconds for either."""
        deadline = time.monotonic() + wait
        while True:
            found = await self._take(topic, group, max_messages)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0:
                return found
            if self._disk is None or not self._spills(topic):
                return await self._memory.consume(
                    topic, group=group, max_messages=max_messages, wait=remaining
                )
            await anyio.sleep(min(_POLL, remaining))

    async def _take(self, topic: str, group: str, max_messages: int) -> Sequence[Delivery]:
        found = await self._memory.consume(topic, group=group, max_messages=max_messages, wait=0)
        if found or self._disk is None or not self._spills(topic):
            return found
        from_disk = await self._disk.consume(topic, group=group, max_messages=max_messages, wait=0)
        return [msgspec.structs.replace(delivery, id=_DISK + delivery.id) for delivery in from_disk]

    def _part(self, delivery: Delivery) -> tuple[QueueBackend, Delivery]:
        """The part `delivery` came from, and the delivery as that part knows it (its own id)."""
        if self._disk is not None and delivery.id.startswith(_DISK):
            return self._disk, msgspec.structs.replace(delivery, id=delivery.id.removeprefix(_DISK))
        return self._memory, delivery

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Acknowledge deliveries of either part."""
        for delivery in deliveries:
            part, own = self._part(delivery)
            await part.ack([own])

    async def nack(self, delivery: Delivery, *, delay: float = 0.0, reason: str = "") -> None:
        """Return a delivery to the part it came from."""
        part, own = self._part(delivery)
        await part.nack(own, delay=delay, reason=reason)

    async def dead_letter(self, delivery: Delivery, *, reason: str) -> None:
        """Dead-letter a delivery in the part it came from."""
        part, own = self._part(delivery)
        await part.dead_letter(own, reason=reason)

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Dead letters of both parts, memory first (the disk part's ids prefixed `s:`)."""
        found = list(await self._memory.dead_letters(topic, limit=limit))
        if self._disk is not None and len(found) < limit:
            on_disk = await self._disk.dead_letters(topic, limit=limit - len(found))
            found.extend(msgspec.structs.replace(letter, id=_DISK + letter.id) for letter in on_disk)
        return found

    async def replay(self, topic: str, ids: Sequence[str] | None = None) -> int:
        """Replay dead letters of both parts (`ids` as `dead_letters` shows them; `None`: all)."""
        if ids is None:
            memory_ids: list[str] | None = None
            disk_ids: list[str] | None = None
        else:
            memory_ids = [i for i in ids if not i.startswith(_DISK)]
            disk_ids = [i.removeprefix(_DISK) for i in ids if i.startswith(_DISK)]
        moved = await self._memory.replay(topic, memory_ids) if memory_ids != [] else 0
        if self._disk is not None and disk_ids != []:
            moved += await self._disk.replay(topic, disk_ids)
        return moved

    async def pending(self, topic: str) -> int:
        """Messages pending in both parts."""
        total = await self._memory.pending(topic)
        if self._disk is not None:
            total += await self._disk.pending(topic)
        return total

    async def aclose(self) -> None:
        """Close both parts and remove the temporary directory."""
        await self._memory.aclose()
        if self._disk is not None:
            await self._disk.aclose()
            self._disk = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __repr__(self) -> str:
        return f"<SpillingQueue threshold={self._threshold} spilled={self.spilled}>"
