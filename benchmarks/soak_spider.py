"""The soak crawl: the bench site with dedup off, so its queue grows without end (every item page links to
3 others). Run under `benchmarks/run_soak.sh`, which stops it with `crawl.max_pages` and samples its memory.

    uv run mocra run benchmarks/soak_spider.py -s crawl.dedup=false -s crawl.max_pages=150000 \\
        -s crawl.obey_robots=false [--queue URL --job NAME]
"""

from __future__ import annotations

from typing import Any

from mocra import Ctx, Response, Seeds, Spider


class Soak(Spider[dict[str, Any]]):
    """Listing pages → item pages → their related item pages, again and again."""

    name = "soak"
    base = "http://127.0.0.1:8731"

    async def start(self, seeds: Seeds) -> None:
        """Seed the first listing page."""
        seeds.get(self.base + "/list/1.html")

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        """A listing page: its items and the next page."""
        for url in response.links("a.item"):
            ctx.follow(url, callback=self.parse_item)
        for url in response.links("a.next"):
            ctx.follow(url, priority=1)

    async def parse_item(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        """An item page: one item, and its related items (seen before or not: dedup is off)."""
        ctx.emit({"url": response.url})
        for url in response.links("div.related a"):
            ctx.follow(url, callback=self.parse_item)
