"""Fan-in counters are fenced: a unit closed twice (a stale claim and its successor) is closed once."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import pytest

from mocra_core.coordination import LocalCoordination, RedisCoordination
from mocra_core.engine._fan_in import FanIn, open_units
from mocra_core.engine._module_table import ModuleTable
from mocra_core.engine._router import TaskRouter
from mocra_core.engine._runbook import RunBook
from mocra_core.modules import CompiledModule, Module, Node, Task, TaskCtx, compile_module
from mocra_core.queue import Delivery, MemoryQueue
from mocra_core.topics import TASKS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from mocra_core.coordination import Coordination

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/0"
NODES = ("list", "detail", "merge")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["local", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Coordination]:
    """A job's coordination store (Redis: a namespace of its own, emptied afterwards)."""
    if request.param == "local":
        coordination: Coordination = LocalCoordination()
    else:
        coordination = RedisCoordination(REDIS_URL, namespace=f"mocra-test-{uuid.uuid4().hex}")
    async with coordination:
        yield coordination
        for node in NODES:
            for prefix in ("open", "closed", "fanin", "inputs"):
                await coordination.delete(f"{prefix}:{RUN}:{node}")
            for count in range(1, 5):
                await coordination.delete(f"settled:{RUN}:{node}:{count}")


RUN = "merged:-:1"


def merged() -> CompiledModule:
    class List(Node[Any]):
        id = "list"

    class Detail(Node[Any]):
        id = "detail"

    class Merge(Node[Any]):
        id = "merge"
        fan_in = True

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            pass

    class Merged(Module[Any]):
        name = "merged"

        def nodes(self) -> list[Node[Any]]:
            return [List(), Detail(), Merge()]

    return compile_module(Merged())


def claim(message: str, attempt: int, topic: str = "request") -> Delivery:
    """The delivery of `message` under its `attempt`-th lease."""
    return Delivery(message, topic, None, None, 0, attempt, 0.0)


async def fired(queue: MemoryQueue) -> list[str]:
    tasks = await queue.consume(TASKS, group="check", max_messages=10, wait=0)
    await queue.ack(tasks)
    return [t.payload.node for t in tasks if isinstance(t.payload, Task)]


async def test_a_unit_closed_twice_does_not_fire_the_fan_in_early(store: Coordination) -> None:
    module = merged()
    runbook = RunBook(store)
    async with MemoryQueue() as queue:
        fan_in = FanIn(runbook, TaskRouter(queue, ModuleTable({"merged": module}, queue), runbook))
        await open_units(runbook, [(RUN, "merged/list")])
        await open_units(runbook, [(RUN, "merged/detail")] * 3)
        await fan_in.unit_done(module, RUN, None, "list", claim("1", 1, "task"))

        await fan_in.unit_done(module, RUN, None, "detail", claim("7", 1))  # a worker paused past its lease
        await fan_in.unit_done(module, RUN, None, "detail", claim("7", 2))  # and its successor, same message
        await fan_in.unit_done(module, RUN, None, "detail", claim("8", 1))
        await fan_in.unit_done(module, RUN, None, "detail", claim("8", 1))  # a crash between close and ack
        assert await fired(queue) == []  # the old counter had reached 0 here

        await fan_in.unit_done(module, RUN, None, "detail", claim("9", 1))
        assert await fired(queue) == ["merge"]
        await fan_in.unit_done(module, RUN, None, "detail", claim("9", 2))
        assert await fired(queue) == []  # once


async def test_the_last_closed_node_need_not_be_the_last_one_opened(store: Coordination) -> None:
    module = merged()
    runbook = RunBook(store)
    async with MemoryQueue() as queue:
        fan_in = FanIn(runbook, TaskRouter(queue, ModuleTable({"merged": module}, queue), runbook))
        await open_units(runbook, [(RUN, "merged/list"), (RUN, "merged/detail")])
        await fan_in.unit_done(module, RUN, None, "detail", claim("7", 1))
        await fan_in.unit_done(module, RUN, None, "detail", claim("7", 2))
        assert await fired(queue) == []  # the list is still open
        await fan_in.unit_done(module, RUN, None, "list", claim("1", 1, "task"))
        assert await fired(queue) == ["merge"]


async def test_a_run_started_before_keeps_its_counter(store: Coordination) -> None:
    """A run whose units were counted down by the previous version: what was still open then counts."""
    module = merged()
    runbook = RunBook(store)
    await store.incr(f"open:{RUN}:detail", 3)  # the previous version: 3 opened...
    await store.incr(f"open:{RUN}:detail", -1)  # ...and 1 closed before the upgrade
    async with MemoryQueue() as queue:
        fan_in = FanIn(runbook, TaskRouter(queue, ModuleTable({"merged": module}, queue), runbook))
        await fan_in.unit_done(module, RUN, None, "detail", claim("8", 1))
        await fan_in.unit_done(module, RUN, None, "detail", claim("8", 2))
        assert await fired(queue) == []
        await fan_in.unit_done(module, RUN, None, "detail", claim("9", 1))
        assert await fired(queue) == ["merge"]
