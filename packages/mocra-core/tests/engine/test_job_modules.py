"""A job's modules: recorded at its first run; a run without one is refused, a stray message dead-lettered."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from mocra_core import ConfigError, Ctx, MocraBuilder, Request, Response, Spider, on_item
from mocra_core.coordination import LocalCoordination
from mocra_core.engine import BackendPlan
from mocra_core.engine.generate._seeding import check_modules
from mocra_core.http import Routed, Routing
from mocra_core.modules import compile_module
from mocra_core.testing import LocalServer, ServerResponse

pytestmark = pytest.mark.anyio


class Named(Spider[dict[str, Any]]):
    """One page, one item."""

    def __init__(self, name: str, *start: str) -> None:
        self.name = name  # type: ignore[misc]
        self.start_urls = start  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        ctx.emit({"url": response.url})


async def test_a_job_records_its_modules_and_refuses_a_run_without_one() -> None:
    store = LocalCoordination()
    a, b = compile_module(Named("a")), compile_module(Named("b"))
    both, only_a = {"a": a, "b": b}, {"a": a}

    await check_modules(only_a, store, "job 'j'")
    await check_modules(only_a, store, "job 'j'")
    await check_modules(both, store, "job 'j'")  # a spider added: widened

    with pytest.raises(ConfigError) as caught:
        await check_modules(only_a, store, "job 'j'")
    assert str(caught.value) == (
        "mocra run: spiders: job 'j' runs 'a', 'b'; this run has 'a', without 'b': start every worker of a "
        "job with the same spiders, or name another job (--job, --job-dir)"
    )


async def test_a_job_dir_refuses_a_run_with_other_spiders(
    builder: MocraBuilder, server: LocalServer, tmp_path: pathlib.Path
) -> None:
    server.route("/a", ServerResponse(body="a"))
    first = await builder.job_dir(str(tmp_path / "job")).spider(Named("a", server.url("/a"))).run_async()
    assert first.reason == "finished"

    again = MocraBuilder().set("crawl.obey_robots=false").job_dir(str(tmp_path / "job"))
    with pytest.raises(ConfigError, match="job dir .* runs 'a'; this run has 'b', without 'a'"):
        await again.spider(Named("b", server.url("/a"))).run_async()


async def test_a_message_of_a_module_the_run_lacks_is_dead_lettered_and_the_crawl_goes_on(
    builder: MocraBuilder, server: LocalServer, tmp_path: pathlib.Path
) -> None:
    # a job dir written before jobs recorded their modules, holding a request of a spider now gone
    async with BackendPlan.of_job_dir(str(tmp_path / "job")).make_queue() as queue:
        await queue.publish("request", [Routed(Request(server.url("/gone")), Routing("gone/parse"))])
    server.route("/a", ServerResponse(body="a"))
    items: list[dict[str, Any]] = []

    result = await (
        builder.job_dir(str(tmp_path / "job"))
        .spider(Named("a", server.url("/a")), on_item(items.append))
        .run_async()
    )

    assert result.reason == "finished"
    assert items == [{"url": server.url("/a")}]
    assert result.dead_letters == 1
    assert result.failures[0].reason == "no module 'gone' in this worker (it runs a)"
    assert "/gone" not in server.hits


class Edited(Named):
    """`Named` with other code: another generation of the same module."""

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        ctx.emit({"url": response.url, "edited": True})


async def test_new_code_on_a_shared_job_is_refused_while_another_worker_runs_and_taken_when_alone() -> None:
    import time

    from mocra_core.control import WorkerInfo, WorkerRegistry

    store = LocalCoordination()
    first, edited = {"a": compile_module(Named("a"))}, {"a": compile_module(Edited("a"))}
    assert await check_modules(first, store, "job 'j'", shared=True) == {"a": 1}
    workers = WorkerRegistry(store)
    await workers.join("w1")
    await workers.beat(
        WorkerInfo(id="w1", host="h", pid=1, started=time.time(), seen=time.time(), state="active")
    )
    with pytest.raises(ConfigError, match=r"is no live generation of the job .*deploy it first"):
        await check_modules(edited, store, "job 'j'", shared=True)

    await workers.leave("w1")  # the job's other workers are gone: this one takes it over on its new code
    assert await check_modules(edited, store, "job 'j'", shared=True) == {"a": 2}
