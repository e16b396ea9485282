"""What sitemaps yield: pages (`SitemapPage`), nested sitemaps (`NestedSitemap`), a walk's failures."""

from __future__ import annotations

from datetime import datetime  # noqa: TC003 - msgspec reads the annotations at runtime

import msgspec

__all__ = ("Alternate", "NestedSitemap", "SitemapEntry", "SitemapFailure", "SitemapPage")


class Alternate(msgspec.Struct, frozen=True):
    """An `<xhtml:link rel="alternate" hreflang=... href=...>` of a page: the same page in another language.

    Example:
        >>> Alternate("https://example.com/de/", "de")
        Alternate(url='https://example.com/de/', hreflang='de')
    """

    url: str
    hreflang: str | None = None


class SitemapPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page listed by a `<urlset>` (or a line of a plain-text sitemap).

    `lastmod` is timezone-aware (a value without a zone is taken as UTC) or `None` when absent or not a W3C
    datetime; `priority` is `None` when absent or not a number. `sitemap` is the URL of the sitemap that
    listed the page; `alternate_of` is set when the loader yields an alternate link as a page of its own.

    Example:
        >>> page = SitemapPage(url="https://example.com/a", sitemap="https://example.com/sitemap.xml")
        >>> page.url, page.lastmod, page.alternates
        ('https://example.com/a', None, ())
    """

    url: str
    sitemap: str
    lastmod: datetime | None = None
    changefreq: str | None = None
    priority: float | None = None
    alternates: tuple[Alternate, ...] = ()
    alternate_of: str | None = None


class NestedSitemap(msgspec.Struct, frozen=True, kw_only=True):
    """A sitemap listed by a `<sitemapindex>`; `sitemap` is the index that listed it.

    Example:
        >>> nested = NestedSitemap(url="https://example.com/s1.xml.gz", sitemap="https://example.com/index.xml")
        >>> nested.url, nested.lastmod
        ('https://example.com/s1.xml.gz', None)
    """

    url: str
    sitemap: str
    lastmod: datetime | None = None


SitemapEntry = SitemapPage | NestedSitemap
"""What `SitemapParser` returns: a page of a `<urlset>` or a sitemap of a `<sitemapindex>`."""


class SitemapFailure(msgspec.Struct, frozen=True, kw_only=True):
    """A sitemap the walk could not read: what an engine dead-letters, with `reason`.

    `url` is the sitemap that failed; `parent` the index that listed it (`None` for a starting URL). The
    pages it listed before the failure were yielded before this record.

    Example:
        >>> failure = SitemapFailure(url="https://example.com/s.xml", reason="HTTP 404", parent=None)
        >>> failure.reason
        'HTTP 404'
    """

    url: str
    reason: str
    parent: str | None = None
