"""`Feeder`: batched leases for a pool of workers; `halt` and cancellation leave nothing stranded."""

from __future__ import annotations

import anyio
import pytest

from mocra_core.engine._feeder import Feeder
from mocra_core.queue import Delivery, MemoryQueue

pytestmark = pytest.mark.anyio


async def test_workers_get_every_message_once() -> None:
    seen: list[object] = []
    stopping = False

    async def handle(delivery: Delivery) -> None:
        nonlocal stopping
        seen.append(delivery.payload)
        await queue.ack([delivery])
        stopping = len(seen) == 50

    async with MemoryQueue() as queue:
        await queue.publish("t", list(range(50)))
        await Feeder(queue, "t", "g", lambda: stopping, wait=0.01).run(4, handle)
        assert sorted(seen) == list(range(50))  # type: ignore[type-var]
        assert await queue.pending("t") == 0


async def test_halt_stops_leasing_and_lets_workers_finish() -> None:
    finished: list[object] = []
    started = anyio.Event()

    async def handle(delivery: Delivery) -> None:
        started.set()
        await anyio.sleep(0.05)
        finished.append(delivery.payload)
        await queue.ack([delivery])

    async with MemoryQueue() as queue:
        await queue.publish("t", ["a"])
        feeder = Feeder(queue, "t", "g", lambda: False, wait=30)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(feeder.run, 2, handle)
                await started.wait()
                feeder.halt()  # its consume (waiting 30 s for more) is cancelled at once
                await queue.publish("t", ["b"])
        assert finished == ["a"]
        assert await queue.pending("t") == 1  # "b" was never leased


async def test_cancelled_feeder_hands_back_what_no_worker_took() -> None:
    handled: list[object] = []
    hold, busy = anyio.Event(), anyio.Event()

    async def handle(delivery: Delivery) -> None:
        handled.append(delivery.payload)
        busy.set()
        await hold.wait()  # one worker, busy: the rest of the batch waits in the feeder

    async with MemoryQueue(visibility_timeout=3600) as queue:
        await queue.publish("t", ["a"])
        feeder = Feeder(queue, "t", "g", lambda: False, wait=0.01)
        async with anyio.create_task_group() as tg:
            tg.start_soon(feeder.run, 1, handle)
            await busy.wait()
            await queue.publish("t", ["b", "c"])
            await anyio.sleep(0.1)  # the feeder leased "b" and waits for a free worker
            tg.cancel_scope.cancel()
        # "a" was in a worker's hands (its handler nacks on cancellation in the engine; here nobody did);
        # "b" and what else was leased came back at once, not after the hour-long visibility timeout
        again = await queue.consume("t", group="g", max_messages=10, wait=0)
        assert {d.payload for d in again} == {"b", "c"}
        assert all(d.attempt <= 2 for d in again)


async def test_redelivered_work_requeues_a_seen_url_once_per_process() -> None:
    from mocra_core.dedup import MemorySeenSet
    from mocra_core.engine._frontier import REQUESTS, Frontier
    from mocra_core.http import Request, Routing
    from mocra_core.observe import Stats

    async with MemoryQueue() as queue:
        frontier = Frontier(queue, MemorySeenSet(), Stats())
        await frontier.submit([Request("http://example.com/0")], Routing())
        # two redelivered responses both link to /0: queued past dedup once (it may not have reached the
        # queue before the crash), not once per response
        for _ in range(2):
            await frontier.submit([Request("http://example.com/0")], Routing(), redelivered=True)
        await frontier.submit([Request("http://example.com/0")], Routing())  # plain duplicate: dropped
        assert await queue.pending(REQUESTS) == 2
