"""The example spider `mocra demo` runs against the demo bookshop (also a template for your own)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import msgspec

from mocra_core import Allow, Ctx, Response, Seeds, Spider, UrlRules

__all__ = ("Book", "BookSpider")

_DIGITS = re.compile(r"\d+")
_LISTINGS = UrlRules(Allow("**/catalogue/page-*"), Allow("**/admin/**"))  # anything else: not followed


class Book(msgspec.Struct):
    """One book of the demo shop."""

    title: str
    price: str
    upc: str
    in_stock: int
    url: str


class BookSpider(Spider[Book]):
    """Walks the catalogue pages and emits one `Book` per detail page.

    Args:
        start_url: The site's front page (it redirects to the first catalogue page).
    """

    name = "books"
    scope = "same-domain"  # the default, written out: links to other sites are dropped (`offsite`)

    def __init__(self, start_url: str) -> None:
        self.start_url = start_url

    async def start(self, seeds: Seeds) -> None:
        """Seed the front page."""
        seeds.get(self.start_url)

    async def parse(self, response: Response, ctx: Ctx[Book]) -> None:
        """A catalogue page: follow every book and the next page."""
        for href in response.links("article.product_pod h3 a"):
            ctx.follow(href, callback=self.parse_book)
        for href in response.links("ul.pager a, div.breadcrumb a, a", rules=_LISTINGS):
            ctx.follow(href)

    async def parse_book(self, response: Response, ctx: Ctx[Book]) -> None:
        """A detail page: emit the book (a missing book answers 404 and is skipped)."""
        if response.status != 200:
            return
        title = response.css_first("h1")
        price = response.css_first("p.price_color")
        upc = response.css_first("table.table-striped td")
        stock = response.css_first("p.instock.availability")
        if title is None or price is None or upc is None or stock is None:
            return
        found = _DIGITS.search(stock.text())
        ctx.emit(
            Book(
                title=title.text(strip=True),
                price=price.text(strip=True),
                upc=upc.text(strip=True),
                in_stock=int(found.group()) if found else 0,
                url=urlsplit(response.url).path,
            )
        )
