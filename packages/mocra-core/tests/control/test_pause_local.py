"""Pause, resume and stop a one-process run through its `JobView` (the server counts what is fetched)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.control import JobEnded, JobRegistry

from .conftest import PAGES, crawl, hits, until

if TYPE_CHECKING:
    from mocra_core.engine import CrawlResult, Engine, EngineJobView
    from mocra_core.testing import LocalServer

pytestmark = pytest.mark.anyio

SETTLE = 1.0
"""Seconds for the downloads in flight at a pause to end (each takes `PAGE_DELAY`; well over)."""


async def wired(engine: Engine, site: LocalServer, *, pages: int) -> EngineJobView:
    """The engine's view once its run is wired and the site served `pages` pages."""
    await until(lambda: engine.view is not None and hits(site) >= pages)
    assert engine.view is not None
    return engine.view


async def test_a_paused_run_starts_no_download_until_resumed_then_stops_leaving_the_rest_queued(
    site: LocalServer,
) -> None:
    registry = JobRegistry()
    engine = crawl(site).registry(registry).build()
    results: list[CrawlResult] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _run(engine, results))
        view = await wired(engine, site, pages=20)
        assert registry.get(view.job) is view

        assert await view.pause() == "paused"
        await anyio.sleep(SETTLE)  # in-flight downloads end
        held = hits(site)
        await anyio.sleep(1.5)
        assert hits(site) == held  # no download started while paused
        snapshot = await view.snapshot()
        assert (snapshot.control, snapshot.state) == ("paused", "active")
        assert snapshot.queues["request"].pending > 0  # the queue kept its messages

        assert await view.resume() == "running"
        await until(lambda: hits(site) >= held + 20, 5)

        assert await view.stop() == "stopping"
    [result] = results
    final = await view.snapshot()

    assert result.reason == "stopped"
    assert held + 20 <= hits(site) < PAGES  # stopped before the end
    assert result.stats.responses == hits(site)  # what was in flight was finished, not dropped
    assert (final.state, final.control) == ("stopped", "stopping")
    assert registry.get(view.job) is view  # a finished job stays readable
    with pytest.raises(JobEnded, match="its run ended: stopped"):
        await view.pause()


async def test_an_interrupt_ends_a_paused_run(site: LocalServer) -> None:
    engine = crawl(site).build()
    results: list[CrawlResult] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _run(engine, results))
            view = await wired(engine, site, pages=5)
            await view.pause()
            await anyio.sleep(0.3)
            engine.interrupt()

    assert results[0].reason == "interrupted"


async def _run(engine: Engine, results: list[CrawlResult]) -> None:
    results.append(await engine.run())
