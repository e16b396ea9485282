"""`Feeder`: leases work for a pool of workers in batches — one `consume` per batch, not one per worker.

On a broker every `consume` is a round trip, so 64 download workers each asking for one message cost 64
round trips where one call for the idle workers' share does. The feeder asks for as many messages as
there are idle workers (at least one) and hands each to a worker through an unbuffered `Handoff`, so a
message is never held leased while no worker is free to take it (beyond the one asked for when all are
busy). Offers waiting for a worker are served highest priority first.

`hand` is the other way in: another stage of the same process hands a delivery straight to a
worker (the download stage passes a response to a parse worker without a queue round trip).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ..control import Hold
from ._handoff import Handoff
from ._lease_return import LeaseReturn
from ._transient import TRANSIENT

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from ..queue import Delivery, QueueBackend
    from ._outage import Outage

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
        outage: Where an unreachable broker is noted: `consume` is then tried again until it answers or
            the outage is `over`, and a worker whose delivery met one goes on with the next (the delivery
            stays leased and comes back when its lease expires). Without it, such errors propagate.
        hold: A pause gate: while it is held nothing is leased (what workers hold is finished).
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
        outage: Outage | None = None,
        hold: Hold | None = None,
    ) -> None:
        self._hold = hold if hold is not None else Hold()
        self._queue = queue
        self._outage = outage
        self._topic = topic
        self._group = group
        self._should_stop = should_stop
        self._drain = drain
        self._wait = wait
        self._idle = 0
        self._halted = False
        self._consuming: anyio.CancelScope | None = None
        self._handoff: Handoff[Delivery] | None = None  # while feeding
        self._return = LeaseReturn(queue, topic)
        self._unstarted: dict[int, Delivery] = {}  # leased, not yet taken by a worker

    def halt(self) -> None:
        """Stop leasing now; the workers finish the deliveries they hold, then `run` returns.

        A `consume` in progress is cancelled, which leases nothing.
        """
        self._halted = True
        if self._consuming is not None:
            self._consuming.cancel()

    async def hand(self, delivery: Delivery, *, wait: bool = True) -> bool:
        """Hand `delivery` to a worker, waiting for one to be free; False (nothing done) once stopped.

        A handed delivery is the worker's as if it had been consumed (handed back if the feeder is
        cancelled before the worker starts on it). `wait=False`: only to an idle worker, else False.
        """
        if self._handoff is None or self._halted:
            return False
        self._unstarted[id(delivery)] = delivery
        try:
            if wait:
                await self._handoff.put(delivery, delivery.priority)
            else:
                self._handoff.put_nowait(delivery)
        except (anyio.ClosedResourceError, anyio.WouldBlock):
            self._unstarted.pop(id(delivery), None)
            return False
        return True

    async def run(self, workers: int, handle: Callable[[Delivery], Awaitable[None]]) -> None:
        """Feed `workers` workers calling `handle` until the feeder stops; returns when all are done.

        Deliveries leased but not yet taken by a worker when the feeder is cancelled are handed back
        (nacked without delay), also one that a cancelled `send` reports unsent though a worker took it
        (anyio raises the cancellation after the handover), which a worker then handles as usual.
        """
        handoff: Handoff[Delivery] = Handoff()
        try:
            async with anyio.create_task_group() as tg:
                for index in range(workers):
                    tg.start_soon(self._work, handoff, handle, name=f"{self._group}-{index}")
                self._handoff = handoff
                try:
                    await self._feed(handoff)
                finally:
                    self._handoff = None
                    handoff.close()
        finally:
            left, self._unstarted = list(self._unstarted.values()), {}
            await self._return.send_all(left, "worker cancelled")

    async def _feed(self, handoff: Handoff[Delivery]) -> None:
        while not self._halted:
            if self._should_stop() and not self._drain:
                return
            if self._hold.held:  # paused: lease nothing (a flag check while running)
                with anyio.move_on_after(0.5):  # and look at `should_stop` now and then
                    await self._hold.wait()
                continue
            deliveries: Sequence[Delivery] = ()
            with anyio.CancelScope() as self._consuming:
                try:
                    deliveries = await self._queue.consume(
                        self._topic, group=self._group, max_messages=max(1, self._idle), wait=self._wait
                    )
                except TRANSIENT as exc:
                    if self._outage is None:
                        raise
                    await anyio.sleep(self._outage.failed(exc, f"leasing {self._topic!r} messages"))
            self._consuming = None
            if not deliveries and (self._consuming_cancelled() or self._should_stop() or self._outage_over()):
                return
            for delivery in deliveries:
                self._unstarted[id(delivery)] = delivery
            for delivery in deliveries:  # to the idle workers at once, then to each worker freed
                try:
                    handoff.put_nowait(delivery)
                except anyio.WouldBlock:
                    await handoff.put(delivery, delivery.priority)

    def _outage_over(self) -> bool:
        return self._outage is not None and self._outage.over

    def _consuming_cancelled(self) -> bool:
        return self._halted  # a method: `halt` flips it while `_feed` awaits

    async def _work(self, handoff: Handoff[Delivery], handle: Callable[[Delivery], Awaitable[None]]) -> None:
        while True:
            self._idle += 1
            try:
                delivery = await handoff.get()
            except anyio.EndOfStream:
                return
            finally:
                self._idle -= 1
            self._unstarted.pop(id(delivery), None)
            try:
                await handle(delivery)
            except TRANSIENT as exc:  # left leased: it comes back when its lease expires
                if self._outage is None:
                    raise
                self._outage.failed(exc, f"handling a {self._topic!r} message")
