"""The demo site's member area: a login form, a session cookie and a JSON API over the catalogue.

It backs the multi-node crawl example (log in → list with cursor pagination → detail fan-out → merge)
and is served by every `DemoSite` next to its HTML pages, which never link to it (so ``mocra demo`` and
the HTML ground truth are unaffected). Everything is derived from the site's seed: two sites built with
the same arguments issue the same CSRF token, session cookies, cursors and JSON bytes.

Routes:

- ``GET /login`` → ``200`` HTML with ``<form action="/login" method="post">`` holding
  ``input[name=username]``, ``input[name=password]`` and a hidden ``input[name=csrf_token]``, whose value
  (`MemberArea.csrf_token`, fixed per seed) must be echoed back. Any method but ``POST`` gets the form.
- ``POST /login`` (form-encoded ``username``, ``password``, ``csrf_token``) → with valid credentials,
  ``303`` to ``/account`` with ``Set-Cookie: session=<token>; Path=/; HttpOnly`` (one fixed token per
  account and seed) and ``logins[username] += 1``; a missing or wrong ``csrf_token`` or bad credentials
  → ``401`` HTML error page (``p.error``), no cookie, nothing counted. Accounts: ``alice``/``wonderland``
  and ``bob``/``builder`` (`DemoSite.accounts`).
- ``GET /account`` → ``200`` HTML greeting the user (``h1 span.username``); ``401`` HTML without a
  valid ``session`` cookie.
- ``GET /api/books?cursor=<c>&limit=<n>`` → ``{"items": [{"id": 1, "title": "…"}, …], "next_cursor":
  "…" | null}``, every book once in catalogue order. No ``cursor`` (or an empty one) starts at the first
  book; follow ``next_cursor`` until it is ``null``. Cursors are opaque 12-character strings (a keyed
  hash of the offset, not page numbers): an unknown one → ``400`` ``{"error": "unknown cursor"}``.
  ``limit`` defaults to 10 and is capped at 20; one that is not a whole number ≥ 1 → ``400``.
- ``GET /api/books/<id>`` → ``{"id", "title", "price", "upc", "in_stock", "rating"}`` (`ApiBook`:
  ``price`` in pounds as a number, e.g. ``51.77``; ``rating`` 1–5); an unknown id (or any other
  ``/api/…`` path) → ``404`` ``{"error": "no such book"}``.

Every ``/api/…`` route first checks the ``session`` cookie: without a valid one it answers ``401``
``{"error": "login required"}``. JSON responses have ``Content-Type: application/json``.

`DemoSite.expected_api_items` is the ground truth of the detail fan-out (one `ApiBook` per book, in
catalogue order) and `DemoSite.expected_summary` that of the merge (`ApiSummary`).
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections import Counter
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import parse_qs

import msgspec

from mocra_core.testing import ServerResponse

from ._books import RATINGS
from ._pages import render_account, render_login_error, render_login_form, render_login_required

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mocra_core.testing import Handler, ServerRequest

    from ._books import Book

__all__ = ("ACCOUNTS", "DEFAULT_LIMIT", "MAX_LIMIT", "ApiBook", "ApiSummary", "MemberArea")

ACCOUNTS: dict[str, str] = {"alice": "wonderland", "bob": "builder"}
DEFAULT_LIMIT = 10
MAX_LIMIT = 20

_JSON = {"Content-Type": "application/json"}
_DETAIL_PREFIX = "/api/books/"


class ApiBook(TypedDict):
    """One book as ``/api/books/<id>`` returns it (a plain dict at run time)."""

    id: int
    title: str
    price: float
    upc: str
    in_stock: int
    rating: int


class ApiSummary(TypedDict):
    """The merge of every `ApiBook`: how many, the total stock and the mean price (pounds, 2 places)."""

    books: int
    in_stock_total: int
    mean_price: float


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def _encoded(status: int, body: bytes | str, headers: dict[str, str] | None = None) -> ServerResponse:
    """A response pre-encoded to its wire bytes, so serving it costs no formatting."""
    return ServerResponse(raw=ServerResponse(status, body, dict(headers or {})).encode())


def _json(status: int, payload: object) -> ServerResponse:
    return _encoded(status, msgspec.json.encode(payload), _JSON)


class MemberArea:
    """The routes and state of the member area of a `DemoSite` (see the module docstring).

    Args:
        seed: The site's seed; tokens and cursors are derived from it.
        books: The site's catalogue, in order.

    Example:
        >>> import httpx
        >>> from mocra_core.testing import LocalServer
        >>> from mocra._demo._books import make_books
        >>> members = MemberArea(7, make_books(7, 3, cafe_index=0))
        >>> server = LocalServer(members.routes(), fallback=members.serve_unknown)
        >>> form = {"username": "bob", "password": "builder", "csrf_token": members.csrf_token}
        >>> with server.run_in_thread() as base_url, httpx.Client(base_url=base_url) as http:
        ...     login = http.post("/login", data=form)
        ...     page = http.get("/api/books", params={"limit": 2}).json()
        ...     detail = http.get("/api/books/3").json()
        >>> login.status_code, login.headers["location"], members.logins["bob"]
        (303, '/account', 1)
        >>> [item["id"] for item in page["items"]], isinstance(page["next_cursor"], str)
        ([1, 2], True)
        >>> detail == members.expected_items()[2]
        True
    """

    def __init__(self, seed: int, books: Sequence[Book]) -> None:
        self.logins: Counter[str] = Counter()
        self.csrf_token = _digest(f"csrf-{seed}").hex()[:32]
        self._tokens = {name: _digest(f"session-{seed}-{name}").hex()[:32] for name in ACCOUNTS}
        self._sessions = {token: name for name, token in self._tokens.items()}
        self._items = [
            ApiBook(
                id=b.book_id,
                title=b.title,
                price=b.price_pence / 100,
                upc=b.upc,
                in_stock=b.in_stock,
                rating=RATINGS.index(b.rating) + 1,
            )
            for b in books
        ]
        self._listed = [{"id": b.book_id, "title": b.title} for b in books]
        # cursor → offset for every offset a page can start at after the first; offset → cursor as a list
        self._cursor_at = [""] + [
            base64.urlsafe_b64encode(_digest(f"cursor-{seed}-{offset}")[:9]).decode()
            for offset in range(1, len(books))
        ]
        self._offsets = {cursor: offset for offset, cursor in enumerate(self._cursor_at) if offset}
        self._details = {f"{_DETAIL_PREFIX}{item['id']}": _json(200, item) for item in self._items}
        self._form = _encoded(200, render_login_form(self.csrf_token))
        self._accounts = {name: _encoded(200, render_account(name)) for name in ACCOUNTS}
        self._logged_in = {
            name: _encoded(
                303, "", {"Location": "/account", "Set-Cookie": f"session={token}; Path=/; HttpOnly"}
            )
            for name, token in self._tokens.items()
        }
        self._bad_csrf = _encoded(401, render_login_error("Missing or wrong form token: reload the form."))
        self._bad_credentials = _encoded(401, render_login_error("Wrong username or password."))
        self._account_login_required = _encoded(401, render_login_required())
        self._api_login_required = _json(401, {"error": "login required"})
        self._unknown_cursor = _json(400, {"error": "unknown cursor"})
        self._bad_limit = _json(
            400, {"error": f"limit must be a whole number from 1 (at most {MAX_LIMIT} served)"}
        )
        self._no_such_book = _json(404, {"error": "no such book"})

    @property
    def accounts(self) -> dict[str, str]:
        """Username → password of every member (a fresh copy)."""
        return dict(ACCOUNTS)

    def routes(self) -> dict[str, ServerResponse | Handler]:
        """Path → handler of the member area, for a `LocalServer` route table."""
        routes: dict[str, ServerResponse | Handler] = {
            "/login": self.serve_login,
            "/account": self.serve_account,
            "/api/books": self.serve_list,
        }
        routes.update(dict.fromkeys(self._details, self.serve_detail))
        return routes

    def expected_items(self) -> list[ApiBook]:
        """Every book as its ``/api/books/<id>`` returns it, in catalogue order (fresh dicts)."""
        return [item.copy() for item in self._items]

    def expected_summary(self) -> ApiSummary:
        """The merge of `expected_items`.

        ``mean_price`` is ``round(math.fsum(prices) / books, 2)``: `math.fsum` is exact, so a merge that
        sums the prices in whatever order the details arrived gets the same number.
        """
        prices = [item["price"] for item in self._items]
        return ApiSummary(
            books=len(self._items),
            in_stock_total=sum(item["in_stock"] for item in self._items),
            mean_price=round(math.fsum(prices) / len(prices), 2),
        )

    def user(self, request: ServerRequest) -> str | None:
        """The member whose ``session`` cookie `request` carries, or None."""
        header = request.headers.get("cookie")
        if not header:
            return None
        for pair in header.split(";"):
            name, _, value = pair.strip().partition("=")
            if name == "session":
                user = self._sessions.get(value.strip().strip('"'))
                if user is not None:
                    return user
        return None

    async def serve_login(self, request: ServerRequest) -> ServerResponse:
        """``GET``: the form; ``POST``: check the echoed CSRF token and the credentials."""
        if request.method != "POST":
            return self._form
        form = parse_qs(request.body.decode("utf-8", errors="replace"), keep_blank_values=True)
        if form.get("csrf_token", [""])[-1] != self.csrf_token:
            return self._bad_csrf
        username, password = form.get("username", [""])[-1], form.get("password", [""])[-1]
        if username not in ACCOUNTS or ACCOUNTS[username] != password:
            return self._bad_credentials
        self.logins[username] += 1
        return self._logged_in[username]

    async def serve_account(self, request: ServerRequest) -> ServerResponse:
        """The member's greeting page, or ``401`` without a session."""
        user = self.user(request)
        return self._account_login_required if user is None else self._accounts[user]

    async def serve_list(self, request: ServerRequest) -> ServerResponse:
        """One page of ``{"items": [{"id", "title"}], "next_cursor"}``: ``limit`` books from ``cursor``."""
        if self.user(request) is None:
            return self._api_login_required
        query = request.query
        offset = 0
        if cursors := query.get("cursor"):
            found = self._offsets.get(cursors[-1])
            if found is None:
                return self._unknown_cursor
            offset = found
        limit = DEFAULT_LIMIT
        if limits := query.get("limit"):
            text = limits[-1].strip()
            if not (text.isascii() and text.isdigit()) or int(text) < 1:
                return self._bad_limit
            limit = min(int(text), MAX_LIMIT)
        end = offset + limit
        next_cursor = self._cursor_at[end] if end < len(self._listed) else None
        return ServerResponse(
            200, msgspec.json.encode({"items": self._listed[offset:end], "next_cursor": next_cursor}), _JSON
        )

    async def serve_detail(self, request: ServerRequest) -> ServerResponse:
        """One book's `ApiBook` JSON, or ``401`` without a session, or ``404``."""
        if self.user(request) is None:
            return self._api_login_required
        return self._details.get(request.path, self._no_such_book)

    async def serve_unknown(self, request: ServerRequest) -> ServerResponse:
        """Any other ``/api/…`` path: ``401`` without a session, else ``404`` JSON."""
        return self._api_login_required if self.user(request) is None else self._no_such_book
