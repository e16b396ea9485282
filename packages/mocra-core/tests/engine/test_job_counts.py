"""The counts of a job shared by workers: each adds what it did to the job's coordination store."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

from mocra_core import Ctx, Mocra, Response, Spider
from mocra_core.coordination import CoordinationError, LocalCoordination
from mocra_core.engine._job_counts import SharedCounts, read_shared_counts
from mocra_core.observe import Stats
from mocra_core.testing import ServerResponse

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mocra_core.testing import LocalServer

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/15"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fetched(stats: Stats, pages: int, *, items: int = 0) -> None:
    for _ in range(pages):
        stats.requests += 1
        stats.response("example.com", 200, 10, 0.01)
    stats.items += items


async def test_workers_add_what_they_did_to_the_job_counts() -> None:
    clock = Clock()
    async with LocalCoordination() as store:
        a, b = Stats(clock=clock), Stats(clock=clock)
        a_counts, b_counts = SharedCounts(store, a), SharedCounts(store, b)
        fetched(a, 3, items=2)
        clock.now += 1.0
        await a_counts.save()
        fetched(b, 2, items=1)
        b.errors += 1
        b.dead_lettered += 1
        await b_counts.save()
        fetched(a, 1, items=1)
        clock.now += 0.5
        await a_counts.save()
        await a_counts.save()  # nothing new: adds nothing

        job = await b_counts.finish()

    assert job is not None
    assert (job.runs, job.requests, job.responses, job.items) == (2, 6, 6, 4)
    assert (job.errors, job.dead_lettered, job.bytes) == (1, 1, 60)
    assert job.elapsed == pytest.approx(1.5 + 1.5)  # the sum of the runs' crawling times
    assert (a.snapshot().responses, b.snapshot().responses) == (4, 2)  # each run's own stay its own


async def test_a_run_that_never_saved_is_not_in_the_job_counts() -> None:
    async with LocalCoordination() as store:
        assert await read_shared_counts(store) is None  # no run of the job reported yet
        SharedCounts(store, Stats())  # started, killed before its first save
        done = Stats()
        fetched(done, 2)
        job = await SharedCounts(store, done).finish()

    assert job is not None and (job.runs, job.responses) == (1, 2)


class FailingOnce(LocalCoordination):
    """A store whose `incr` of one key fails once, as a store out of reach would."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key

    async def incr(self, key: str, delta: int = 1) -> int:
        if key == self.key:
            self.key = ""
            raise CoordinationError(key, "out of reach")
        return await super().incr(key, delta)


async def test_counts_a_failed_save_missed_go_with_the_next_and_none_twice() -> None:
    stats = Stats()
    async with FailingOnce("stats/items") as store:
        counts = SharedCounts(store, stats)
        fetched(stats, 5, items=5)
        with pytest.raises(CoordinationError):
            await counts.save()
        fetched(stats, 1, items=1)
        await counts.save()
        job = await read_shared_counts(store)

    assert job is not None and (job.runs, job.responses, job.items) == (1, 6, 6)


class ReadOnly(LocalCoordination):
    """A store that takes reads but no writes once `closed`: a cluster's last node, its peers gone."""

    closed = False

    async def incr(self, key: str, delta: int = 1) -> int:
        if self.closed:
            raise CoordinationError(key, "connected to no majority of the voters")
        return await super().incr(key, delta)


async def test_the_last_worker_whose_store_takes_no_writes_still_reports_the_jobs_counts() -> None:
    first, last = Stats(), Stats()
    async with ReadOnly() as store:
        fetched(first, 4, items=4)
        await SharedCounts(store, first).finish()
        counts = SharedCounts(store, last)
        fetched(last, 2, items=2)
        await counts.save()
        fetched(last, 3, items=3)  # after its last save, and then its peers leave
        store.closed = True
        job = await counts.finish()
        stored = await read_shared_counts(store)

    assert job is not None and (job.runs, job.responses, job.items) == (2, 9, 9)
    assert stored is not None and (stored.runs, stored.responses) == (2, 6)  # the store missed the last 3


class Chain(Spider[dict[str, str]]):
    name = "chain"

    def __init__(self, start: str) -> None:
        self.start_urls = [start]  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, str]]) -> None:
        ctx.emit({"url": response.url})
        for href in response.links():
            ctx.follow(href)


@pytest.fixture
def redis_job() -> Iterator[str]:
    """A fresh job name; its keys on Redis are deleted afterwards."""
    import redis

    job = f"counts{uuid.uuid4().hex[:12]}"
    yield job
    with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
        for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
            client.delete(key)


async def test_a_run_on_a_broker_reports_the_jobs_counts_with_its_own(
    server: LocalServer, redis_job: str
) -> None:
    for n in range(5):
        link = f'<a href="/{n + 1}.html">next</a>' if n < 4 else "the end"
        server.route(f"/{n}.html", ServerResponse(body=link))
    settings = ("crawl.obey_robots=false", f"queue.url={REDIS_URL}", f"crawl.job={redis_job}")

    first = await Mocra.builder().set(*settings).spider(Chain(server.url("/0.html"))).run_async()
    second = await Mocra.builder().set(*settings).spider(Chain(server.url("/0.html"))).run_async()

    assert first.job is not None and (first.job.runs, first.job.responses, first.job.items) == (1, 5, 5)
    assert second.stats.responses == 0  # the job was done: the second worker found nothing left
    assert second.job is not None and (second.job.runs, second.job.responses) == (2, 5)
    assert second.job.elapsed == pytest.approx(first.stats.elapsed + second.stats.elapsed, abs=0.05)
