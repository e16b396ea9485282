"""Sitemaps: a streaming parser and a loader that walks sitemap trees.

`SitemapParser` takes bytes as they arrive (gzip or not, XML or plain text) and returns each
`SitemapPage` or `NestedSitemap` as soon as it is complete, at bounded memory; `walk_sitemaps` fetches
a tree of them with the caller's `httpx.AsyncClient`, following indexes as a `SitemapWalk` allows, and
yields pages and a `SitemapFailure` per sitemap it could not read. `sitemaps_in_robots` reads the
`Sitemap:` lines of a robots.txt; `parse_w3c_datetime` the `<lastmod>` format. `read_sitemap` streams
one sitemap without following it (what the engine runs per sitemap task).
"""

from __future__ import annotations

from ._dates import parse_w3c_datetime
from ._entries import Alternate, NestedSitemap, SitemapEntry, SitemapFailure, SitemapPage
from ._errors import SitemapError
from ._loader import walk_sitemaps
from ._parser import DEFAULT_MAX_BYTES, SitemapParser
from ._read import read_sitemap
from ._robots import sitemaps_in_robots
from ._walk import SitemapWalk

__all__ = (
    "DEFAULT_MAX_BYTES",
    "Alternate",
    "NestedSitemap",
    "SitemapEntry",
    "SitemapError",
    "SitemapFailure",
    "SitemapPage",
    "SitemapParser",
    "SitemapWalk",
    "parse_w3c_datetime",
    "read_sitemap",
    "sitemaps_in_robots",
    "walk_sitemaps",
)

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith(__name__ + "."):
        _obj.__module__ = __name__
