"""A crawl with `dedup.approximate`: each page fetched once, in one process and on a shared Redis queue."""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING

import pytest
import redis.asyncio

from mocra_core import Ctx, Response, Spider, on_item
from mocra_core.testing import LocalServer, ServerResponse

if TYPE_CHECKING:
    from mocra_core import MocraBuilder

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


class Links(Spider[str]):
    """Emits each page's URL and follows every link."""

    name = "links"

    def __init__(self, start: str) -> None:
        self.start_urls = [start]  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[str]) -> None:
        ctx.emit(response.url)
        for href in response.links():
            ctx.follow(href)


def site(server: LocalServer) -> None:
    """Ten pages, each linking to every page."""
    links = "".join(f'<a href="/p/{n}.html">{n}</a>' for n in range(10))
    for n in range(10):
        server.route(f"/p/{n}.html", ServerResponse(body=f"<html><body>{links}</body></html>"))


@pytest.mark.parametrize("queue", ["memory", "redis"])
async def test_each_page_is_fetched_once(builder: MocraBuilder, server: LocalServer, queue: str) -> None:
    site(server)
    job = f"approx-{uuid.uuid4().hex}"
    options = ["dedup.approximate=true", "dedup.capacity=1000", f"crawl.job={job}"]
    if queue == "redis":
        options.append(f"queue.url={REDIS_URL}")
    items: list[str] = []
    keys: list[bytes | str] = []
    try:
        result = (
            await builder.set(*options)
            .spider(Links(server.url("/p/0.html")), on_item(items.append))
            .run_async()
        )
    finally:
        async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
            keys = await raw.keys(f"mocra-{job}*")
            if keys:
                await raw.delete(*keys)
    assert result.reason == "finished"
    if queue == "redis":
        assert f"mocra-{job}:seen:0:0".encode() in keys  # the Bloom filter's first segment
    assert dict(server.hits) == {f"/p/{n}.html": 1 for n in range(10)}
    assert len(items) == 10
    assert result.stats.dropped["duplicate"] >= 90
