"""`Handoff`: unbuffered, highest priority first; cancellation and close lose nothing."""

from __future__ import annotations

import anyio
import pytest

from mocra_core.engine._feeder import Feeder
from mocra_core.engine._handoff import Handoff
from mocra_core.queue import Delivery, MemoryQueue

pytestmark = pytest.mark.anyio


async def test_waiting_offers_go_highest_priority_first_then_oldest_first() -> None:
    handoff: Handoff[str] = Handoff()
    async with anyio.create_task_group() as tg:
        for item, priority in [("a0", 0), ("b1", 1), ("c0", 0), ("d5", 5), ("e1", 1)]:
            tg.start_soon(handoff.put, item, priority)
            await anyio.sleep(0.001)  # an order of arrival
        got = [await handoff.get() for _ in range(5)]
    assert got == ["d5", "b1", "e1", "a0", "c0"]


async def test_put_returns_only_once_a_worker_took_the_item() -> None:
    handoff: Handoff[str] = Handoff()
    with anyio.move_on_after(0.05) as waiting:
        await handoff.put("x")
    assert waiting.cancelled_caught  # nobody took it: withdrawn
    async with anyio.create_task_group() as tg:
        tg.start_soon(handoff.put, "y")
        await anyio.sleep(0.01)
        assert await handoff.get() == "y"  # not the withdrawn "x"


async def put_to_a_waiting_worker(handoff: Handoff[str], item: str) -> list[str]:
    """Start a worker, let it wait, put `item` (which must not block); what the worker got."""
    got: list[str] = []

    async def worker() -> None:
        got.append(await handoff.get())

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker)
        await anyio.sleep(0.01)
        with anyio.fail_after(1):
            await handoff.put(item)
    return got


async def test_a_waiting_worker_gets_the_next_put_at_once() -> None:
    assert await put_to_a_waiting_worker(Handoff(), "seven") == ["seven"]


async def test_a_cancelled_worker_is_passed_by() -> None:
    handoff: Handoff[str] = Handoff()
    with anyio.move_on_after(0.02):
        await handoff.get()  # gives up; its claim must not swallow the next put
    assert await put_to_a_waiting_worker(handoff, "z") == ["z"]


async def test_close_lets_workers_drain_waiting_offers_then_ends() -> None:
    handoff: Handoff[str] = Handoff()
    ended: list[str] = []

    async def late_worker() -> None:
        try:
            await handoff.get()
        except anyio.EndOfStream:
            ended.append("idle worker")

    async with anyio.create_task_group() as tg:
        tg.start_soon(handoff.put, "left", 0)
        await anyio.sleep(0.01)
        handoff.close()
        assert await handoff.get() == "left"  # offers made before the close are still served
        with pytest.raises(anyio.EndOfStream):
            await handoff.get()
        with pytest.raises(anyio.ClosedResourceError):
            await handoff.put("too late")
    other: Handoff[str] = Handoff()
    async with anyio.create_task_group() as tg:
        handoff = other
        tg.start_soon(late_worker)
        await anyio.sleep(0.01)
        other.close()  # wakes the waiting worker with the end of the stream
    assert ended == ["idle worker"]


async def test_the_feeder_hands_the_highest_priority_response_to_the_next_free_worker() -> None:
    handled: list[object] = []
    release = anyio.Event()

    async def handle(delivery: Delivery) -> None:
        handled.append(delivery.payload)
        if delivery.payload == "first":
            await release.wait()

    async with MemoryQueue() as queue:
        feeder = Feeder(queue, "t", "g", lambda: False, wait=0.01)
        async with anyio.create_task_group() as tg:
            tg.start_soon(feeder.run, 1, handle)
            await anyio.sleep(0.01)
            assert await feeder.hand(Delivery("1", "t", "first", None, 0, 1, 0.0))
            for index, (payload, priority) in enumerate([("item", 0), ("item 2", 0), ("next listing", 1)]):
                tg.start_soon(feeder.hand, Delivery(f"h{index}", "t", payload, None, priority, 1, 0.0))
                await anyio.sleep(0.01)  # downloaded in this order while the one worker is busy
            release.set()
            await anyio.sleep(0.05)
            feeder.halt()
        assert handled == ["first", "next listing", "item", "item 2"]


async def test_put_nowait_gives_to_a_waiting_worker_or_would_block() -> None:
    handoff: Handoff[str] = Handoff()
    with pytest.raises(anyio.WouldBlock):
        handoff.put_nowait("nobody waits")
    got: list[str] = []

    async def worker() -> None:
        got.append(await handoff.get())

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker)
        tg.start_soon(worker)
        await anyio.sleep(0.01)
        handoff.put_nowait("a")  # no await between the two: one pass of the loop for both
        handoff.put_nowait("b")
    assert sorted(got) == ["a", "b"]
    handoff.close()
    with pytest.raises(anyio.ClosedResourceError):
        handoff.put_nowait("late")


async def test_a_hand_over_to_a_waiting_counterpart_does_not_yield() -> None:
    # on the crawl's hot path each pass of the event loop is a task wake-up per page
    handoff: Handoff[str] = Handoff()
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    async with anyio.create_task_group() as tg:
        tg.start_soon(handoff.put, "offered")
        await anyio.sleep(0.01)  # the put waits for a worker
        tg.start_soon(other)
        assert await handoff.get() == "offered"
        assert ran == []  # the get took the waiting offer without a pass of the loop
        tg.start_soon(handoff.get)
        await anyio.sleep(0.01)  # a worker waits
        tg.start_soon(other)
        await handoff.put("taken at once")
        assert ran == ["other"]  # by the earlier sleep only: the put did not yield either
