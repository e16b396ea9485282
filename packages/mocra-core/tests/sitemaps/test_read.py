"""read_sitemap: one sitemap, streamed, nothing followed; failures raised after the entries before them."""

from __future__ import annotations

import gzip

import httpx
import pytest

from mocra_core.sitemaps import NestedSitemap, SitemapError, SitemapPage, read_sitemap
from mocra_core.testing import LocalServer, ServerResponse

pytestmark = pytest.mark.anyio

URLSET = (
    b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    b"<url><loc>https://example.com/a</loc></url><url><loc>https://example.com/b</loc></url></urlset>"
)


async def test_an_index_yields_its_sitemaps_without_fetching_them() -> None:
    rows = b"<sitemap><loc>/s1.xml</loc></sitemap><sitemap><loc>/s2.xml</loc></sitemap>"
    body = b"<sitemapindex>" + rows + b"</sitemapindex>"
    server = LocalServer({"/index.xml": ServerResponse(body=body)})
    async with server.running() as base, httpx.AsyncClient() as client:
        entries = [entry async for entry in read_sitemap(client, base + "/index.xml")]
    assert [(type(e), e.url) for e in entries] == [(NestedSitemap, "/s1.xml"), (NestedSitemap, "/s2.xml")]
    assert dict(server.hits) == {"/index.xml": 1}


async def test_a_gzip_urlset_yields_pages() -> None:
    server = LocalServer({"/s.xml.gz": ServerResponse(body=gzip.compress(URLSET))})
    async with server.running() as base, httpx.AsyncClient() as client:
        entries = [entry async for entry in read_sitemap(client, base + "/s.xml.gz")]
    assert [(type(e), e.url) for e in entries] == [
        (SitemapPage, "https://example.com/a"),
        (SitemapPage, "https://example.com/b"),
    ]


@pytest.mark.parametrize(("status", "retryable"), [(404, False), (410, False), (503, True), (429, True)])
async def test_a_refused_sitemap_names_its_status(status: int, retryable: bool) -> None:
    server = LocalServer({"/s.xml": ServerResponse(status=status, body=URLSET)})
    async with server.running() as base, httpx.AsyncClient() as client:
        with pytest.raises(SitemapError) as caught:
            [entry async for entry in read_sitemap(client, base + "/s.xml")]
    assert (caught.value.status, caught.value.is_retryable) == (status, retryable)
    assert caught.value.problem == f"HTTP {status}"


async def test_entries_before_a_failure_come_first_then_the_error_without_them() -> None:
    server = LocalServer({"/s.xml": ServerResponse(body=URLSET[:-30])})  # truncated after the first page
    got: list[str] = []
    async with server.running() as base, httpx.AsyncClient() as client:
        with pytest.raises(SitemapError) as caught:
            async for entry in read_sitemap(client, base + "/s.xml"):
                got.append(entry.url)
    assert got == ["https://example.com/a"]
    assert caught.value.entries == ()  # delivered already: a caller does not deliver them twice
    assert caught.value.status is None and not caught.value.is_retryable
    assert caught.value.problem.startswith("malformed XML")


async def test_a_transport_error_is_httpx_s() -> None:
    server = LocalServer()
    async with server.running() as base:
        url = base + "/s.xml"
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            [entry async for entry in read_sitemap(client, url)]
