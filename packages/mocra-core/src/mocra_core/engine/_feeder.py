"""`Feeder`: leases work for a pool of workers in batches — one `consume` per batch, not one per worker.

On a broker every `consume` is a round trip, so 64 download workers each asking for one message cost 64
round trips where one call for the idle workers' share does. The feeder asks for as many messages as
there are idle workers (at least one) and hands each to a worker through an unbuffered stream, so a
message is never held leased while no worker is free to take it (beyond the one asked for when all are
busy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from anyio.streams.memory import MemoryObjectReceiveStream

    from ..queue import Delivery, QueueBackend

__all__ = ("Feeder",)


class Feeder:
    """Runs `workers` tasks that each handle one delivery at a time, fed from one `consume` loop.

    Args:
        queue: Where the deliveries come from.
        topic: The topic to consume.
        group: The consumer group.
        should_stop: Asked before each `consume`; once True the feeder stops (see `drain`).
        drain: Keep consuming until the topic has nothing ready, even after `should_stop` (parse drains).
        wait: Seconds one `consume` may wait for a message.
    """

    def __init__(
        self,
        queue: QueueBackend,
        topic: str,
        group: str,
        should_stop: Callable[[], bool],
        *,
        drain: bool = False,
        wait: float = 0.2,
    ) -> None:
        self._queue = queue
        self._topic = topic
        self._group = group
        self._should_stop = should_stop
        self._drain = drain
        self._wait = wait
        self._idle = 0

    async def run(self, workers: int, handle: Callable[[Delivery], Awaitable[None]]) -> None:
        """Feed `workers` workers calling `handle` until the feeder stops; returns when all are done."""
        send, receive = anyio.create_memory_object_stream["Delivery"](0)
        async with anyio.create_task_group() as tg:
            for index in range(workers):
                tg.start_soon(self._work, receive.clone(), handle, name=f"{self._group}-{index}")
            receive.close()
            async with send:
                while True:
                    if self._should_stop() and not self._drain:
                        return
                    deliveries = await self._queue.consume(
                        self._topic, group=self._group, max_messages=max(1, self._idle), wait=self._wait
                    )
                    if not deliveries and self._should_stop():
                        return
                    await self._hand_out(deliveries, send.send)

    async def _hand_out(
        self, deliveries: Sequence[Delivery], send: Callable[[Delivery], Awaitable[None]]
    ) -> None:
        for index, delivery in enumerate(deliveries):
            try:
                await send(delivery)
            except anyio.get_cancelled_exc_class():
                with anyio.move_on_after(5, shield=True):
                    for left in deliveries[index:]:
                        await self._queue.nack(left, delay=0, reason="worker cancelled")
                raise

    async def _work(
        self, receive: MemoryObjectReceiveStream[Delivery], handle: Callable[[Delivery], Awaitable[None]]
    ) -> None:
        async with receive:
            while True:
                self._idle += 1
                try:
                    delivery = await receive.receive()
                except anyio.EndOfStream:
                    return
                finally:
                    self._idle -= 1
                await handle(delivery)
