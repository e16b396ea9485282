"""Fixtures for job-control tests: a slow site on 127.0.0.1, a fresh job on the local Redis, a builder."""

from __future__ import annotations

import inspect
import itertools
import uuid
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core import Ctx, Mocra, MocraBuilder, Response, Spider
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

REDIS_URL = "redis://127.0.0.1:6379/15"
PAGES = 400
"""Pages of the slow site: `/0.html` links to every other page."""
PAGE_DELAY = 0.05
"""Seconds the slow site takes per page."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Pages(Spider[dict[str, str]]):
    """Follows every link, one item per page."""

    name = "pages"

    def __init__(self, start: str) -> None:
        self.start_urls = [start]  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, str]]) -> None:
        ctx.emit({"url": response.url})
        for href in response.links():
            ctx.follow(href)


async def slow_page(request: ServerRequest) -> ServerResponse:
    """A page that takes `PAGE_DELAY` seconds; `/0.html` links to all the others."""
    await anyio.sleep(PAGE_DELAY)
    if request.path == "/0.html":
        return ServerResponse(body="".join(f'<a href="/{n}.html">{n}</a>' for n in range(1, PAGES)))
    return ServerResponse(body="<p>leaf</p>")


@pytest.fixture
async def site() -> AsyncIterator[LocalServer]:
    """The slow site, served while the test runs."""
    server = LocalServer(fallback=slow_page)
    async with server.running():
        yield server


async def until(check: Callable[[], bool | Awaitable[bool]], seconds: float = 10.0) -> None:
    """Wait until `check()` is true (polled: the engine and the server tell no one), `seconds` at most."""
    with anyio.fail_after(seconds):
        for _ in itertools.count():
            done = check()
            if await done if inspect.isawaitable(done) else done:
                return
            await anyio.sleep(0.01)


def hits(server: LocalServer) -> int:
    """Pages the server answered so far."""
    return sum(server.hits.values())


def crawl(site: LocalServer, *settings: str) -> MocraBuilder:
    """A builder of the slow site's crawl: 4 downloads at once, quick retries."""
    return (
        Mocra.builder()
        .set("crawl.obey_robots=false", "crawl.concurrency=4", "retry.base=0.01", *settings)
        .spider(Pages(site.url("/0.html")))
    )


@pytest.fixture
def redis_job() -> Iterator[str]:
    """A fresh job name on the local Redis; its keys are deleted afterwards."""
    import redis

    job = f"control{uuid.uuid4().hex[:12]}"
    yield job
    with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
        for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
            client.delete(key)
