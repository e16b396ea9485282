"""`HopGuard` over a seen set shared by workers (Redis), and a downloader without the hop hook."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

from mocra_core import HopRefused, Mocra, MocraBuilder, Request, on_item
from mocra_core.dedup import MemorySeenSet, RedisSeenSet
from mocra_core.download import HttpxDownloader, checks_hops
from mocra_core.engine.download._hops import HopGuard
from mocra_core.http import Routing
from mocra_core.modules import compile_module
from mocra_core.testing import LocalServer

from .test_crawl import CountingDownloader, Item, LinkSpider, page
from .test_redirect_hops import redirect, robots

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from mocra_core.dedup import SeenSet

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/0"
SPIDER = Routing("links/spider")  # an anonymous request: the module is its dedup scope


@pytest.fixture
async def redis_seen() -> AsyncIterator[RedisSeenSet]:
    namespace = f"test-hops-{uuid.uuid4().hex}"
    async with RedisSeenSet(REDIS_URL, namespace=namespace) as seen:
        yield seen
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(REDIS_URL)
    await client.delete(f"{namespace}:seen")
    await client.aclose()


async def test_workers_sharing_a_seen_set_refuse_a_hop_another_request_made_but_not_a_retry(
    server: LocalServer, redis_seen: SeenSet
) -> None:
    server.route("/go/1", redirect("/book/1"))
    server.route("/also/1", redirect("/book/1"))
    server.route("/book/1", page())
    module = compile_module(LinkSpider(server.url("/")))
    worker_a, worker_b = HopGuard(redis_seen, None), HopGuard(redis_seen, None)

    async with HttpxDownloader() as downloader:
        reached = await worker_a.download(downloader, Request(server.url("/go/1")), SPIDER, module)
        again = await worker_b.download(downloader, Request(server.url("/go/1")), SPIDER, module)  # its retry
        with pytest.raises(HopRefused) as other:
            await worker_b.download(downloader, Request(server.url("/also/1")), SPIDER, module)

    assert reached.url == again.url == server.url("/book/1")
    assert (other.value.reason, other.value.url) == ("duplicate", server.url("/book/1"))
    assert server.hits["/book/1"] == 2
    assert server.hits["/also/1"] == 1


async def test_a_hop_is_deduplicated_within_its_scope_only(server: LocalServer) -> None:
    """Two accounts of one module see their own pages: a hop one made is not a duplicate for the other."""
    server.route("/go", redirect("/book"))
    server.route("/go2", redirect("/book"))
    server.route("/book", page())
    module = compile_module(LinkSpider(server.url("/")))

    async with MemorySeenSet() as seen, HttpxDownloader() as downloader:
        guard = HopGuard(seen, None)
        for account in ("alice", "bob"):
            await guard.download(downloader, Request(server.url("/go")), Routing(account=account), module)
        for account in ("alice", "bob"):
            with pytest.raises(HopRefused):
                await guard.download(
                    downloader, Request(server.url("/go2")), Routing(account=account), module
                )

    assert server.hits["/book"] == 2


async def test_a_dont_filter_request_follows_a_seen_hop_and_marks_its_target(server: LocalServer) -> None:
    server.route("/go", redirect("/book"))
    server.route("/go2", redirect("/book"))
    server.route("/go3", redirect("/book"))
    server.route("/book", page())
    module = compile_module(LinkSpider(server.url("/")))

    async with MemorySeenSet() as seen, HttpxDownloader() as downloader:
        guard = HopGuard(seen, None)
        await guard.download(downloader, Request(server.url("/go"), dont_filter=True), SPIDER, module)
        await guard.download(downloader, Request(server.url("/go2"), dont_filter=True), SPIDER, module)
        with pytest.raises(HopRefused):
            await guard.download(downloader, Request(server.url("/go3")), SPIDER, module)

    assert server.hits["/book"] == 2


async def test_a_downloader_without_the_hook_is_checked_on_its_final_url(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page("/book/12", "/next"))
    server.route("/next", page("/go/12"))
    server.route("/go/12", redirect("/book/12"))
    server.route("/book/12", page())
    items: list[Item] = []
    plain = CountingDownloader("default")  # without the hop hook
    assert not checks_hops(plain)

    result = await (
        builder.downloader(plain).spider(LinkSpider(server.url("/")), on_item(items.append)).run_async()
    )

    assert server.hits["/book/12"] == 2  # fetched again (the hop was not seen in time), but not parsed
    assert sum(1 for i in items if i.url.endswith("/book/12")) == 1
    assert result.stats.dropped["duplicate"] == 1
    assert (result.stats.errors, result.dead_letters) == (0, 0)


async def test_a_downloader_without_the_hook_does_not_parse_a_page_robots_txt_disallows(
    server: LocalServer,
) -> None:
    server.route("/robots.txt", robots("/private/"))
    server.route("/", page("/go"))
    server.route("/go", redirect("/private/secret.html"))
    server.route("/private/secret.html", page())
    items: list[Item] = []

    result = await (
        Mocra.builder()
        .downloader(CountingDownloader("default"))
        .spider(LinkSpider(server.url("/")), on_item(items.append))
        .run_async()
    )

    assert [i.url for i in items] == [server.url("/")]
    assert result.stats.dropped["robots"] == 1
    assert (result.stats.errors, result.dead_letters) == (0, 0)
