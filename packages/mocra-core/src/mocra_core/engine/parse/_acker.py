"""`Acker`: acknowledges finished deliveries in batches, off the workers' path.

A parse worker that waited for its own `ack` would spend a broker round trip (on Kafka, a state write
behind the one in flight) idle after every response. Instead it hands the finished delivery here and
takes the next one; one task acks everything handed in meanwhile with one `ack` call. A delivery is
still acknowledged only after its items and follow-ups are out, so a crash before the ack lands only
delivers it again (at least once, as before), and it counts as pending until then, so a crawl does not
end with acks outstanding.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from .._transient import TRANSIENT

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from ...queue import Delivery, QueueBackend
    from .._outage import Outage

__all__ = ("Acker",)

logger = logging.getLogger(__name__)

_FLUSH_TIMEOUT = 5.0  # seconds a cancelled acker still tries to ack what it holds


class Acker:
    """Acks deliveries handed to `ack` in batches, one `queue.ack` at a time, from `run`.

    Args:
        queue: Where the deliveries were consumed.
        limit: Deliveries handed in and not yet acked at most; `ack` waits for room beyond it.
        after: Called with each batch once it is acked (e.g. to drop bookkeeping of the deliveries).
        outage: Where an unreachable broker is noted: a batch is then acked again until the broker
            answers; once the outage is `over`, batches are dropped (their leases expire and they come back:
            at least once). Without it, a failed ack raises from `run`.

    Example:
        >>> import anyio
        >>> from mocra_core.queue import MemoryQueue
        >>> async def main() -> int:
        ...     queue = MemoryQueue()
        ...     await queue.publish("t", ["a", "b"])
        ...     acker = Acker(queue, limit=8)
        ...     async with anyio.create_task_group() as tg:
        ...         tg.start_soon(acker.run)
        ...         for delivery in await queue.consume("t", group="g", max_messages=2):
        ...             await acker.ack(delivery)
        ...         acker.close()  # run acks what it holds, then returns
        ...     return await queue.pending("t")
        >>> anyio.run(main)
        0
    """

    def __init__(
        self,
        queue: QueueBackend,
        *,
        limit: int,
        after: Callable[[Sequence[Delivery]], Awaitable[None]] | None = None,
        outage: Outage | None = None,
    ) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit!r}")
        self._queue = queue
        self._limit = limit
        self._after = after
        self._outage = outage
        self._waiting: list[Delivery] = []
        self._acking = 0  # deliveries in the `ack` call in flight
        self._wake = anyio.Event()
        self._room = anyio.Event()
        self._closed = False

    def __len__(self) -> int:
        """Deliveries handed in and not yet acked."""
        return len(self._waiting) + self._acking

    async def ack(self, delivery: Delivery) -> None:
        """Have `delivery` acked soon; waits only while `limit` deliveries are outstanding.

        Cancelled while waiting, it still leaves the delivery to be acked (the work is done).
        """
        try:
            while len(self) >= self._limit:
                if self._room.is_set():
                    self._room = anyio.Event()
                await self._room.wait()
        finally:
            self._waiting.append(delivery)
            self._wake.set()

    def close(self) -> None:
        """Take nothing more: `run` acks what it holds, then returns."""
        self._closed = True
        self._wake.set()

    async def run(self) -> None:
        """Ack batches until `close`; a failed ack raises here (as it did in the worker before).

        Cancelled, it still tries (for a few seconds) to ack what it holds: those deliveries are done.
        """
        try:
            while self._waiting or not self._closed:
                if not self._waiting:
                    await self._wake.wait()
                    self._wake = anyio.Event()
                    continue
                await self._ack_waiting()
        finally:
            if self._waiting:
                with anyio.move_on_after(_FLUSH_TIMEOUT, shield=True):
                    await self._ack_waiting()

    async def _ack_waiting(self) -> None:
        batch, self._waiting = self._waiting, []
        self._acking = len(batch)
        try:
            await self._queue.ack(batch)
        except TRANSIENT as exc:
            if self._outage is None:
                self._waiting[:0] = batch
                raise
            if self._outage.over or (self._closed and self._outage.down_for >= _FLUSH_TIMEOUT):
                # the run is stopping: the leases expire and the messages come back
                logger.warning(
                    "%d acks not sent (%s): those messages will be delivered again", len(batch), exc
                )
                return
            self._waiting[:0] = batch
            await anyio.sleep(self._outage.failed(exc, "acking"))
            return
        except BaseException:
            self._waiting[:0] = batch  # not acked: a flush after a cancellation tries again
            raise
        finally:
            self._acking = 0
            self._room.set()
        if self._outage is not None:
            self._outage.recovered()
        if self._after is not None:
            await self._after(batch)
