"""Generations in a worker: work stamped and run by its generation, left for others, drained and retired."""

from __future__ import annotations

from typing import Any

import pytest

from mocra_core import Ctx, Mocra, Response, Spider, on_item
from mocra_core.coordination import LocalCoordination
from mocra_core.engine import _generation_follow
from mocra_core.engine._generation_follow import GenerationFollow
from mocra_core.engine._module_table import ModuleTable
from mocra_core.engine._open_work import OpenWork, open_key
from mocra_core.generations import activate, read_generations
from mocra_core.modules import Task, compile_module
from mocra_core.queue import MemoryQueue
from mocra_core.testing import LocalServer, ServerResponse

pytestmark = pytest.mark.anyio


class Gen(Spider[dict[str, Any]]):
    """Emits the generation of each response it parses; `/` links to three pages."""

    def __init__(self, mark: str = "", *start: str) -> None:
        self.name = "gen"  # type: ignore[misc]
        self.mark = mark
        self.start_urls = start  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        ctx.emit({"url": response.url, "gen": response.routing.generation, "mark": self.mark})
        if response.url.endswith("/"):
            for n in range(3):
                ctx.follow(f"/p{n}")


async def test_a_crawl_stamps_its_work_with_its_generation() -> None:
    async def page(request: object) -> ServerResponse:
        return ServerResponse(body="<p>x</p>")

    site = LocalServer(fallback=page)
    found: list[dict[str, Any]] = []
    async with site.running():
        builder = Mocra.builder().spider(Gen("", site.url("/")), on_item(found.append))
        result = await builder.set("crawl.obey_robots=false").build().run()
    assert result.ok
    assert sorted(item["gen"] for item in found) == [1, 1, 1, 1]  # before generations: 0


def table_of(**marks: int) -> ModuleTable:
    queue = MemoryQueue()
    modules = {"gen": compile_module(Gen("current"))}
    return ModuleTable(modules, queue, generations=marks, lacking_timeout=0.0)


async def test_a_message_runs_on_its_generations_code() -> None:
    table = table_of(gen=2)
    older = compile_module(Gen("older"))
    table.load("gen", 1, older)
    assert table.find("gen/spider", 1) is older
    assert table.find("gen/spider", 2) is table.get("gen")
    assert table.find("gen/spider", 0) is table.get("gen")  # made before generations
    assert table.find("gen/spider", 3) is None  # newer than this worker knows: left for others


async def test_the_active_generation_becomes_current_once_loaded_and_retired_work_runs_on_it() -> None:
    store = LocalCoordination()
    first = await activate(store, {"gen": "a"}, seen=None, job="j")
    second = await activate(store, {"gen": "b"}, seen=first, job="j")
    table = table_of(gen=1)
    assert table.follow(second) == {"gen": 2}  # lacked: a reload's work
    assert table.stamp("gen") == 1 and table.find("gen/spider", 2) is None
    newer = compile_module(Gen("newer"))
    table.load("gen", 2, newer)
    assert table.follow(second) == {} and table.stamp("gen") == 2
    assert table.find("gen/spider", 1) is not newer  # draining: its own code
    retired = second.with_module("gen", second.modules["gen"].retire(1))
    table_two = table_of(gen=2)
    table_two.follow(retired)
    assert table_two.find("gen/spider", 1) is table_two.get("gen")  # retired: runs on the current one


async def test_work_of_a_generation_no_live_worker_has_is_sent_back_then_dead_lettered() -> None:
    queue = MemoryQueue()
    table = ModuleTable({"gen": compile_module(Gen())}, queue, generations={"gen": 1}, lacking_timeout=60.0)
    table.elsewhere = {("gen", 2)}  # another worker's heartbeat has it
    await queue.publish("tasks", [Task(module="gen", node="spider", generation=2)])
    [delivery] = await queue.consume("tasks", group="g", wait=0.1)
    await table.foreign(delivery, "gen", 2)
    assert await queue.pending("tasks") == 1 and not await queue.dead_letters("tasks")
    [again] = await queue.consume("tasks", group="g", wait=3.0)
    assert again.attempt == 1  # sent back without spending an attempt

    table.elsewhere = set()
    table._timeout = 0.0
    await table.foreign(again, "gen", 2)
    [dead] = await queue.dead_letters("tasks")
    assert "generation 2 of 'gen' runs on no live worker" in dead.reason


async def test_open_work_counts_to_zero_and_a_drained_generation_retires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_generation_follow, "RETIRE_GRACE", 0.0)
    store = LocalCoordination()
    first = await activate(store, {"gen": "a"}, seen=None, job="j")
    await activate(store, {"gen": "b"}, seen=first, job="j")
    queue, work = MemoryQueue(), OpenWork()
    table = ModuleTable({"gen": compile_module(Gen())}, queue, generations={"gen": 1})
    follow = GenerationFollow(table, work, store, job="j", scope="same-domain")
    work.published([Task(module="gen", node="spider", generation=1)] * 2)
    await follow.step()
    assert await store.incr(open_key("gen", 1), 0) == 2
    _, record = await read_generations(store)
    assert record is not None and record.modules["gen"].generations[0].state == "draining"

    await queue.publish("tasks", [Task(module="gen", node="spider", generation=1)] * 2)
    deliveries = await queue.consume("tasks", group="g", max_messages=2, wait=0.1)
    work.settled(deliveries)
    await follow.step()
    _, record = await read_generations(store)
    assert record is not None and record.modules["gen"].generations[0].state == "retired"
