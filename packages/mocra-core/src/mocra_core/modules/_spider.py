"""`Spider`: the ten-line way to write a crawl."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import anyio.to_thread

from ._seed_file import read_seed_urls

if TYPE_CHECKING:
    import os
    import re
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from ..http import Response
    from ..scope import ScopeStrategy, UrlRules
    from ._context import Ctx, Seeds

__all__ = ("Spider",)

T = TypeVar("T")


class Spider(Generic[T]):
    """A crawl in one class: `start` seeds requests, `parse` turns responses into items and follow-ups.

    Subclass it, set `name`, and override `parse` (and `start`, unless `start_urls` is enough). Further
    callbacks are plain async methods with the same signature as `parse`, named with `ctx.follow(...,
    callback=self.parse_detail)`. The type parameter is the item type your callbacks emit.

    Attributes:
        name: Unique name of the spider in a run (used in stats, logs and job state).
        start_urls: URLs seeded by the default `start`.
        start_urls_file: A `.csv` / `.tsv` file or `.xlsx` workbook (the `excel` extra) whose column
            `start_urls_column` holds more URLs for the default `start` (read in a worker thread when the
            crawl starts; relative to the working directory). Empty cells are skipped, and a value that
            is not an absolute http(s) URL is set aside (logged, counted as dropped `invalid_url`).
        start_urls_column: The column's header name, or its 0-based index when the file has no header
            (then every row is a URL).
        start_urls_sheet: The workbook's sheet; `None` for its first.
        downloader: Name of the downloader (registered with `MocraBuilder.downloader`) for this spider's
            requests; `None` uses the default one. `Request(downloader=...)` overrides it per request.
        proxy: The proxy of this spider's requests: `"direct"` (none), a pool's name (`"pool"` is
            `[proxy.pool]`, others `[proxy.pools.<name>]`) or a proxy URL (`http://user:pass@host:port`);
            `None` follows the `[proxy]` settings. `Request(meta={"proxy": ...})` overrides it per request.
            A name of no configured pool stops the run at start (`ConfigError` naming `<name>.proxy`).
        cron: A cron expression (5 fields, or 6 with seconds first): the spider starts on schedule instead
            of once, and the run goes on until interrupted.
        cron_misfire: Seconds a missed cron time may be late and still run.
        scope: Which links the crawl may follow, relative to the page each was found on: `"all"`,
            `"same-hostname"`, `"same-domain"` (the registrable domain, by the Public Suffix List) or
            `"same-origin"` (scheme, host and port); `None` takes `crawl.scope` from the settings (default
            `"same-domain"`), unless `allowed_domains` is set. A seed is its own origin (only
            `allowed_domains` applies to it).
        allowed_domains: Domains the crawl stays within, subdomains included (Scrapy's rule): set alone,
            they are the scope (`scope` `"all"`); with `scope`, a URL must pass both. An entry with a
            scheme, path or port is a `ConfigError` naming `<name>.allowed_domains`.
        rules: Allow/deny rules (`UrlRules(Deny("**/logout*"), ...)`) every follow-up must pass too, after
            the scope; `None` allows everything in scope.
        sitemap_urls: Sitemaps (or sitemap indexes, gzip or not, XML or plain text) the default `start`
            seeds; a URL ending in `/robots.txt` stands for the sitemaps its `Sitemap:` lines name.
        sitemap_rules: (regex, callback name) pairs for the pages of those sitemaps: the first whose regex
            `re.search`es the URL names the callback, and a page matching none is skipped. Empty: every
            page goes to `parse`.
        sitemap_follow: Regexes the URL of a sitemap listed by an index must match to be read; empty: all.
        sitemap_alternate_links: Crawl each page's alternate links (`<xhtml:link rel="alternate">`) too.
        sitemap_since: Skip pages (and nested sitemaps) whose `<lastmod>` is older; timezone-aware.
        version: The spider's version; a store whose module row has another one is reported and its rows
            skipped (`None`: not checked).
        config: The defaults of `seeds.meta` (the start task's meta, carried by the start requests); a
            store row's merged config goes over them.

    Example:
        >>> from mocra_core.http import Response
        >>> class Titles(Spider[dict[str, str]]):
        ...     name = "titles"
        ...     start_urls = ("https://example.com/",)
        ...     async def parse(self, response: Response, ctx: Ctx[dict[str, str]]) -> None:
        ...         ctx.emit({"url": response.url})
        >>> Titles().name
        'titles'
    """

    name: ClassVar[str] = ""
    start_urls: ClassVar[Sequence[str]] = ()
    start_urls_file: ClassVar[str | os.PathLike[str] | None] = None
    start_urls_column: ClassVar[str | int] = "url"
    start_urls_sheet: ClassVar[str | None] = None
    downloader: ClassVar[str | None] = None
    proxy: ClassVar[str | None] = None
    cron: ClassVar[str | None] = None
    cron_misfire: ClassVar[float] = 60.0
    scope: ClassVar[ScopeStrategy | None] = None
    allowed_domains: ClassVar[Sequence[str]] = ()
    rules: ClassVar[UrlRules | None] = None
    sitemap_urls: ClassVar[Sequence[str]] = ()
    sitemap_rules: ClassVar[Sequence[tuple[str | re.Pattern[str], str]]] = ()
    sitemap_follow: ClassVar[Sequence[str | re.Pattern[str]]] = ()
    sitemap_alternate_links: ClassVar[bool] = False
    sitemap_since: ClassVar[datetime | None] = None
    version: ClassVar[str | None] = None
    config: ClassVar[Mapping[str, Any]] = {}

    async def start(self, seeds: Seeds) -> None:
        """Seed the first requests: a GET per URL of `start_urls` and `start_urls_file`, and the sitemaps."""
        for url in self.start_urls:
            seeds.get(url)
        if self.start_urls_file is not None:
            read = functools.partial(
                read_seed_urls,
                self.start_urls_file,
                column=self.start_urls_column,
                sheet=self.start_urls_sheet,
            )
            for url in await anyio.to_thread.run_sync(read):
                seeds.get(url)
        for url in self.sitemap_urls:
            seeds.sitemap(url)

    async def parse(self, response: Response, ctx: Ctx[T]) -> None:
        """Parse a response: `ctx.emit(item)` and `ctx.follow(url)`. Override it."""
        raise TypeError(f"{type(self).__name__} must override parse(response, ctx)")

    def callback(self, name: str | None) -> Any:
        """Return the bound callback called `name` (`None` → `parse`).

        Raises:
            AttributeError: the spider has no such async method.
        """
        method = getattr(self, name or "parse", None)
        if method is None or not callable(method):
            raise AttributeError(f"spider {self.name!r} has no callback {name!r}")
        return method
