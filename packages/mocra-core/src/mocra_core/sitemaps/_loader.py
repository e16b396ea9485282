"""`walk_sitemaps`: fetch a sitemap tree with the caller's httpx client, streaming, yielding pages."""

from __future__ import annotations

import logging
from collections import deque
from contextlib import aclosing
from typing import TYPE_CHECKING

import httpx

from ._entries import NestedSitemap, SitemapFailure, SitemapPage
from ._errors import SitemapError
from ._read import read_sitemap
from ._walk import SitemapWalk

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from ._entries import SitemapEntry

__all__ = ("walk_sitemaps",)

logger = logging.getLogger(__name__)


async def walk_sitemaps(
    client: httpx.AsyncClient, urls: Iterable[str], walk: SitemapWalk | None = None
) -> AsyncIterator[SitemapPage | SitemapFailure]:
    """Walk sitemap trees from `urls`: yield their pages as they are parsed, and a record per failure.

    Each sitemap is streamed with `client.stream("GET", ...)` (the client decides proxies, headers,
    timeouts, redirects) and parsed as it arrives, so memory stays bounded and a consumer can queue
    each page at once. Indexes are followed depth-first after they are read, as `walk` allows; each
    sitemap is fetched once per walk. A sitemap that fails (HTTP status other than 2xx, transport error,
    malformed, truncated, over the size cap, an index that lists one of its own ancestors) yields a
    `SitemapFailure` with the reason, after the pages it gave before failing, and the walk goes on.
    Close the iterator (`contextlib.aclosing`) when leaving it early: that closes the open response.

    Args:
        client: The client to fetch with.
        urls: The starting sitemaps (from a spider, or `sitemaps_in_robots`).
        walk: Filters and limits (default: `SitemapWalk()`).

    Example:
        >>> import anyio, httpx
        >>> from mocra_core.testing import LocalServer, ServerResponse
        >>> body = "<urlset><url><loc>https://example.com/a</loc></url></urlset>"
        >>> server = LocalServer({"/sitemap.xml": ServerResponse(body=body)})
        >>> async def main() -> list[str]:
        ...     async with server.running() as base, httpx.AsyncClient() as client:
        ...         return [entry.url async for entry in walk_sitemaps(client, [base + "/sitemap.xml"])]
        >>> anyio.run(main)
        ['https://example.com/a']
    """
    walk = walk or SitemapWalk()
    pending: deque[tuple[str, tuple[str, ...]]] = deque()  # (url, the indexes above it)
    known: set[str] = set()
    for url in urls:
        if _key(url) not in known:
            known.add(_key(url))
            pending.append((url, ()))
    while pending:
        url, chain = pending.popleft()
        nested: list[NestedSitemap] = []
        async for item in _read(client, url, walk, parent=chain[-1] if chain else None):
            if isinstance(item, NestedSitemap):
                nested.append(item)
            else:
                yield item
        below = (*chain, url)
        follow: list[tuple[str, tuple[str, ...]]] = []
        for sitemap in nested:
            verdict = _admit(sitemap, below, known, walk)
            if isinstance(verdict, SitemapFailure):
                yield verdict
            elif verdict:
                follow.append((sitemap.url, below))
        pending.extendleft(reversed(follow))


def _admit(
    sitemap: NestedSitemap, below: tuple[str, ...], known: set[str], walk: SitemapWalk
) -> bool | SitemapFailure:
    """Whether to fetch `sitemap` (then it is marked known), or a failure: a loop, too deep, too many."""
    key = _key(sitemap.url)
    if key in {_key(url) for url in below}:
        parent = below[-2] if len(below) > 1 else None
        return SitemapFailure(
            url=sitemap.sitemap, reason=f"loop: lists {sitemap.url!r}, an index above it", parent=parent
        )
    if key in known or not walk.follows(sitemap):
        logger.debug("sitemap %s skipped (seen, or not followed)", sitemap.url)
        return False
    if len(below) > walk.max_depth:
        reason = f"nested deeper than max_depth={walk.max_depth}"
        return SitemapFailure(url=sitemap.url, reason=reason, parent=sitemap.sitemap)
    if len(known) >= walk.max_sitemaps:
        reason = f"more than max_sitemaps={walk.max_sitemaps} in one walk"
        return SitemapFailure(url=sitemap.url, reason=reason, parent=sitemap.sitemap)
    known.add(key)
    return True


async def _read(
    client: httpx.AsyncClient, url: str, walk: SitemapWalk, *, parent: str | None
) -> AsyncIterator[SitemapPage | NestedSitemap | SitemapFailure]:
    """Stream one sitemap: its kept pages (and alternates), its nested sitemaps, then a failure if any."""
    try:
        async with aclosing(read_sitemap(client, url, max_bytes=walk.max_bytes)) as entries:
            async for entry in entries:
                for item in _kept((entry,), walk):
                    yield item
    except SitemapError as exc:
        yield SitemapFailure(url=url, reason=exc.problem, parent=parent)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        yield SitemapFailure(url=url, reason=f"{type(exc).__name__}: {exc}", parent=parent)


def _kept(entries: Iterable[SitemapEntry], walk: SitemapWalk) -> Iterable[SitemapPage | NestedSitemap]:
    for entry in entries:
        if isinstance(entry, NestedSitemap):
            yield entry
            continue
        if walk.keeps_page(entry):
            yield entry
        if walk.alternates:
            for alternate in entry.alternates:
                page = SitemapPage(
                    url=alternate.url,
                    sitemap=entry.sitemap,
                    lastmod=entry.lastmod,
                    changefreq=entry.changefreq,
                    priority=entry.priority,
                    alternate_of=entry.url,
                )
                if alternate.url != entry.url and walk.keeps_page(page):
                    yield page


def _key(url: str) -> str:
    """A sitemap's identity within a walk: its URL without the fragment."""
    return url.partition("#")[0]
