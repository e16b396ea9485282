"""The stats of a `crawl.job_dir` job: each run's own, the job's so far, saved in step with the acks."""

from __future__ import annotations

import pathlib

import pytest

from mocra_core import Ctx, Mocra, MocraBuilder, Response, Spider
from mocra_core.engine import JobDir
from mocra_core.engine._activity import ActivityQueue
from mocra_core.observe import Stats, StatsSnapshot
from mocra_core.queue import MemoryQueue
from mocra_core.testing import LocalServer, ServerResponse

pytestmark = pytest.mark.anyio


class Chain(Spider[dict[str, str]]):
    name = "chain"

    def __init__(self, start: str) -> None:
        self.start_urls = [start]  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, str]]) -> None:
        ctx.emit({"url": response.url})
        for href in response.links():
            ctx.follow(href)


async def test_a_resumed_job_reports_its_own_run_and_the_job_apart(
    server: LocalServer, tmp_path: pathlib.Path
) -> None:
    for n in range(50):
        server.route(f"/{n}.html", ServerResponse(body=f'<a href="/{n + 1}.html">next</a>'))

    def run(max_pages: int) -> MocraBuilder:
        return (
            Mocra.builder()
            .set("crawl.obey_robots=false", f"crawl.max_pages={max_pages}", "crawl.concurrency=1")
            .job_dir(str(tmp_path / "job"))
            .spider(Chain(server.url("/0.html")))
        )

    first = await run(5).run_async()
    second = await run(12).run_async()  # the page budget is the job's: 7 more

    assert (first.reason, second.reason) == ("max_pages", "max_pages")
    assert first.job is not None and first.job.runs == 1 and first.job.responses == 5
    assert (second.stats.responses, second.stats.items, second.stats.runs) == (7, 7, 1)
    assert second.job is not None
    assert (second.job.responses, second.job.items, second.job.runs) == (12, 12, 2)
    assert second.job.status == {"200": 12} and second.job.domains == {"127.0.0.1": 12}
    assert second.stats.elapsed < second.job.elapsed  # the job's crawling time counts both runs


async def test_the_job_counts_are_saved_after_every_ack(tmp_path: pathlib.Path) -> None:
    job = JobDir(tmp_path)
    stats = Stats()
    stats.resume(StatsSnapshot(responses=3, items=2, status={"200": 3}, elapsed=1.5, runs=1))
    async with ActivityQueue(MemoryQueue(), settled=job.counts_saver(stats)) as queue:
        await queue.publish("request", ["a"])
        [delivery] = await queue.consume("request", group="g")
        stats.response("example.com", 200, 100, 0.01)
        stats.items += 1
        await queue.ack([delivery])
    job.close()  # as a kill would leave it: no `save_stats` ran

    saved = JobDir(tmp_path).load_stats()

    assert saved is not None
    assert (saved.responses, saved.items, saved.runs, saved.status) == (4, 3, 2, {"200": 4})
    assert saved.elapsed >= 1.5
    assert saved.domains == {}  # saved once a second, with `save_stats`


def test_the_per_domain_counts_come_from_the_last_full_save(tmp_path: pathlib.Path) -> None:
    job = JobDir(tmp_path)
    job.save_stats(StatsSnapshot(responses=1, domains={"a.example": 1}))
    job.save_counts(StatsSnapshot(responses=5))
    job.close()

    saved = JobDir(tmp_path).load_stats()

    assert saved is not None and (saved.responses, saved.domains) == (5, {"a.example": 1})
