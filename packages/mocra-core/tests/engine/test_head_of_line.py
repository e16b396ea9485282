"""No head-of-line blocking: a slow, delayed or blocked domain parks its own requests, never the workers.

Two servers on 127.0.0.1 are two domains: the slow one is addressed as `localhost`, the fast one as
`127.0.0.1` (a domain is the host name, without the port). The slow domain's requests are queued ahead
of the fast domain's, more of them than the download concurrency.
"""

from __future__ import annotations

import pathlib
import time
import uuid
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core import Ctx, Mocra, MocraBuilder, Response, Spider
from mocra_core.engine._codec import EngineCodec
from mocra_core.queue import open_queue
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/15"
CONCURRENCY = 16
PER_DOMAIN = 8
SLOW = 3 * CONCURRENCY  # pages of the slow domain, 0.5 s each, queued first: 3 s at 8 at once
FAST = 300  # pages of the fast domain, queued behind them
FAST_DELAY = 0.025  # seconds per fast page: 300 pages at 8 at once take about 1 s alone


class Timed(Spider[None]):
    """Fetches its start URLs in order and notes when each page was parsed (seconds from the start)."""

    name = "timed"

    def __init__(self, *start: str, expect: int = 0) -> None:
        self.start_urls = start  # type: ignore[misc]
        self.started = time.monotonic()
        self.done: dict[str, float] = {}
        self.expect = expect
        self.all_parsed = anyio.Event()  # set once `expect` pages were parsed

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        self.done[response.url] = time.monotonic() - self.started
        if len(self.done) == self.expect:
            self.all_parsed.set()


def sleeping(delay: float) -> ServerResponse | object:
    async def page(_: ServerRequest) -> ServerResponse:
        await anyio.sleep(delay)
        return ServerResponse(body="ok")

    return page


@pytest.fixture
def sites() -> Iterator[tuple[LocalServer, LocalServer]]:
    """The slow site (0.5 s a page) and the fast one, each serving from a thread of its own.

    Blocked behind the slow pages, the fast ones would wait 1.5 s or more (48 slow pages over all 16
    download slots), past 1.3x their ~1 s alone.
    """
    slow = LocalServer(fallback=sleeping(0.5))  # type: ignore[arg-type]
    fast = LocalServer(fallback=sleeping(FAST_DELAY))  # type: ignore[arg-type]
    with slow.run_in_thread(), fast.run_in_thread():
        yield slow, fast


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[Callable[[], list[str]]]:
    """Settings of a new crawl in process (memory queue) or on Redis (a fresh shared job, a job-wide gate)."""
    jobs: list[str] = []

    def settings() -> list[str]:
        if request.param == "memory":
            return []
        jobs.append(f"hol{uuid.uuid4().hex[:12]}")
        return [f"queue.url={REDIS_URL}", f"crawl.job={jobs[-1]}"]

    yield settings
    if jobs:
        import redis

        with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
            for job in jobs:
                for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
                    client.delete(key)


def crawl(settings: list[str]) -> MocraBuilder:
    return Mocra.builder().set(
        "crawl.obey_robots=false",
        f"crawl.concurrency={CONCURRENCY}",
        f"crawl.per_domain_concurrency={PER_DOMAIN}",
        *settings,
    )


async def test_a_slow_domain_queued_first_does_not_hold_up_a_fast_one(
    sites: tuple[LocalServer, LocalServer], backend: Callable[[], list[str]]
) -> None:
    slow, fast = sites
    slow_urls = [f"http://localhost:{slow.port}/s/{n}" for n in range(SLOW)]
    fast_urls = [fast.url(f"/f/{n}") for n in range(FAST)]

    await crawl(backend()).spider(Timed(fast.url("/warm-up"))).run_async()  # both timed crawls start warm
    alone = Timed(*fast_urls)
    await crawl(backend()).spider(alone).run_async()
    behind = Timed(*slow_urls, *fast_urls)
    result = await crawl(backend()).spider(behind).run_async()

    assert sorted(behind.done) == sorted(slow_urls + fast_urls)
    assert result.dead_letters == 0
    fast_alone = max(alone.done.values())
    fast_behind = max(behind.done[url] for url in fast_urls)
    print(f"fast domain alone {fast_alone:.2f}s, behind {SLOW} slow pages {fast_behind:.2f}s")
    assert fast_behind < 1.3 * fast_alone
    assert all(slow.hits[f"/s/{n}"] == 1 for n in range(SLOW))  # each fetched once
    assert all(fast.hits[f"/f/{n}"] == 2 for n in range(FAST))  # once per crawl


async def test_a_domain_blocked_by_retry_after_does_not_delay_the_others(tmp_path: pathlib.Path) -> None:
    blocked_pages, free_pages = 3 * CONCURRENCY, 40
    blocked = LocalServer(fallback=lambda _: _busy())  # type: ignore[arg-type, return-value]
    free = LocalServer(fallback=sleeping(0.01))  # type: ignore[arg-type]
    with blocked.run_in_thread(), free.run_in_thread():
        blocked_urls = [f"http://localhost:{blocked.port}/b/{n}" for n in range(blocked_pages)]
        free_urls = [free.url(f"/f/{n}") for n in range(free_pages)]
        spider = Timed(*blocked_urls, *free_urls, expect=free_pages)
        engine = (
            crawl(["retry.max_domain_backoff=300"])  # a Retry-After: 300 blocks the domain for 300 s
            .job_dir(str(tmp_path / "job"))
            .spider(spider)
            .build()
        )
        async with anyio.create_task_group() as tg:

            async def interrupt_when_done() -> None:
                with anyio.move_on_after(15):  # today: every worker waits out the block
                    await spider.all_parsed.wait()
                engine.interrupt()

            tg.start_soon(interrupt_when_done)
            result = await engine.run()

    assert sorted(spider.done) == sorted(free_urls)
    assert max(spider.done.values()) < 5.0
    assert result.dead_letters == 0
    assert all(blocked.hits[f"/b/{n}"] <= 1 for n in range(blocked_pages))  # the block is kept
    # not lost: every request of the blocked domain is still in the job's queue, none dead-lettered
    async with open_queue(f"lmdb://{tmp_path / 'job' / 'queue'}", codec=EngineCodec()) as queue:
        assert await queue.pending("request") == blocked_pages
        assert not await queue.dead_letters("request")


async def _busy() -> ServerResponse:
    return ServerResponse(429, "slow down", headers={"Retry-After": "300"})
