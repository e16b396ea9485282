"""A spider crawls from sitemaps: index, gzip, text, rules, lastmod, robots.txt; bad ones dead-lettered."""

from __future__ import annotations

import gzip
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, ClassVar

import anyio
import pytest

from mocra_core import ConfigError, Ctx, Mocra, MocraBuilder, Response, Spider, on_item
from mocra_core.testing import LocalServer, ServerResponse

pytestmark = pytest.mark.anyio

XML = {"Content-Type": "application/xml"}
REDIS_URL = "redis://127.0.0.1:6379/15"


def urlset(*pages: tuple[str, str | None], alternates: dict[str, str] | None = None) -> bytes:
    rows = []
    for loc, lastmod in pages:
        extra = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
        links = "".join(
            f'<xhtml:link rel="alternate" hreflang="{lang}" href="{href}"/>'
            for lang, href in (alternates or {}).items()
        )
        rows.append(f"<url><loc>{loc}</loc>{extra}{links}</url>")
    return (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">'
        f"{''.join(rows)}</urlset>"
    ).encode()


def index(*locs: str) -> bytes:
    rows = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</sitemapindex>'.encode()


class Pages(Spider[dict[str, str]]):
    """Emits each page's path and the callback that parsed it."""

    name = "pages"

    def __init__(self, *sitemaps: str, **attributes: Any) -> None:
        self.sitemap_urls = sitemaps  # type: ignore[misc]
        for key, value in attributes.items():
            setattr(self, key, value)

    async def parse(self, response: Response, ctx: Ctx[dict[str, str]]) -> None:
        ctx.emit({"path": response.url.partition("//")[2].partition("/")[2], "callback": "parse"})

    async def parse_product(self, response: Response, ctx: Ctx[dict[str, str]]) -> None:
        ctx.emit({"path": response.url.partition("//")[2].partition("/")[2], "callback": "parse_product"})


def site(server: LocalServer) -> None:
    """/index.xml -> /s1.xml.gz (gzip), /s2.txt (plain text); pages /p/1, /p/2 (dated), /product/3, /t/4."""
    url = server.url
    server.route("/index.xml", ServerResponse(body=index(url("/s1.xml.gz"), url("/s2.txt")), headers=XML))
    server.route(
        "/s1.xml.gz",
        ServerResponse(
            body=gzip.compress(
                urlset(
                    (url("/p/1"), "2023-01-01"), (url("/p/2"), "2024-06-01T12:00Z"), (url("/product/3"), None)
                )
            ),
            headers={"Content-Type": "application/gzip"},
        ),
    )
    server.route("/s2.txt", ServerResponse(body=url("/t/4") + "\n", headers={"Content-Type": "text/plain"}))
    for path in ("/p/1", "/p/2", "/product/3", "/t/4", "/de/p/2"):
        server.route(path, ServerResponse(body=f"<title>{path}</title>"))


async def crawl(builder: MocraBuilder, spider: Spider[Any]) -> tuple[Any, list[dict[str, str]]]:
    items: list[dict[str, str]] = []
    result = await builder.spider(spider, on_item(items.append)).run_async()
    return result, sorted(items, key=lambda item: item["path"])


async def test_index_to_gzip_and_text_sitemaps_to_pages_each_fetched_once(
    builder: MocraBuilder, server: LocalServer
) -> None:
    site(server)
    result, items = await crawl(builder, Pages(server.url("/index.xml")))
    assert [item["path"] for item in items] == ["p/1", "p/2", "product/3", "t/4"]
    for path in ("/index.xml", "/s1.xml.gz", "/s2.txt", "/p/1", "/product/3", "/t/4"):
        assert server.hits[path] == 1, path
    assert result.dead_letters == 0


async def test_rules_pick_callbacks_and_skip_pages_matching_none(
    builder: MocraBuilder, server: LocalServer
) -> None:
    site(server)
    spider = Pages(
        server.url("/index.xml"), sitemap_rules=[(r"/product/", "parse_product"), (r"/p/", "parse")]
    )
    _, items = await crawl(builder, spider)
    assert items == [
        {"path": "p/1", "callback": "parse"},
        {"path": "p/2", "callback": "parse"},
        {"path": "product/3", "callback": "parse_product"},
    ]
    assert server.hits["/t/4"] == 0


async def test_follow_and_lastmod_filter(builder: MocraBuilder, server: LocalServer) -> None:
    site(server)
    since = datetime(2024, 1, 1, tzinfo=UTC)
    spider = Pages(server.url("/index.xml"), sitemap_follow=[r"\.gz$"], sitemap_since=since)
    _, items = await crawl(builder, spider)
    assert [item["path"] for item in items] == ["p/2", "product/3"]  # undated pages are kept
    assert server.hits["/s2.txt"] == 0 and server.hits["/p/1"] == 0


