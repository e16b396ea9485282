"""`SitemapWalk`: which sitemaps and pages a walk of a sitemap tree keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._parser import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from ._entries import NestedSitemap, SitemapPage

__all__ = ("SitemapWalk",)


@dataclass(frozen=True, kw_only=True)
class SitemapWalk:
    """What `walk_sitemaps` follows and yields.

    A page is yielded when `keep(url)` says so and its `lastmod` is within `since`..`until` (both
    inclusive, timezone-aware); a page without a `lastmod` is kept unless `keep_undated` is false. A
    nested sitemap is followed when `follow(url)` says so, it is at most `max_depth` indexes below a
    starting URL, and its own `lastmod` (when given) is not before `since` (a sitemap not changed since
    then lists no page changed since then). With `alternates`, each page's alternate links are yielded
    as pages too (`alternate_of` set), through the same filters.

    Args:
        since: Oldest `lastmod` kept.
        until: Newest `lastmod` kept.
        keep_undated: Keep pages without a `lastmod` when `since` or `until` is set.
        follow: Which nested sitemaps to fetch (default: all).
        keep: Which page URLs to yield (default: all).
        alternates: Yield alternate links as pages.
        max_depth: How many levels of indexes below a starting URL are followed.
        max_bytes: Cap on each sitemap's decoded bytes.
        max_sitemaps: Most sitemaps fetched in one walk.

    Example:
        >>> from datetime import UTC, datetime
        >>> walk = SitemapWalk(since=datetime(2024, 1, 1, tzinfo=UTC), keep=lambda url: "/blog/" in url)
        >>> walk.max_depth, walk.alternates
        (3, False)
    """

    since: datetime | None = None
    until: datetime | None = None
    keep_undated: bool = True
    follow: Callable[[str], bool] | None = None
    keep: Callable[[str], bool] | None = None
    alternates: bool = False
    max_depth: int = 3
    max_bytes: int = DEFAULT_MAX_BYTES
    max_sitemaps: int = 10_000

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise ValueError(f"{name}={value!r} needs a timezone (lastmod values are timezone-aware)")

    def keeps_page(self, page: SitemapPage) -> bool:
        """Whether `page` passes `keep` and the `lastmod` window."""
        if self.keep is not None and not self.keep(page.url):
            return False
        if page.lastmod is None:
            return self.keep_undated or (self.since is None and self.until is None)
        if self.since is not None and page.lastmod < self.since:
            return False
        return self.until is None or page.lastmod <= self.until

    def follows(self, sitemap: NestedSitemap) -> bool:
        """Whether `sitemap` passes `follow` and was changed since `since` (when both dates are known)."""
        if self.follow is not None and not self.follow(sitemap.url):
            return False
        return self.since is None or sitemap.lastmod is None or sitemap.lastmod >= self.since
