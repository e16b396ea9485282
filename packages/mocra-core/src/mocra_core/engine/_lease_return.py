"""`LeaseReturn`: hands a stage's leased deliveries back to their queue, one with a delay or all on stop.

Both feeders use it: `Feeder` for what it leased that no worker took, `DomainFeeder` for the requests it
parks (sent back while it runs when their domain cannot take them, and all at once when it stops).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ._transient import TRANSIENT

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from ..queue import Delivery, QueueBackend

__all__ = ("STOP_TIMEOUT", "LeaseReturn")

STOP_TIMEOUT = 5.0
"""Seconds that sending everything back on stop may take (shielded from cancellation)."""


class LeaseReturn:
    """Sends leased deliveries of one topic back to the queue.

    Args:
        queue: The queue the deliveries were leased from.
        topic: Their topic (a first attempt is published to it again, see `republish_first`).
        nack: How a delivery is nacked: `(delivery, delay, reason)`; default the queue's `nack`.
        republish_first: Send a first attempt back by publishing it again with the delay, then acking it
            (publish first: a crash in between duplicates it, never loses it), so it comes back as a first
            attempt and spends no attempt; a retried one is nacked.
    """

    def __init__(
        self,
        queue: QueueBackend,
        topic: str,
        *,
        nack: Callable[[Delivery, float, str], Awaitable[None]] | None = None,
        republish_first: bool = False,
    ) -> None:
        self._queue = queue
        self._topic = topic
        self._nack = nack if nack is not None else self._queue_nack
        self._republish_first = republish_first
        self._sending: dict[int, Delivery] = {}  # being sent back right now

    async def send(self, delivery: Delivery, delay: float, reason: str) -> None:
        """Send `delivery` back, to be leased again after `delay` seconds.

        Interrupted (cancelled, or the broker out of reach), it may have been republished already:
        `send_all` then only nacks it.
        """
        self._sending[id(delivery)] = delivery
        try:
            if self._republish_first and delivery.attempt == 1:
                await self._queue.publish(
                    self._topic, [delivery.payload], key=delivery.key, priority=delivery.priority, delay=delay
                )
                await self._queue.ack([delivery])
            else:
                await self._nack(delivery, delay, reason)
        finally:
            self._sending.pop(id(delivery), None)

    async def send_all(
        self,
        deliveries: Sequence[Delivery],
        reason: str,
        *,
        first: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Send back at once `deliveries` and those whose `send` was interrupted, e.g. when the stage stops.

        Runs shielded from cancellation, for at most `STOP_TIMEOUT` seconds in all; `first` (e.g. giving
        back slots) is awaited first within that budget. A broker out of reach ends it: what is left
        comes back when its lease expires.
        """
        interrupted = list(self._sending.values())
        self._sending.clear()
        if not (deliveries or interrupted or first is not None):
            return
        with anyio.move_on_after(STOP_TIMEOUT, shield=True):
            if first is not None:
                await first()
            try:
                for delivery in interrupted:
                    await self._queue.nack(delivery, delay=0, reason=reason)
                for delivery in deliveries:
                    await self.send(delivery, 0.0, reason)
            except TRANSIENT:
                pass

    async def _queue_nack(self, delivery: Delivery, delay: float, reason: str) -> None:
        await self._queue.nack(delivery, delay=delay, reason=reason)
