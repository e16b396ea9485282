"""`consume` of the in-process queues: a cancellation check when messages are ready, else a checkpoint."""

from __future__ import annotations

import anyio
import pytest

from mocra_core.queue import MemoryQueue

pytestmark = pytest.mark.anyio


async def test_consume_with_messages_ready_still_honours_cancellation() -> None:
    async with MemoryQueue() as queue:
        await queue.publish("t", ["a"])
        with anyio.CancelScope() as scope:
            scope.cancel()
            await queue.consume("t", group="g", max_messages=1, wait=0)
            pytest.fail("consume returned inside a cancelled scope")
        [delivery] = await queue.consume("t", group="g", max_messages=1, wait=0)  # nothing was leased
        assert delivery.payload == "a"


async def test_consume_of_an_empty_topic_without_waiting_lets_other_tasks_run() -> None:
    ran: list[int] = []
    async with MemoryQueue() as queue, anyio.create_task_group() as tg:
        tg.start_soon(_append, ran)
        for _ in range(3):  # a poll loop that never waits must not starve the other task
            assert await queue.consume("t", group="g", max_messages=1, wait=0) == []
        assert ran == [1]


async def test_consume_with_messages_ready_returns_them_without_a_trip_through_the_loop() -> None:
    ran: list[int] = []
    async with MemoryQueue() as queue, anyio.create_task_group() as tg:
        await queue.publish("t", ["a", "b"])
        tg.start_soon(_append, ran)
        await queue.consume("t", group="g", max_messages=1, wait=1)
        await queue.consume("t", group="g", max_messages=1, wait=1)
        assert ran == []  # the other task has not been scheduled yet: the two consumes did not yield


async def _append(ran: list[int]) -> None:
    ran.append(1)
