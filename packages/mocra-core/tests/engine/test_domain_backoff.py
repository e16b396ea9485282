"""A few endpoints answering 429 forever slow their host by at most `retry.max_domain_backoff`, once each."""

from __future__ import annotations

import time

import anyio
import pytest

from mocra_core import Ctx, MocraBuilder, Response, Spider
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.anyio

BAD = 13
HEALTHY = 50
OTHER = 10
BOUND = 0.25  # retry.max_domain_backoff in this test (seconds)


class Timed(Spider[None]):
    """Fetches its start URLs and notes when each page was parsed."""

    name = "timed"

    def __init__(self, *start: str) -> None:
        self.start_urls = start  # type: ignore[misc]
        self.started = time.monotonic()
        self.done: dict[str, float] = {}

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        self.done[response.url] = time.monotonic() - self.started
        for href in response.links():
            ctx.follow(href)


def busy(n: int) -> ServerResponse:
    retry_after = ({}, {"Retry-After": "300"}, {"Retry-After": "1"})[n % 3]
    return ServerResponse(429, "slow down", headers=retry_after)


@pytest.mark.parametrize("found", ["at-start", "while-retrying"])
async def test_endpoints_answering_429_forever_do_not_stall_their_host(
    builder: MocraBuilder, server: LocalServer, found: str
) -> None:
    for n in range(BAD):
        server.route(f"/busy/{n}", busy(n))
    for n in range(HEALTHY):
        server.route(f"/page/{n}", ServerResponse(body="ok"))
    for n in range(OTHER):
        server.route(f"/other/{n}", ServerResponse(body="ok"))
    port = server.port
    bad = [f"http://127.0.0.1:{port}/busy/{n}" for n in range(BAD)]
    healthy = [f"http://127.0.0.1:{port}/page/{n}" for n in range(HEALTHY)]
    other = [f"http://localhost:{port}/other/{n}" for n in range(OTHER)]  # another host, same server
    links = "".join(f'<a href="{url}">{n}</a>' for n, url in enumerate(healthy))

    async def index(_: ServerRequest) -> ServerResponse:
        await anyio.sleep(0.3)  # the healthy pages are found while the failing ones are being retried
        return ServerResponse(body=links)

    server.route("/index", index)
    if found == "at-start":  # the failing ones first: the healthy pages queue behind them
        spider = Timed(*bad, *healthy, *other)
    else:
        spider = Timed(*bad, f"http://127.0.0.1:{port}/index", *other)
        healthy.append(f"http://127.0.0.1:{port}/index")

    result = await (
        builder.set(
            f"retry.max_domain_backoff={BOUND}",
            "retry.max_retries=3",
            "retry.max_retry_after=0.5",  # the failing URLs' own waits (Retry-After: 300 included)
        )
        .spider(spider)
        .run_async()
    )

    assert sorted(spider.done) == sorted(healthy + other)
    # each failing URL's first 429 may hold the host up to the bound; their retries do not
    assert max(spider.done[url] for url in healthy) < (BAD + 2) * BOUND + 1.0
    assert max(spider.done[url] for url in other) < 2.0  # another host is not slowed
    if found == "while-retrying":  # once found, the healthy pages are held up by at most about the bound
        found_at = spider.done[healthy[-1]]
        assert max(spider.done[url] for url in healthy) - found_at < 2 * BOUND + 0.5
    assert {server.hits[f"/busy/{n}"] for n in range(BAD)} == {4}  # first try + max_retries
    assert result.dead_letters == BAD
    assert all("HTTP 429 after 4 attempts" in f.reason for f in result.failures)
