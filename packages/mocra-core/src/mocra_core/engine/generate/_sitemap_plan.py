"""`SitemapPlan`: a spider's sitemap attributes, checked once and compiled (rules, follow, since)."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._errors import ConfigError
from ...sitemaps import SitemapWalk

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ...modules import CompiledModule
    from ...sitemaps import NestedSitemap, SitemapPage

__all__ = ("SKIP", "SitemapPlan", "sitemap_plans")

SKIP = "<skip>"
"""What `SitemapPlan.callback_for` returns for a page no rule matches (no method has this name)."""


@dataclass(frozen=True)
class SitemapPlan:
    """Which pages of a spider's sitemaps are crawled, with which callback, and which sitemaps are followed.

    `rules` are (regex, callback name) pairs, the first `re.search` match wins and a page matching none is
    skipped; no rules means every page goes to `parse`. `follow` are regexes a nested sitemap's URL must
    match (`re.search`, any of them; none: follow all). `walk` holds the `lastmod` window and alternates.

    Example:
        >>> class Shop:
        ...     name = "shop"
        ...     sitemap_rules = [(r"/product/", "parse_product")]
        ...     async def parse_product(self, response, ctx): ...
        >>> plan = SitemapPlan.of(Shop())
        >>> plan.callback_for("https://example.com/product/1"), plan.callback_for("https://example.com/")
        ('parse_product', '<skip>')
    """

    rules: tuple[tuple[re.Pattern[str], str | None], ...]
    follow: tuple[re.Pattern[str], ...]
    walk: SitemapWalk

    @classmethod
    def of(cls, spider: Any) -> SitemapPlan:
        """Compile `spider`'s `sitemap_rules`, `sitemap_follow`, `sitemap_since`, `sitemap_alternate_links`.

        Raises:
            ConfigError: a bad regex, a rule naming no async method of the spider, or a naive `sitemap_since`
                (keyed `<name>.sitemap_rules`, `<name>.sitemap_follow`, `<name>.sitemap_since`).
        """
        name = getattr(spider, "name", type(spider).__name__)
        rules = []
        for pattern, callback in getattr(spider, "sitemap_rules", None) or ():
            method = getattr(spider, callback, None)
            if not inspect.iscoroutinefunction(method):
                raise ConfigError(
                    f"{name}.sitemap_rules", f"{callback!r} is not an async method of the spider"
                )
            rules.append(
                (_compiled(pattern, f"{name}.sitemap_rules"), None if callback == "parse" else callback)
            )
        follow = tuple(
            _compiled(pattern, f"{name}.sitemap_follow")
            for pattern in getattr(spider, "sitemap_follow", ()) or ()
        )
        try:
            walk = SitemapWalk(
                since=getattr(spider, "sitemap_since", None),
                alternates=bool(getattr(spider, "sitemap_alternate_links", False)),
            )
        except ValueError as exc:
            raise ConfigError(f"{name}.sitemap_since", str(exc)) from None
        return cls(tuple(rules), follow, walk)

    def callback_for(self, url: str) -> str | None:
        """The callback name for a page (`None`: `parse`), or `SKIP` when rules exist and none matches."""
        if not self.rules:
            return None
        for pattern, callback in self.rules:
            if pattern.search(url):
                return callback
        return SKIP

    def keeps(self, page: SitemapPage) -> bool:
        """Whether a page is in the `lastmod` window."""
        return self.walk.keeps_page(page)

    def follows(self, sitemap: NestedSitemap) -> bool:
        """Whether a nested sitemap matches `follow` and was changed since `since` (when known)."""
        if self.follow and not any(pattern.search(sitemap.url) for pattern in self.follow):
            return False
        return self.walk.follows(sitemap)


def sitemap_plans(modules: Mapping[str, CompiledModule]) -> dict[str, SitemapPlan]:
    """The `SitemapPlan` of every spider module (a spider's `start` may seed sitemaps), by module name.

    Raises:
        ConfigError: a spider's sitemap attributes are wrong (see `SitemapPlan.of`).
    """
    from ...modules import Spider

    return {name: SitemapPlan.of(m.source) for name, m in modules.items() if isinstance(m.source, Spider)}


def _compiled(pattern: str | re.Pattern[str], key: str) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        return pattern
    try:
        return re.compile(pattern)
    except (re.error, TypeError) as exc:
        raise ConfigError(key, f"bad regex {pattern!r}: {exc}") from None
