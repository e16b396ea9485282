"""`DemoSite`: the offline bookshop that `mocra demo` and the tests crawl.

A small copy of books.toscrape.com, generated in memory from a seed (`random.Random(seed)` only: no files,
no network) and served by `mocra_core.testing.LocalServer` on 127.0.0.1. Every response is rendered and
encoded once, at construction, so serving is a dictionary lookup and one socket write (a quick local
benchmark target too). Two sites built with the same arguments serve identical bytes; no page contains
the host or port (every link is relative or an absolute path).

Pages (defaults: 50 books, 10 per page, so 5 catalogue pages):

- ``/`` → ``302`` to ``/catalogue/page-1.html``.
- ``/catalogue/page-N.html``: ``article.product_pod`` per book, with ``h3 a`` (relative ``href``
  ``<slug>_<id>/index.html``, full title in ``title``, a shortened one as text), ``p.price_color`` and
  ``p.star-rating <One..Five>``; a pager ``ul.pager`` with ``li.previous a`` (not on page 1) and
  ``li.next a`` (not on the last page).
- ``/catalogue/<slug>_<id>/index.html``: ``h1`` title, ``p.price_color``, ``p.instock.availability``
  ("In stock (N available)"), ``table.table-striped`` (UPC first), the description paragraph, breadcrumb
  links and two links to related books.
- ``/robots.txt``: ``Disallow: /admin/`` for every user agent.

Traps, each named by `DemoSite.traps` (a `DemoTraps`):

- redirect: ``/`` answers ``302``; the crawl must follow it.
- duplicate links: breadcrumbs link back to catalogue pages already seen (and to ``/``), related-book
  links point at detail pages already listed; dedup must fetch each page once.
- URL variants: page 1 also links ``page-2.html#top`` and ``page-2.html?``; canonicalisation must fold
  both into ``/catalogue/page-2.html`` (the server counts hits by path, so a second fetch shows).
- transient 503: the first request to one detail page (book 8) gets ``503`` with ``Retry-After``
  (1 second by default) and every later one ``200``; retrying must recover the item.
- 404: the last catalogue page lists an extra pod linking ``missing_999/index.html``; it answers ``404``
  and yields no item.
- encoding: one detail page (book 3, whose title starts "Café") is Latin-1 bytes declared only by
  ``<meta charset="iso-8859-1">`` (the ``Content-Type`` header has no charset); decoding it as UTF-8
  mangles the title.
- robots: page 1 links ``/admin/secret.html``, which robots.txt disallows (the page exists, so a crawler
  that ignores robots.txt shows up in ``server.hits``).

`DemoSite.expected_items` is the ground truth a correct spider emits: one item per book, in catalogue
order, with the fields ``title`` (full title), ``price`` (as shown, e.g. ``"£51.77"``), ``upc``,
``in_stock`` (int) and ``url`` (the detail page's path, ``/catalogue/<slug>_<id>/index.html``).

Member area: the same site also serves a login form (``/login``, with a CSRF token), a session cookie,
an account page (``/account``) and a JSON API over the same books (``/api/books`` with cursor pagination,
``/api/books/<id>`` details), for the multi-node crawl example (log in → list → detail fan-out → merge).
No HTML page links to it, so the crawl above never sees it. Its routes, accounts (`DemoSite.accounts`),
login counts (`DemoSite.logins`) and ground truth (`DemoSite.expected_api_items`,
`DemoSite.expected_summary`) are described in `mocra._demo._api`.
"""

from __future__ import annotations

import contextlib
import random
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from mocra_core.testing import LocalServer, ServerResponse

from ._api import MemberArea
from ._books import Book, make_books
from ._pages import (
    MISSING_DIRNAME,
    ROBOTS_TXT,
    missing_pod,
    render_catalogue,
    render_detail,
    render_not_found,
    render_secret,
)

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import AsyncIterator, Iterator

    from mocra_core.testing import Handler, ServerRequest

    from ._api import ApiBook, ApiSummary

