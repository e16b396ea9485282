"""Seeds are admitted or rejected one by one: an invalid start URL does not lose the others."""

from __future__ import annotations

from typing import Any

import pytest

from mocra_core import InvalidURL, Mocra, MocraBuilder, Request, Response, Seeds, Spider, on_item
from mocra_core.http import Routing
from mocra_core.modules import Ctx, Module, Node, TaskCtx
from mocra_core.testing import LocalServer, ServerResponse

pytestmark = pytest.mark.anyio

BROKEN = "htp:/broken"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def builder() -> MocraBuilder:
    return Mocra.builder().set("crawl.obey_robots=false")


@pytest.fixture
async def server() -> Any:
    site = LocalServer()
    site.route("/a.html", ServerResponse(body="<p>a</p>"))
    site.route("/b.html", ServerResponse(body="<p>b</p>"))
    async with site.running():
        yield site


class Pages(Spider[str]):
    name = "pages"

    async def parse(self, response: Response, ctx: Ctx[str]) -> None:
        ctx.emit(response.url.rsplit("/", 1)[1])


def test_seeds_keep_the_valid_urls_and_set_the_invalid_ones_aside() -> None:
    seeds = Seeds("pages/spider")

    seeds.get("https://example.com/a")
    seeds.get(BROKEN)
    seeds.get("https://example.com/b")

    assert [r.url for r in seeds.requests] == ["https://example.com/a", "https://example.com/b"]
    [problem] = seeds.invalid
    assert isinstance(problem, InvalidURL)
    assert problem.url == BROKEN


def test_seeds_and_follow_ups_have_their_routing_beside_them() -> None:
    seeds = Seeds("shop/spider", run="shop:alice:1", account="alice")
    seeds.get("https://example.com/a")
    seeds.add(Request("https://example.com/b", method="POST"))
    assert seeds.routing == Routing("shop/spider", "shop:alice:1", 0, "alice")

    page = Response("https://example.com/a", 200, [], b"", seeds.requests[0], routing=seeds.routing)
    ctx: Ctx[Any] = Ctx(page)
    ctx.follow("/c")
    ctx.follow(Request("https://example.com/d"))
    assert [r.url for r in ctx.requests] == ["https://example.com/c", "https://example.com/d"]
    assert ctx.routing == Routing("shop/spider", "shop:alice:1", 1, "alice")  # one hop deeper, for all
    assert Ctx(Response(page.url, 200, [], b"", page.request, routing=ctx.routing)).routing.depth == 2


async def test_one_invalid_start_url_does_not_lose_the_others(
    builder: MocraBuilder, server: LocalServer
) -> None:
    class Listed(Pages):
        start_urls = (server.url("/a.html"), BROKEN, server.url("/b.html"))

    items: list[str] = []
    result = await builder.spider(Listed(), on_item(items.append)).run_async()

    assert sorted(items) == ["a.html", "b.html"]
    assert result.stats.dropped["invalid_url"] == 1
    assert result.dead_letters == 0
    assert result.rejected == [f"invalid URL {BROKEN!r}: scheme must be http or https"
                               " (resolve relative URLs with response.urljoin)"]  # fmt: skip


async def test_an_invalid_url_seeded_by_start_does_not_lose_the_others(
    builder: MocraBuilder, server: LocalServer
) -> None:
    class Started(Pages):
        async def start(self, seeds: Seeds) -> None:
            for url in (server.url("/a.html"), BROKEN, server.url("/b.html")):
                seeds.get(url)

    items: list[str] = []
    result = await builder.spider(Started(), on_item(items.append)).run_async()

    assert sorted(items) == ["a.html", "b.html"]
    assert result.stats.dropped["invalid_url"] == 1
    assert result.dead_letters == 0


async def test_an_invalid_url_from_a_node_generate_does_not_lose_the_others(
    builder: MocraBuilder, server: LocalServer
) -> None:
    class Fetch(Node[str]):
        async def generate(self, ctx: TaskCtx[str]) -> None:
            for url in (server.url("/a.html"), BROKEN, server.url("/b.html")):
                ctx.get(url)

        async def parse(self, response: Response, ctx: Ctx[str]) -> None:
            ctx.emit(response.url.rsplit("/", 1)[1])

    class Fetching(Module[str]):
        name = "fetching"

        def nodes(self) -> list[Node[str]]:
            return [Fetch()]

    items: list[str] = []
    result = await builder.module(Fetching(), on_item(items.append)).run_async()

    assert sorted(items) == ["a.html", "b.html"]
    assert result.stats.dropped["invalid_url"] == 1
    assert result.dead_letters == 0
