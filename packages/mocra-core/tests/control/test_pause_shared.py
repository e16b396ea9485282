"""Two workers of a Redis job: a pause, resume or stop through either one's view acts on both."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from .conftest import PAGES, REDIS_URL, crawl, hits, until

if TYPE_CHECKING:
    from mocra_core.engine import CrawlResult, Engine, EngineJobView
    from mocra_core.testing import LocalServer

pytestmark = pytest.mark.anyio

SETTLE = 1.5
"""Seconds for both workers to see a pause (a poll: 0.5 s) and end the downloads they had in flight."""


async def views(engines: list[Engine], site: LocalServer, *, pages: int) -> list[EngineJobView]:
    await until(lambda: all(engine.view is not None for engine in engines) and hits(site) >= pages, 15)
    return [engine.view for engine in engines if engine.view is not None]


async def test_two_workers_pause_resume_and_stop_as_one_job_and_a_later_run_fetches_the_rest(
    site: LocalServer, redis_job: str
) -> None:
    settings = (f"queue.url={REDIS_URL}", f"crawl.job={redis_job}")
    engines = [crawl(site, *settings).build() for _ in range(2)]
    results: list[CrawlResult] = []
    async with anyio.create_task_group() as tg:
        for engine in engines:
            tg.start_soon(_run, engine, results)
        first, second = await views(engines, site, pages=30)

        await first.pause()
        await anyio.sleep(SETTLE)
        held = hits(site)
        await anyio.sleep(1.5)
        assert hits(site) == held  # neither worker started a download
        by_first, by_second = await first.snapshot(), await second.snapshot()

        await second.resume()  # either worker's view steers the job
        await until(lambda: hits(site) >= held + 30)
        await first.stop()
    stopped = hits(site)
    rest = await crawl(site, *settings).run_async()

    # both workers followed the pause, and saw the same job
    assert by_first.control == by_second.control == "paused"
    assert by_first.stats == by_second.stats and by_first.stats.runs == 2
    assert by_first.stats.responses == held  # every page fetched, saved by its worker
    assert by_first.queues == by_second.queues and by_first.queues["request"].pending > 0
    assert [w.id for w in by_first.workers] == [w.id for w in by_second.workers]
    assert len(by_first.workers) == 2 and {w.state for w in by_first.workers} == {"active"}
    assert sum(w.responses for w in by_first.workers) == held
    assert by_first.run.responses + by_second.run.responses == held  # each worker's own counts
    # the stop drained both; nothing was lost: the next run fetched the rest
    assert [result.reason for result in results] == ["stopped", "stopped"]
    assert sum(result.stats.responses for result in results) == stopped < PAGES
    assert rest.reason == "finished" and rest.stats.responses == PAGES - stopped
    assert len(site.hits) == PAGES and set(site.hits.values()) == {1}  # each page once


async def _run(engine: Engine, results: list[CrawlResult]) -> None:
    results.append(await engine.run())