async def test_alternate_links_when_asked(builder: MocraBuilder, server: LocalServer) -> None:
    site(server)
    server.route(
        "/alt.xml",
        ServerResponse(body=urlset((server.url("/p/2"), None), alternates={"de": server.url("/de/p/2")})),
    )
    _, without = await crawl(builder, Pages(server.url("/alt.xml")))
    _, with_alternates = await crawl(
        Mocra.builder().set("crawl.obey_robots=false"),
        Pages(server.url("/alt.xml"), sitemap_alternate_links=True),
    )
    assert [item["path"] for item in without] == ["p/2"]
    assert [item["path"] for item in with_alternates] == ["de/p/2", "p/2"]


async def test_robots_txt_sitemap_lines(builder: MocraBuilder, server: LocalServer) -> None:
    site(server)
    server.route("/robots.txt", ServerResponse(body=f"User-agent: *\nSitemap: {server.url('/s2.txt')}\n"))
    _, items = await crawl(builder, Pages(server.url("/robots.txt")))
    assert [item["path"] for item in items] == ["t/4"]


async def test_a_sitemap_disallowed_by_robots_txt_is_not_fetched(server: LocalServer) -> None:
    site(server)
    server.route("/robots.txt", ServerResponse(body="User-agent: *\nDisallow: /s1\n"))
    result, items = await crawl(
        Mocra.builder().set("crawl.obey_robots=true"), Pages(server.url("/index.xml"))
    )
    assert [item["path"] for item in items] == ["t/4"]
    assert server.hits["/s1.xml.gz"] == 0
    assert result.stats.dropped["robots"] == 1


async def test_bad_sitemaps_are_dead_lettered_with_their_reason_and_the_others_crawled(
    builder: MocraBuilder, server: LocalServer
) -> None:
    site(server)
    broken = urlset((server.url("/p/1"), None), (server.url("/p/2"), None)).replace(
        b"</url><url>", b"</url><url><"
    )
    server.route("/broken.xml", ServerResponse(body=broken))
    server.route("/down.xml", ServerResponse(503, "busy"))
    server.route("/bad.xml", ServerResponse(body=index(server.url("/missing.xml"), server.url("/s2.txt"))))
    spider = Pages(server.url("/broken.xml"), server.url("/down.xml"), server.url("/bad.xml"))
    result, items = await crawl(builder.set("queue.max_attempts=2"), spider)
    assert [item["path"] for item in items] == ["p/1", "t/4"]  # the page before the error, and the good one
    reasons = sorted(failure.reason for failure in result.failures)
    assert len(reasons) == 3
    assert reasons[0].startswith(f"sitemap {server.url('/broken.xml')!r}: malformed XML")
    assert reasons[1].startswith(f"sitemap {server.url('/down.xml')!r}: HTTP 503")  # + "on attempt 2 of 2"
    assert reasons[2] == f"sitemap {server.url('/missing.xml')!r}: HTTP 404"
    assert server.hits["/down.xml"] == 2  # retried, then dead-lettered by the queue
    assert server.hits["/missing.xml"] == 1  # a 404 is not retried
    assert [failure.attempt for failure in result.failures if "missing" in failure.reason] == [1]
    assert f"sitemap {server.url('/missing.xml')} (pages)" in {failure.url for failure in result.failures}


async def test_an_index_listing_itself_is_read_once(builder: MocraBuilder, server: LocalServer) -> None:
    site(server)
    server.route("/loop.xml", ServerResponse(body=index(server.url("/loop.xml"), server.url("/s2.txt"))))
    _, items = await crawl(builder, Pages(server.url("/loop.xml")))
    assert [item["path"] for item in items] == ["t/4"]
    assert server.hits["/loop.xml"] == 1


class BadRule(Pages):
    sitemap_rules: ClassVar = [(r"/p/", "parse_missing")]


async def test_a_rule_naming_no_callback_fails_at_start(builder: MocraBuilder) -> None:
    with pytest.raises(ConfigError, match=r"pages\.sitemap_rules: 'parse_missing'"):
        await builder.spider(BadRule("http://127.0.0.1:9/s.xml")).run_async()


@pytest.fixture
def redis_job() -> Iterator[str]:
    """A fresh job name; its keys on Redis are deleted afterwards."""
    import redis

    job = f"sitemaps{uuid.uuid4().hex[:12]}"
    yield job
    with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
        for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
            client.delete(key)


async def test_two_workers_on_redis_share_the_sitemaps(server: LocalServer, redis_job: str) -> None:
    site(server)
    settings = ("crawl.obey_robots=false", f"queue.url={REDIS_URL}", f"crawl.job={redis_job}")
    items: list[dict[str, str]] = []
    async with anyio.create_task_group() as tg:
        for _ in range(2):
            builder = (
                Mocra.builder().set(*settings).spider(Pages(server.url("/index.xml")), on_item(items.append))
            )
            tg.start_soon(builder.run_async)
    assert sorted(item["path"] for item in items) == ["p/1", "p/2", "product/3", "t/4"]
    for path in ("/index.xml", "/s1.xml.gz", "/s2.txt"):
        assert server.hits[path] == 1, path
