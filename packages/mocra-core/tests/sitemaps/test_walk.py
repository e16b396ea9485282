"""walk_sitemaps on a real local server: indexes, gzip, filters, failures, loops, 50 MB at bounded memory."""

from __future__ import annotations

import gzip
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from mocra_core.sitemaps import SitemapFailure, SitemapPage, SitemapWalk, walk_sitemaps
from mocra_core.testing import LocalServer, ServerResponse

pytestmark = pytest.mark.anyio

XML = {"Content-Type": "application/xml"}


def urlset(*pages: tuple[str, str | None], alternates: dict[str, str] | None = None) -> bytes:
    rows = []
    for loc, lastmod in pages:
        extra = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
        links = "".join(
            f'<xhtml:link rel="alternate" hreflang="{lang}" href="{href}"/>'
            for lang, href in (alternates or {}).items()
            if loc.endswith("/en")
        )
        rows.append(f"<url><loc>{loc}</loc>{extra}{links}</url>")
    return (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        f'xmlns:xhtml="http://www.w3.org/1999/xhtml">{"".join(rows)}</urlset>'
    ).encode()


def index(*locs: str, lastmod: str | None = None) -> bytes:
    extra = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    rows = "".join(f"<sitemap><loc>{loc}</loc>{extra}</sitemap>" for loc in locs)
    return f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</sitemapindex>'.encode()


async def walk_all(
    server: LocalServer, *paths: str, walk: SitemapWalk | None = None
) -> list[SitemapPage | SitemapFailure]:
    async with server.running() as base, httpx.AsyncClient() as client:
        return [item async for item in walk_sitemaps(client, [base + p for p in paths], walk)]


def pages(items: list[SitemapPage | SitemapFailure]) -> list[str]:
    return [item.url for item in items if isinstance(item, SitemapPage)]


def failures(items: list[SitemapPage | SitemapFailure]) -> list[SitemapFailure]:
    return [item for item in items if isinstance(item, SitemapFailure)]


def tree() -> LocalServer:
    server = LocalServer()
    base = lambda: server.base_url  # noqa: E731 - the port is known once the server listens

    async def root(_: object) -> ServerResponse:
        return ServerResponse(body=index(base() + "/s1.xml.gz", base() + "/nested.xml"), headers=XML)

    async def nested(_: object) -> ServerResponse:
        return ServerResponse(body=index(base() + "/s2.txt", base() + "/s1.xml.gz"), headers=XML)

    server.route("/index.xml", root)  # type: ignore[arg-type]
    server.route("/nested.xml", nested)  # type: ignore[arg-type]
    old_and_new = urlset(
        ("https://example.com/old", "2023-01-01"), ("https://example.com/new", "2024-06-01T12:00Z")
    )
    server.route(
        "/s1.xml.gz",
        ServerResponse(body=gzip.compress(old_and_new), headers={"Content-Type": "application/gzip"}),
    )
    server.route(
        "/s2.txt",
        ServerResponse(
            body="https://example.com/t1\nhttps://example.com/t2\n", headers={"Content-Type": "text/plain"}
        ),
    )
    return server


async def test_index_to_gzip_sitemap_to_pages_each_fetched_once() -> None:
    server = tree()
    items = await walk_all(server, "/index.xml")
    assert pages(items) == [
        "https://example.com/old",
        "https://example.com/new",
        "https://example.com/t1",
        "https://example.com/t2",
    ]
    assert failures(items) == []
    assert dict(server.hits) == {"/index.xml": 1, "/s1.xml.gz": 1, "/nested.xml": 1, "/s2.txt": 1}


async def test_lastmod_window_and_undated_pages() -> None:
    since = datetime(2024, 1, 1, tzinfo=UTC)
    assert pages(await walk_all(tree(), "/index.xml", walk=SitemapWalk(since=since))) == [
        "https://example.com/new",
        "https://example.com/t1",
        "https://example.com/t2",
    ]
    walk = SitemapWalk(since=since, until=datetime(2024, 6, 1, 11, tzinfo=UTC), keep_undated=False)
    assert pages(await walk_all(tree(), "/index.xml", walk=walk)) == []
    walk = SitemapWalk(until=datetime(2024, 6, 1, 12, tzinfo=UTC), keep_undated=False)
    assert pages(await walk_all(tree(), "/index.xml", walk=walk)) == [
        "https://example.com/old",
        "https://example.com/new",
    ]


async def test_an_index_lastmod_before_since_skips_the_sitemap() -> None:
    server = LocalServer()
    server.route("/i.xml", ServerResponse(body=index("http://127.0.0.1:1/never.xml", lastmod="2020-01-01")))
    items = await walk_all(server, "/i.xml", walk=SitemapWalk(since=datetime(2024, 1, 1, tzinfo=UTC)))
    assert items == []


async def test_follow_and_keep_rules() -> None:
    server = tree()
    walk = SitemapWalk(
        follow=lambda url: not url.endswith(".txt"), keep=lambda url: url.endswith(("/new", "/t1"))
    )
    assert pages(await walk_all(server, "/index.xml", walk=walk)) == ["https://example.com/new"]
    assert server.hits["/s2.txt"] == 0


async def test_alternates_when_asked() -> None:
    body = urlset(
        ("https://example.com/en", "2024-02-02"),
        alternates={"de": "https://example.com/de", "en": "https://example.com/en"},
    )
    server = LocalServer({"/s.xml": ServerResponse(body=body, headers=XML)})
    [page] = await walk_all(server, "/s.xml")
    assert isinstance(page, SitemapPage) and [a.hreflang for a in page.alternates] == ["de", "en"]
    items = await walk_all(server, "/s.xml", walk=SitemapWalk(alternates=True))
    assert [(p.url, p.alternate_of) for p in items if isinstance(p, SitemapPage)] == [
        ("https://example.com/en", None),
        ("https://example.com/de", "https://example.com/en"),
    ]


