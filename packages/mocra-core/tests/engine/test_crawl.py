"""End-to-end crawls through the real engine against a real server on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import anyio
import msgspec
import pytest

from mocra_core import Ctx, MocraBuilder, Request, Response, Seeds, Spider, channel, on_item
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.anyio


def page(*links: str, title: str = "t") -> ServerResponse:
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    return ServerResponse(body=f"<html><head><title>{title}</title></head><body>{anchors}</body></html>")


class Item(msgspec.Struct):
    url: str
    status: int
    title: str


class LinkSpider(Spider[Item]):
    """Emits one item per page and follows every link."""

    name = "links"

    def __init__(self, *start: str) -> None:
        self.start_urls = start  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[Item]) -> None:
        title = response.css_first("title")
        ctx.emit(Item(url=response.url, status=response.status, title=title.text() if title else ""))
        for href in response.links():
            ctx.follow(href)


async def test_pagination_and_dedup_fetch_each_page_once(builder: MocraBuilder, server: LocalServer) -> None:
    for n in range(1, 6):
        nxt = [f"/list/{n + 1}.html"] if n < 5 else []
        server.route(f"/list/{n}.html", page(*nxt, "/list/1.html", f"/list/{n}.html#frag", "/item/a.html"))
    server.route("/item/a.html", page("../list/1.html", "/item/a.html?"))
    items: list[Item] = []

    result = await builder.spider(LinkSpider(server.url("/list/1.html")), on_item(items.append)).run_async()

    assert result.reason == "finished"
    assert dict(server.hits) == {f"/list/{n}.html": 1 for n in range(1, 6)} | {"/item/a.html": 1}
    assert len(items) == 6
    assert result.stats.dropped["duplicate"] >= 10
    assert result.ok


async def test_non_2xx_reaches_parse(builder: MocraBuilder, server: LocalServer) -> None:
    server.route("/", page("/missing.html"))
    items: list[Item] = []

    await builder.spider(LinkSpider(server.url("/")), on_item(items.append)).run_async()

    assert sorted(i.status for i in items) == [200, 404]


async def test_503_with_retry_after_is_retried_then_parsed(
    builder: MocraBuilder, server: LocalServer
) -> None:
    calls = 0

    async def flaky(_: ServerRequest) -> ServerResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            return ServerResponse(503, "busy", headers={"Retry-After": "0"})
        return page(title="ok")

    server.route("/", flaky)
    items: list[Item] = []

    result = await builder.spider(LinkSpider(server.url("/")), on_item(items.append)).run_async()

    assert [i.title for i in items] == ["ok"]
    assert calls == 2
    assert result.stats.retries == 1
    assert result.ok


async def test_retries_exhausted_go_to_the_dead_letter_queue(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page("/down.html", "/fine.html"))
    server.route("/down.html", ServerResponse(500, "boom"))
    server.route("/fine.html", page())
    items: list[Item] = []

    result = (
        await builder.set("retry.max_retries=2")
        .spider(LinkSpider(server.url("/")), on_item(items.append))
        .run_async()
    )

    assert server.hits["/down.html"] == 3  # first try + 2 retries
    assert sorted(i.url.rsplit("/", 1)[1] for i in items) == ["", "fine.html"]
    assert result.dead_letters == 1
    [failure] = result.failures
    assert (failure.topic, failure.attempt) == ("request", 3)
    assert failure.url.endswith("/down.html")
    assert "HTTP 500 after 3 attempts" in failure.reason
    assert not result.ok


async def test_timeout_is_retried_then_dead_lettered(builder: MocraBuilder, server: LocalServer) -> None:
    async def slow(_: ServerRequest) -> ServerResponse:
        await anyio.sleep(2)
        return page()

    server.route("/slow.html", slow)

    result = (
        await builder.set("retry.max_retries=1", "download.total_timeout=0.2")
        .spider(LinkSpider(server.url("/slow.html")))
        .run_async()
    )

    assert server.hits["/slow.html"] == 2
    assert result.dead_letters == 1
    assert result.stats.retries == 1


async def test_parse_exception_goes_to_dlq_and_the_crawl_finishes(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page("/bad.html", "/good.html"))
    server.route("/bad.html", page())
    server.route("/good.html", page())

    class Fragile(LinkSpider):
        async def parse(self, response: Response, ctx: Ctx[Item]) -> None:
            if response.url.endswith("/bad.html"):
                raise ValueError("cannot parse this page")
            await super().parse(response, ctx)

    items: list[Item] = []
    result = await builder.spider(Fragile(server.url("/")), on_item(items.append)).run_async()

    assert sorted(i.url.rsplit("/", 1)[1] for i in items) == ["", "good.html"]
    assert result.stats.errors == 1
    assert result.dead_letters == 1
    assert result.reason == "finished"


async def test_robots_txt_is_obeyed_by_default(server: LocalServer) -> None:
    from mocra_core import Mocra

    server.route(
        "/robots.txt",
        ServerResponse(body="User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
    )
    server.route("/", page("/private/x.html", "/public.html"))
    server.route("/public.html", page())
    server.route("/private/x.html", page())

    result = await Mocra.builder().spider(LinkSpider(server.url("/"))).run_async()

    assert server.hits["/private/x.html"] == 0
    assert server.hits["/public.html"] == 1
    assert server.hits["/robots.txt"] == 1
    assert result.stats.dropped["robots"] == 1


async def test_follow_keeps_method_headers_body_and_meta(builder: MocraBuilder, server: LocalServer) -> None:
    server.route("/", page())
    server.route("/api", ServerResponse(body='{"ok": true}', headers={"Content-Type": "application/json"}))
    seen: list[dict[str, Any]] = []

    class Api(Spider[dict[str, Any]]):
        name = "api"

        async def start(self, seeds: Seeds) -> None:
            seeds.get(server.url("/"), meta={"trail": ["start"]})

        async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
            req = Request(
                response.urljoin("/api"),
                method="POST",
                json={"q": 1},
                headers={"X-Token": "abc"},
                meta={"trail": [*response.meta["trail"], "api"]},
            )
            ctx.follow(req, callback=self.parse_api)

        async def parse_api(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
            seen.append({"meta": response.meta, "json": response.json()})

    await builder.spider(Api()).run_async()

    [api_call] = [r for r in server.requests if r.path == "/api"]
    assert api_call.method == "POST"
    assert json.loads(api_call.body) == {"q": 1}
    assert api_call.headers["x-token"] == "abc"
    assert seen == [{"meta": {"trail": ["start", "api"]}, "json": {"ok": True}}]


async def test_several_spiders_in_one_run_keep_their_own_items(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page("/a.html"))
    server.route("/a.html", page())

    class Other(LinkSpider):
        name = "other"

    first: list[Item] = []
    second: list[Item] = []
    result = (
        await builder.spider(LinkSpider(server.url("/")), on_item(first.append))
        .spider(Other(server.url("/")), on_item(second.append))
        .run_async()
    )

    assert len(first) == len(second) == 2
    assert result.stats.items == 4
    assert server.hits["/a.html"] == 2  # dedup is per spider


async def test_channel_sink_streams_items(builder: MocraBuilder, server: LocalServer) -> None:
    server.route("/", page("/a.html"))
    server.route("/a.html", page())
    sink, items = channel()
    got: list[Item] = []

    async def consume() -> None:
        async with items:
            async for item in items:
                got.append(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await builder.spider(LinkSpider(server.url("/")), sink).run_async()

    assert len(got) == 2


async def test_middlewares_drop_requests_and_transform_items(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page("/keep.html", "/skip.html"))
    server.route("/keep.html", page(title="keep"))
    server.route("/skip.html", page())

    class SkipSome:
        async def before_request(self, request: Request) -> Request | None:
            return None if "skip" in request.url else request

    class Shout:
        async def process_item(self, item: Item, response: Response) -> Item | None:
            return None if item.title == "t" else Item(item.url, item.status, item.title.upper())

    items: list[Item] = []
    result = (
        await builder.middleware(SkipSome())
        .middleware(Shout(), weight=10)
        .spider(LinkSpider(server.url("/")), on_item(items.append))
        .run_async()
    )

    assert server.hits["/skip.html"] == 0
    assert [i.title for i in items] == ["KEEP"]
    assert result.stats.dropped["middleware"] == 1
    assert result.stats.dropped["item_middleware"] == 1


async def test_a_failing_sink_is_retried_and_nothing_is_lost(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page("/a.html", "/b.html"))
    server.route("/a.html", page())
    server.route("/b.html", page())

    class Flaky:
        def __init__(self) -> None:
            self.failures = 2
            self.items: list[Any] = []

        async def open(self) -> None: ...

        async def write(self, items: Any) -> None:
            if self.failures:
                self.failures -= 1
                raise OSError("disk hiccup")
            self.items.extend(items)

        async def close(self) -> None: ...

    sink = Flaky()
    result = await builder.set("sink.retry_delay=0.01").spider(LinkSpider(server.url("/")), sink).run_async()

    assert len(sink.items) == 3
    assert result.ok


async def test_max_depth_and_invalid_links(builder: MocraBuilder, server: LocalServer) -> None:
    server.route("/", page("/1.html", "mailto:someone@example.com", "javascript:void(0)"))
    server.route("/1.html", page("/2.html"))
    server.route("/2.html", page())

    result = await builder.set("crawl.max_depth=1").spider(LinkSpider(server.url("/"))).run_async()

    assert server.hits["/2.html"] == 0
    assert result.stats.dropped["max_depth"] == 1
    assert result.reason == "finished"


async def test_max_pages_stops_the_crawl(builder: MocraBuilder, server: LocalServer) -> None:
    for n in range(50):
        server.route(f"/{n}.html", page(f"/{n + 1}.html"))

    result = (
        await builder.set("crawl.max_pages=5", "crawl.concurrency=1")
        .spider(LinkSpider(server.url("/0.html")))
        .run_async()
    )

    assert result.reason == "max_pages"
    assert result.stats.responses == 5


async def test_max_pages_holds_with_many_downloads_in_flight(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page(*(f"/{n}.html" for n in range(60))))
    for n in range(60):
        server.route(f"/{n}.html", page())

    result = (
        await builder.set("crawl.max_pages=20", "crawl.concurrency=16")
        .spider(LinkSpider(server.url("/")))
        .run_async()
    )

    assert result.reason == "max_pages"
    assert result.stats.requests == result.stats.responses == 20  # no worker starts past the budget
    assert sum(server.hits.values()) == 20


async def test_robots_crawl_delay_spaces_requests(server: LocalServer) -> None:
    from mocra_core import Mocra

    server.route(
        "/robots.txt",
        ServerResponse(body="User-agent: *\nCrawl-delay: 0.3\n", headers={"Content-Type": "text/plain"}),
    )
    server.route("/", page("/a.html", "/b.html"))
    server.route("/a.html", page())
    server.route("/b.html", page())

    result = await Mocra.builder().spider(LinkSpider(server.url("/"))).run_async()

    assert result.stats.responses == 3
    assert result.stats.elapsed >= 0.6  # three starts, at least 0.3 s apart


class CountingDownloader:
    """A downloader that wraps the default one and counts what it fetched."""

    def __init__(self, name: str) -> None:
        from mocra_core.download import HttpxDownloader

        self.name = name
        self.inner = HttpxDownloader(name=name)
        self.urls: list[str] = []

    async def download(self, request: Request) -> Response:
        self.urls.append(request.url)
        return await self.inner.download(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> CountingDownloader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def test_named_downloaders_per_spider_and_per_request(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page("/a.html"))
    server.route("/a.html", page())
    server.route("/other.html", page())
    special = CountingDownloader("special")
    other = CountingDownloader("other")

    class Special(LinkSpider):
        downloader = "special"

        async def start(self, seeds: Seeds) -> None:
            await super().start(seeds)
            seeds.add(Request(server.url("/other.html"), downloader="other"))

    result = (
        await builder.downloader(special, name="special")
        .downloader(other, name="other")
        .spider(Special(server.url("/")))
        .run_async()
    )

    assert sorted(u.rsplit("/", 1)[1] for u in special.urls) == ["", "a.html"]
    assert [u.rsplit("/", 1)[1] for u in other.urls] == ["other.html"]
    assert result.ok


def test_unknown_downloader_name_fails_at_build(builder: MocraBuilder) -> None:
    from mocra_core import ConfigError

    class Special(LinkSpider):
        downloader = "nope"

    with pytest.raises(ConfigError, match="no downloader named 'nope'"):
        builder.spider(Special("http://127.0.0.1:9/")).build()


async def test_shared_queue_without_shared_coordination_is_a_clear_error(builder: MocraBuilder) -> None:
    from mocra_core import ConfigError

    with pytest.raises(ConfigError, match="coordination.url"):
        await (
            builder.set("queue.url=kafka://127.0.0.1:9").spider(LinkSpider("http://127.0.0.1:9/")).run_async()
        )
