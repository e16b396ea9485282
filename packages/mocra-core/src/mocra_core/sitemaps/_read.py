"""`read_sitemap`: stream one sitemap with the caller's httpx client and yield its entries as they parse."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.lowlevel

from ._errors import SitemapError
from ._parser import DEFAULT_MAX_BYTES, SitemapParser

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    import httpx

    from ._entries import SitemapEntry

__all__ = ("read_sitemap",)

_RAW_ENCODINGS = frozenset({"", "identity", "gzip", "x-gzip"})  # what the parser decodes itself, capped


async def read_sitemap(
    client: httpx.AsyncClient, url: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> AsyncGenerator[SitemapEntry, None]:
    """Fetch one sitemap with `client.stream("GET", url)` and yield its pages and nested sitemaps.

    Entries come out as the bytes arrive, so memory stays bounded whatever the file's size, and nothing
    is followed: a `NestedSitemap` is only yielded (`walk_sitemaps` follows them; the engine queues a
    task per nested sitemap). The entries parsed before a failure are yielded before it is raised. Close
    the iterator (`contextlib.aclosing`) when leaving it early: that closes the open response.

    Args:
        client: The client to fetch with (it decides proxies, headers, timeouts, redirects).
        url: The sitemap's URL.
        max_bytes: Cap on the sitemap's decoded bytes.

    Raises:
        SitemapError: a status other than 2xx (`status` set; `is_retryable` for 5xx, 408, 429), or a
            malformed, truncated or too large sitemap.
        httpx.HTTPError: the transport failed (connection refused, timeout, ...).
        httpx.InvalidURL: `url` cannot be fetched.

    Example:
        >>> import anyio, httpx
        >>> from mocra_core.testing import LocalServer, ServerResponse
        >>> body = "<sitemapindex><sitemap><loc>https://example.com/s1.xml</loc></sitemap></sitemapindex>"
        >>> server = LocalServer({"/index.xml": ServerResponse(body=body)})
        >>> async def main() -> list[str]:
        ...     async with server.running() as base, httpx.AsyncClient() as client:
        ...         entries = read_sitemap(client, base + "/index.xml")
        ...         return [type(entry).__name__ + " " + entry.url async for entry in entries]
        >>> anyio.run(main)
        ['NestedSitemap https://example.com/s1.xml']
    """
    parser = SitemapParser(url, max_bytes=max_bytes)
    try:
        async with client.stream("GET", url) as response:
            if not response.is_success:
                raise SitemapError(url, f"HTTP {response.status_code}", status=response.status_code)
            encoding = response.headers.get("content-encoding", "").strip().lower()
            chunks = response.aiter_raw() if encoding in _RAW_ENCODINGS else response.aiter_bytes()
            async for chunk in chunks:
                for entry in parser.feed(chunk):
                    yield entry
                await anyio.lowlevel.checkpoint()  # a fast local server never makes the loop wait
        for entry in parser.close():
            yield entry
    except SitemapError as exc:
        for entry in exc.entries:
            yield entry
        raise SitemapError(exc.url, exc.problem, status=exc.status) from None