async def test_gz_file_served_with_content_encoding_gzip() -> None:
    """A .gz sitemap sent with Content-Encoding: gzip: two layers of gzip on the wire, found by bytes."""
    body = gzip.compress(gzip.compress(urlset(("https://example.com/x", None))))
    server = LocalServer({"/s.xml.gz": ServerResponse(body=body, headers={"Content-Encoding": "gzip"})})
    assert pages(await walk_all(server, "/s.xml.gz")) == ["https://example.com/x"]


async def test_a_failing_sitemap_is_reported_and_the_others_go_on() -> None:
    server = LocalServer()
    good = urlset(("https://example.com/ok", None))
    broken = urlset(("https://example.com/before", None), ("https://example.com/after", None)).replace(
        b"</url><url>", b"</url><url><"
    )
    server.route("/good.xml", ServerResponse(body=good))
    server.route("/broken.xml", ServerResponse(body=broken))
    server.route("/truncated.xml", ServerResponse(body=good[:-20]))
    server.route("/i.xml", ServerResponse(body=index("/relative.xml")))  # relative: no host to fetch
    items = await walk_all(server, "/missing.xml", "/broken.xml", "/truncated.xml", "/i.xml", "/good.xml")
    assert pages(items) == ["https://example.com/before", "https://example.com/ok"]
    reasons = {f.url.rpartition("/")[2]: f.reason for f in failures(items)}
    assert reasons["missing.xml"] == "HTTP 404"
    assert reasons["broken.xml"].startswith("malformed XML: not well-formed")
    assert reasons["truncated.xml"].startswith("malformed XML")
    assert reasons["relative.xml"].startswith("UnsupportedProtocol")
    assert [f.parent for f in failures(items) if f.url == "/relative.xml"] == [server.url("/i.xml")]


async def test_loops_are_reported_and_nothing_is_fetched_twice() -> None:
    server = LocalServer()

    async def a(_: object) -> ServerResponse:
        return ServerResponse(body=index(server.url("/b.xml"), server.url("/a.xml#self")))

    async def b(_: object) -> ServerResponse:
        return ServerResponse(body=index(server.url("/a.xml"), server.url("/p.xml")))

    server.route("/a.xml", a)  # type: ignore[arg-type]
    server.route("/b.xml", b)  # type: ignore[arg-type]
    server.route("/p.xml", ServerResponse(body=urlset(("https://example.com/p", None))))
    items = await walk_all(server, "/a.xml")
    assert pages(items) == ["https://example.com/p"]
    assert sorted((f.url, f.reason.partition(":")[0]) for f in failures(items)) == [
        (server.url("/a.xml"), "loop"),
        (server.url("/b.xml"), "loop"),
    ]
    assert dict(server.hits) == {"/a.xml": 1, "/b.xml": 1, "/p.xml": 1}


async def test_depth_limit() -> None:
    server = LocalServer()
    for level in range(4):
        server.route(
            f"/l{level}.xml",
            ServerResponse(body=index(f"http://127.0.0.1:1/x{level}.xml") if level == 3 else b""),
        )

    async def chain(request: object) -> ServerResponse:
        level = int(request.path[2])  # type: ignore[attr-defined]
        return ServerResponse(body=index(server.url(f"/l{level + 1}.xml")))

    for level in range(3):
        server.route(f"/l{level}.xml", chain)  # type: ignore[arg-type]
    items = await walk_all(server, "/l0.xml", walk=SitemapWalk(max_depth=2))
    [failure] = failures(items)
    assert (failure.url, failure.reason) == (server.url("/l3.xml"), "nested deeper than max_depth=2")
    assert server.hits["/l3.xml"] == 0


def big_urlset(target_bytes: int) -> Iterator[bytes]:
    """A urlset of about `target_bytes`: one 200-page block made once and sent again and again."""
    yield b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
    row = (
        "<url><loc>https://example.com/catalogue/section-{s}/product-{i}-" + "x" * 600 + "</loc>"
        "<lastmod>2024-05-{d:02d}T10:00:00+00:00</lastmod><changefreq>weekly</changefreq><priority>0.5</priority>"
        '<xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/product-{i}"/></url>\n'
    )
    block = "".join(row.format(s=i % 50, i=i, d=i % 28 + 1) for i in range(200)).encode()
    for _ in range(target_bytes // len(block) + 1):
        yield block
    yield b"</urlset>\n"


async def test_a_50_mb_sitemap_streams_at_bounded_memory() -> None:
    size = 50 * 1024 * 1024
    server = LocalServer()

    async def serve(_: object) -> ServerResponse:
        return ServerResponse(chunks=big_urlset(size), headers=XML)

    server.route("/big.xml", serve)  # type: ignore[arg-type]
    count, last = 0, ""
    tracemalloc.start()
    try:
        async with server.running() as base, httpx.AsyncClient() as client:
            async for item in walk_sitemaps(client, [base + "/big.xml"]):
                assert isinstance(item, SitemapPage)
                count, last = count + 1, item.url
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count > 60_000 and last.startswith("https://example.com/catalogue/")
    assert peak < 10 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB while streaming a {size / 1e6:.0f} MB sitemap"
    print(f"50 MB sitemap: {count} pages, tracemalloc peak {peak / 1e6:.2f} MB")