__all__ = ("DemoItem", "DemoSite", "DemoTraps")

_CAFE_INDEX = 2  # book 3: the Latin-1 page
_FLAKY_INDEX = 7  # book 8: 503 once
_SECRET_PATH = "/admin/secret.html"


class DemoItem(TypedDict):
    """One book as a correct spider reports it (a plain dict at run time)."""

    title: str
    price: str
    upc: str
    in_stock: int
    url: str


@dataclass(frozen=True, slots=True)
class DemoTraps:
    """Where each trap of a `DemoSite` lives (absolute paths; `variants` as written in page 1's links)."""

    redirect: str
    flaky: str
    latin1: str
    missing: str
    disallowed: str
    variants: tuple[str, ...]


def _raw(status: int, body: bytes | str, headers: dict[str, str] | None = None) -> ServerResponse:
    """A response pre-encoded to its wire bytes, so serving it costs no formatting."""
    return ServerResponse(raw=ServerResponse(status, body, dict(headers or {})).encode())


class DemoSite:
    """A deterministic offline bookshop with crawler traps, served on 127.0.0.1.

    Args:
        seed: Seed of the generated catalogue; the same arguments always give the same bytes.
        books: How many books (≥ 1).
        per_page: Books per catalogue page (≥ 1).
        retry_after: Seconds sent in the transient 503's ``Retry-After`` header.
        port: Port to listen on; 0 picks a free one.

    Raises:
        ValueError: `books` or `per_page` is below 1, or `retry_after` is negative.

    Example:
        >>> import httpx
        >>> site = DemoSite(books=12, per_page=5)
        >>> with site.run_in_thread() as base_url:
        ...     response = httpx.get(base_url + "/", follow_redirects=True)
        >>> response.url.path, response.status_code, site.pages
        ('/catalogue/page-1.html', 200, 3)
        >>> item = site.expected_items()[0]
        >>> sorted(item)
        ['in_stock', 'price', 'title', 'upc', 'url']
        >>> item["title"] in response.text
        True
    """

    def __init__(
        self, seed: int = 0, books: int = 50, per_page: int = 10, *, retry_after: int = 1, port: int = 0
    ) -> None:
        if books < 1 or per_page < 1:
            raise ValueError(
                f"books and per_page must be at least 1, got books={books!r}, per_page={per_page!r}"
            )
        if retry_after < 0:
            raise ValueError(f"retry_after must be at least 0 seconds, got {retry_after!r}")
        self.seed = seed
        self.per_page = per_page
        self.pages = -(-books // per_page)
        self._books = make_books(seed, books, cafe_index=min(_CAFE_INDEX, books - 1))
        cafe = self._books[min(_CAFE_INDEX, books - 1)]
        flaky = self._books[min(_FLAKY_INDEX, books - 1)]
        self.traps = DemoTraps(
            redirect="/",
            flaky=flaky.path,
            latin1=cafe.path,
            missing=f"/catalogue/{MISSING_DIRNAME}/index.html",
            disallowed=_SECRET_PATH,
            variants=("/catalogue/page-2.html#top", "/catalogue/page-2.html?") if self.pages > 1 else (),
        )
        self._retry_after = retry_after
        self._not_found = _raw(404, render_not_found())
        responses = self._build_pages(cafe)
        self._flaky_ok = responses[self.traps.flaky]
        self._members = MemberArea(seed, self._books)
        routes: dict[str, ServerResponse | Handler] = {
            **responses,
            self.traps.flaky: self._serve_flaky,
            **self._members.routes(),
        }
        self.server = LocalServer(routes, fallback=self._serve_not_found)
        self.server.port = port

    @property
    def page_paths(self) -> tuple[str, ...]:
        """Every path a correct crawl fetches with a ``200``: catalogue pages, then detail pages."""
        catalogue = tuple(f"/catalogue/page-{n}.html" for n in range(1, self.pages + 1))
        return catalogue + tuple(book.path for book in self._books)

    @property
    def accounts(self) -> dict[str, str]:
        """Username → password of the member area's accounts (a fresh copy)."""
        return self._members.accounts

    @property
    def logins(self) -> Counter[str]:
        """Successful logins per username since the site was built (live; rejected attempts not counted)."""
        return self._members.logins

    def expected_api_items(self) -> list[ApiBook]:
        """Every book as ``/api/books/<id>`` returns it, in catalogue order (see `mocra._demo._api`).

        Returns:
            Dicts with ``id``, ``title``, ``price`` (pounds, a number), ``upc``, ``in_stock`` and
            ``rating`` (1–5), the same books as `expected_items`.
        """
        return self._members.expected_items()

    def expected_summary(self) -> ApiSummary:
        """The merge of `expected_api_items`: ``books``, ``in_stock_total`` and ``mean_price``.

        ``mean_price`` is ``round(math.fsum(prices) / books, 2)``, independent of the order items arrive in.
        """
        return self._members.expected_summary()

    def expected_items(self) -> list[DemoItem]:
        """The items a correct spider emits, one per book in catalogue order.

        Returns:
            Dicts with ``title``, ``price`` (e.g. ``"£51.77"``), ``upc``, ``in_stock`` (int) and ``url``
            (the detail page's path).
        """
        return [
            DemoItem(title=b.title, price=b.price, upc=b.upc, in_stock=b.in_stock, url=b.path)
            for b in self._books
        ]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve inside the current task group until the block exits; yields the base URL."""
        async with self.server.running() as base_url:
            yield base_url

    @contextlib.contextmanager
    def run_in_thread(self) -> Iterator[str]:
        """Serve from a background event-loop thread until the block exits; yields the base URL."""
        with self.server.run_in_thread() as base_url:
            yield base_url

    def _build_pages(self, cafe: Book) -> dict[str, ServerResponse]:
        routes = {
            "/": _raw(302, "", {"Location": "/catalogue/page-1.html"}),
            "/robots.txt": _raw(200, ROBOTS_TXT, {"Content-Type": "text/plain; charset=utf-8"}),
            _SECRET_PATH: _raw(200, render_secret()),
        }
        for number in range(1, self.pages + 1):
            listed = self._books[(number - 1) * self.per_page : number * self.per_page]
            routes[f"/catalogue/page-{number}.html"] = _raw(
                200, render_catalogue(number, self.pages, listed, extras=self._catalogue_extras(number))
            )
        related_rng = random.Random(f"related-{self.seed}")
        for index, book in enumerate(self._books):
            others = [other for other in self._books if other is not book]
            related = related_rng.sample(others, min(2, len(others)))
            page_number = index // self.per_page + 1
            if book is cafe:
                html = render_detail(book, page_number=page_number, related=related, charset="iso-8859-1")
                body = html.encode("latin-1", errors="xmlcharrefreplace")
                routes[book.path] = _raw(200, body, {"Content-Type": "text/html"})
            else:
                routes[book.path] = _raw(200, render_detail(book, page_number=page_number, related=related))
        return routes

    def _catalogue_extras(self, number: int) -> str:
        extras = ""
        if number == 1:
            if self.pages > 1:
                extras += (
                    '<p class="skip"><a href="page-2.html#top">Skip to page 2</a> '
                    '<a href="page-2.html?">Page two</a></p>\n'
                )
            extras += f'<p class="staff"><a href="{_SECRET_PATH}">Staff login</a></p>\n'
        if number == self.pages:
            extras += missing_pod()
        return extras

    async def _serve_flaky(self, request: ServerRequest) -> ServerResponse:
        # The first request gets the 503; from then on the route serves the pre-encoded page directly.
        self.server.route(self.traps.flaky, self._flaky_ok)
        return _raw(503, "<h1>Service Unavailable</h1>", {"Retry-After": str(self._retry_after)})

    async def _serve_not_found(self, request: ServerRequest) -> ServerResponse:
        if request.path.startswith("/api/"):
            return await self._members.serve_unknown(request)  # JSON, and 401 before 404
        return self._not_found
