"""`Acker`: acks off the workers' path, in batches, with a bound; nothing done is left unacked."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core import BackendUnavailable
from mocra_core.engine.parse._acker import Acker
from mocra_core.queue import MemoryQueue

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mocra_core.queue import Delivery

pytestmark = pytest.mark.anyio


class SlowAcks(MemoryQueue):
    """A memory queue whose acks take a round trip and are counted."""

    def __init__(self, delay: float = 0.02, fail: bool = False) -> None:
        super().__init__(visibility_timeout=3600)
        self.calls: list[int] = []
        self.delay = delay
        self.fail = fail

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        self.calls.append(len(deliveries))
        await anyio.sleep(self.delay)
        if self.fail:
            raise BackendUnavailable("test", "test://", "down")
        await super().ack(deliveries)


async def two_leased(queue: MemoryQueue) -> Sequence[Delivery]:
    """Publish two messages and lease both."""
    await queue.publish("t", ["a", "b"])
    return await queue.consume("t", group="g", max_messages=2, wait=0)


async def test_acks_handed_in_during_a_round_trip_share_the_next_call() -> None:
    async with SlowAcks() as queue:
        await queue.publish("t", list(range(10)))
        deliveries = await queue.consume("t", group="g", max_messages=10, wait=0)
        after: list[int] = []

        async def noted(batch: Sequence[Delivery]) -> None:
            after.extend(d.payload for d in batch)  # type: ignore[misc]

        acker = Acker(queue, limit=100, after=noted)
        async with anyio.create_task_group() as tg:
            tg.start_soon(acker.run)
            await acker.ack(deliveries[0])
            await anyio.sleep(0.005)  # the first ack is on the wire
            for delivery in deliveries[1:]:
                await acker.ack(delivery)  # none of these waits
            assert len(acker) == 10
            acker.close()
        assert queue.calls == [1, 9]
        assert sorted(after) == list(range(10))
        assert await queue.pending("t") == 0


async def test_ack_waits_for_room_beyond_the_limit() -> None:
    async with SlowAcks(delay=0.05) as queue:
        await queue.publish("t", list(range(3)))
        deliveries = await queue.consume("t", group="g", max_messages=3, wait=0)
        acker = Acker(queue, limit=2)
        async with anyio.create_task_group() as tg:
            tg.start_soon(acker.run)
            await acker.ack(deliveries[0])
            await acker.ack(deliveries[1])
            start = anyio.current_time()
            await acker.ack(deliveries[2])  # two outstanding: waits until a call returns
            assert anyio.current_time() - start >= 0.02
            acker.close()
        assert await queue.pending("t") == 0


async def test_a_cancelled_acker_still_acks_what_it_holds() -> None:
    async with SlowAcks(delay=0.01) as queue:
        first, second = await two_leased(queue)
        acker = Acker(queue, limit=10)
        async with anyio.create_task_group() as tg:
            tg.start_soon(acker.run)
            await acker.ack(first)
            await acker.ack(second)
            tg.cancel_scope.cancel()
        assert await queue.pending("t") == 0  # done work is not delivered again


async def test_a_failed_ack_raises_from_run() -> None:
    async with SlowAcks(delay=0, fail=True) as queue:
        await queue.publish("t", ["a"])
        [delivery] = await queue.consume("t", group="g", wait=0)
        acker = Acker(queue, limit=10)
        with pytest.raises(BaseExceptionGroup) as caught:
            async with anyio.create_task_group() as tg:
                tg.start_soon(acker.run)
                await acker.ack(delivery)
                await anyio.sleep(1)
        assert caught.group_contains(BackendUnavailable)
        assert await queue.pending("t") == 1  # not acked: delivered again later


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="limit"):
        Acker(MemoryQueue(), limit=0)


async def test_a_worker_cancelled_while_waiting_for_room_still_has_its_delivery_acked() -> None:
    async with SlowAcks(delay=0.05) as queue:
        first, second = await two_leased(queue)
        acker = Acker(queue, limit=1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(acker.run)
            await acker.ack(first)
            with anyio.move_on_after(0.01) as waiting:
                await acker.ack(second)  # no room: waits, and is cancelled
            assert waiting.cancelled_caught
            acker.close()
        assert await queue.pending("t") == 0
