"""`EngineJobView`: dead letters and their replay, and a snapshot of a run that ended."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import msgspec
import pytest

from mocra_core.control import JobEnded, JobRegistry, JobSnapshot, JobView
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .conftest import crawl, until

if TYPE_CHECKING:
    from mocra_core.engine import CrawlResult, Engine

pytestmark = pytest.mark.anyio


async def test_dead_letters_are_listed_and_replayed_through_the_view() -> None:
    answered: list[int] = []

    async def flaky(request: ServerRequest) -> ServerResponse:
        answered.append(1)
        return ServerResponse(500 if len(answered) == 1 else 200, "<p>ok</p>")

    async def slow(request: ServerRequest) -> ServerResponse:
        await anyio.sleep(3)  # keeps the run going while the test replays
        return ServerResponse(body="<p>slow</p>")

    start = ServerResponse(body='<a href="/flaky.html">f</a> <a href="/slow.html">s</a>')
    site = LocalServer({"/0.html": start, "/flaky.html": flaky, "/slow.html": slow})
    async with site.running():
        engine = crawl(site, "retry.max_retries=0").build()
        results: list[CrawlResult] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run, engine, results)

            async def dead_lettered() -> bool:
                return engine.view is not None and bool(await engine.view.dead_letters())

            await until(dead_lettered)
            assert engine.view is not None
            view: JobView = engine.view
            [failure] = await view.dead_letters()
            assert await view.dead_letters("task") == []
            snapshot = await view.snapshot()
            assert snapshot.queues["request"].dead == 1
            assert await view.replay(["request"]) == 1
            assert await view.replay() == 0
    [result] = results

    assert (failure.topic, failure.url, failure.attempt) == ("request", site.url("/flaky.html"), 1)
    assert "HTTP 500" in failure.reason
    assert result.reason == "finished" and result.dead_letters == 0 and result.stats.responses == 4
    assert len(answered) == 2


async def test_a_finished_job_is_still_read_from_the_registry(site: LocalServer) -> None:
    registry = JobRegistry()
    result = await crawl(site, "crawl.max_pages=10", "crawl.job=books").registry(registry).run_async()
    view = registry.get("books")
    assert view is not None
    snapshot = await view.snapshot()
    decoded = msgspec.json.decode(msgspec.json.encode(snapshot), type=JobSnapshot)  # what the API sends

    assert result.reason == "max_pages"
    assert (decoded.job, decoded.state, decoded.control) == ("books", "stopped", "running")
    assert decoded.stats.responses == decoded.run.responses == result.stats.responses
    assert decoded.queues["request"].pending > 0  # the budget left pages queued
    assert decoded.workers == [] and await view.dead_letters() == []
    with pytest.raises(JobEnded):
        await view.replay()


async def _run(engine: Engine, results: list[CrawlResult]) -> None:
    results.append(await engine.run())
