"""Adaptive pace in a crawl: autothrottle follows a host's latency, autoscale bounds the requests at once."""

from __future__ import annotations

import logging
import re

import anyio
import pytest

from mocra_core import Ctx, MocraBuilder, Response, Spider
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.anyio

LATENCY = 0.05  # seconds every page takes on the test site
TARGET = 2.0  # download.autothrottle.target_concurrency


class Pages(Spider[None]):
    """Fetches its start URLs and notes each parsed page."""

    name = "pages"

    def __init__(self, *start: str) -> None:
        self.start_urls = start  # type: ignore[misc]
        self.parsed: set[str] = set()

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        self.parsed.add(response.url)


class InFlight:
    """A handler that takes `latency` seconds and counts the requests it serves at once."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.now = 0
        self.peak = 0

    async def __call__(self, _: ServerRequest) -> ServerResponse:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await anyio.sleep(self.latency)
        finally:
            self.now -= 1
        return ServerResponse(body="ok")


def site(server: LocalServer, pages: int, latency: float) -> tuple[InFlight, list[str]]:
    handler = InFlight(latency)
    for n in range(pages):
        server.route(f"/page/{n}", handler)
    return handler, [f"http://127.0.0.1:{server.port}/page/{n}" for n in range(pages)]


def logged(caplog: pytest.LogCaptureFixture, pattern: str) -> re.Match[str]:
    for record in caplog.records:
        if found := re.search(pattern, record.getMessage()):
            return found
    raise AssertionError(f"no log line matches {pattern!r}")


async def test_autothrottle_paces_a_host_at_latency_over_target(
    builder: MocraBuilder, server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    handler, urls = site(server, 60, LATENCY)
    spider = Pages(*urls)
    caplog.set_level(logging.INFO, logger="mocra_core")

    await (
        builder.set(
            "crawl.per_domain_concurrency=8",  # without the throttle, 8 at once
            "download.autothrottle.enabled=true",
            f"download.autothrottle.target_concurrency={TARGET}",
            "download.autothrottle.start_delay=0.05",
        )
        .spider(spider)
        .run_async()
    )

    assert spider.parsed == set(urls)
    assert handler.peak <= TARGET + 1
    found = logged(caplog, r"autothrottle: 1 host, delay (\S+) to (\S+) s")
    delay = float(found[1])
    assert LATENCY / TARGET * 0.8 <= delay <= LATENCY / TARGET * 2.5  # the client's latency adds a little


async def test_without_autothrottle_the_host_gets_its_per_domain_concurrency(
    builder: MocraBuilder, server: LocalServer
) -> None:
    handler, urls = site(server, 40, LATENCY)

    await builder.set("crawl.per_domain_concurrency=8").spider(Pages(*urls)).run_async()

    assert handler.peak > TARGET + 1  # what the test above would see without the throttle


async def test_autoscale_completes_within_its_bounds(
    builder: MocraBuilder, server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    handler, urls = site(server, 300, 0.02)
    spider = Pages(*urls)
    caplog.set_level(logging.INFO, logger="mocra_core")

    seen: list[int] = []
    engine = (
        builder.set(
            "crawl.concurrency=32",
            "crawl.per_domain_concurrency=32",
            "crawl.autoscale=true",
            "crawl.min_concurrency=2",
        )
        .spider(spider)
        .build()
    )
    result = await engine.run(progress=lambda p: seen.append(p.stats.concurrency), progress_interval=0.05)

    assert spider.parsed == set(urls)
    found = logged(caplog, r"autoscale: (\d+) requests in flight at most, within \[(\d+), (\d+)\]")
    desired, low, high = map(int, found.groups())
    assert (low, high) == (2, 32)
    assert low <= desired <= high
    assert 2 <= result.stats.concurrency <= 32  # the stats show the autoscaler's figure
    assert seen and all(2 <= c <= 32 for c in seen)  # and so does every progress report
    assert handler.peak <= 16  # it starts at 32 / 4 and grows by a fifth a second at most


async def test_without_autoscale_every_worker_works(builder: MocraBuilder, server: LocalServer) -> None:
    handler, urls = site(server, 300, 0.02)

    await (
        builder.set("crawl.concurrency=32", "crawl.per_domain_concurrency=32")
        .spider(Pages(*urls))
        .run_async()
    )

    assert handler.peak > 16  # what the test above would see without autoscale
