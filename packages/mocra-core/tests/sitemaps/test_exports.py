"""The sitemaps package's public surface is a decision: pin it."""

from __future__ import annotations

import mocra_core.sitemaps as sitemaps


def test_all_is_pinned() -> None:
    assert sitemaps.__all__ == (
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
    assert sitemaps.SitemapParser.__module__ == "mocra_core.sitemaps"


def test_sitemap_error_is_a_mocra_error() -> None:
    from mocra_core._errors import MocraError

    assert issubclass(sitemaps.SitemapError, MocraError)
