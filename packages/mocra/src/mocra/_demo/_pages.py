"""HTML of the demo site's pages, rendered once as text; `_site.py` encodes and serves it."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._books import Book

__all__ = (
    "MISSING_DIRNAME",
    "ROBOTS_TXT",
    "missing_pod",
    "render_account",
    "render_catalogue",
    "render_detail",
    "render_login_error",
    "render_login_form",
    "render_login_required",
    "render_not_found",
    "render_secret",
)

MISSING_DIRNAME = "missing_999"
ROBOTS_TXT = "User-agent: *\nDisallow: /admin/\n"

_SHORT_TITLE = 30


def _page(title: str, body: str, *, charset: str = "utf-8") -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en-gb">\n<head>\n'
        f'<meta charset="{charset}">\n'
        f"<title>{escape(title)} | Books to Scrape - mocra demo</title>\n"
        "</head>\n<body>\n"
        '<header class="header"><a href="/">Books to Scrape</a> <small>mocra offline demo</small></header>\n'
        f'<div class="container">\n{body}</div>\n'
        "</body>\n</html>\n"
    )


def _short(title: str) -> str:
    return title if len(title) <= _SHORT_TITLE else title[: _SHORT_TITLE - 1].rstrip() + "…"


def _product_pod(href: str, title: str, price: str, rating: str) -> str:
    return (
        '<li class="col-xs-6 col-sm-4 col-md-3 col-lg-3"><article class="product_pod">'
        f'<h3><a href="{escape(href)}" title="{escape(title)}">{escape(_short(title))}</a></h3>'
        f'<p class="price_color">{price}</p>'
        f'<p class="star-rating {rating}"></p>'
        "</article></li>\n"
    )


def render_catalogue(number: int, pages: int, books: Sequence[Book], *, extras: str = "") -> str:
    """Catalogue page `number` of `pages`, listing `books` with relative links.

    Args:
        number: This page's number, from 1.
        pages: How many catalogue pages the site has.
        books: The books this page lists.
        extras: Trap markup placed after the list (the 404 pod, the admin link, URL variants).
    """
    pods = "".join(_product_pod(f"{b.dirname}/index.html", b.title, b.price, b.rating) for b in books)
    pager = []
    if number > 1:
        pager.append(f'<li class="previous"><a href="page-{number - 1}.html">previous</a></li>')
    pager.append(f'<li class="current">Page {number} of {pages}</li>')
    if number < pages:
        pager.append(f'<li class="next"><a href="page-{number + 1}.html">next</a></li>')
    body = (
        '<ul class="breadcrumb"><li><a href="/">Home</a></li><li class="active">All products</li></ul>\n'
        '<div class="page-header"><h1>All products</h1></div>\n'
        f'<p class="results">{len(books)} results.</p>\n'
        f'<section><ol class="row">\n{pods}</ol>\n{extras}'
        f'<div><ul class="pager">{"".join(pager)}</ul></div>\n</section>\n'
    )
    return _page(f"All products - page {number}", body)


def missing_pod() -> str:
    """A product pod for a book whose detail page does not exist (the 404 trap)."""
    return (
        '<ol class="row discontinued">'
        + _product_pod(f"{MISSING_DIRNAME}/index.html", "The Book That Was Never Written", "£0.00", "One")
        + "</ol>\n"
    )


def render_detail(book: Book, *, page_number: int, related: Sequence[Book], charset: str = "utf-8") -> str:
    """The detail page of `book`, found on catalogue page `page_number`, with links to `related` books."""
    breadcrumb = (
        '<ul class="breadcrumb"><li><a href="/">Home</a></li>'
        '<li><a href="../page-1.html">Books</a></li>'
        f'<li><a href="../page-{page_number}.html">Page {page_number}</a></li>'
        f'<li class="active">{escape(book.title)}</li></ul>\n'
    )
    availability = f"In stock ({book.in_stock} available)"
    rows = (
        ("UPC", book.upc),
        ("Product Type", "Books"),
        ("Price (excl. tax)", book.price),
        ("Price (incl. tax)", book.price),
        ("Tax", "£0.00"),
        ("Availability", availability),
        ("Number of reviews", "0"),
    )
    table = "".join(f"<tr><th>{th}</th><td>{td}</td></tr>" for th, td in rows)
    links = "".join(
        f'<li><a href="../{r.dirname}/index.html" title="{escape(r.title)}">{escape(r.title)}</a></li>'
        for r in related
    )
    body = (
        breadcrumb + '<article class="product_page">\n<div class="row"><div class="col-sm-6 product_main">\n'
        f"<h1>{escape(book.title)}</h1>\n"
        f'<p class="price_color">{book.price}</p>\n'
        f'<p class="instock availability"><i class="icon-ok"></i> {availability}</p>\n'
        f'<p class="star-rating {book.rating}"></p>\n</div></div>\n'
        '<div id="product_description" class="sub-header"><h2>Product Description</h2></div>\n'
        f"<p>{escape(book.description)}</p>\n"
        '<div class="sub-header"><h2>Product Information</h2></div>\n'
        f'<table class="table table-striped">{table}</table>\n</article>\n'
        f'<section class="related"><h2>You might also like</h2><ul>{links}</ul></section>\n'
    )
    return _page(book.title, body, charset=charset)


def render_not_found() -> str:
    """The 404 page."""
    return _page("Not found", "<h1>404 Not Found</h1>\n<p>No such page.</p>\n")


def render_secret() -> str:
    """The page robots.txt forbids; a polite crawler never sees it."""
    return _page("Admin", "<h1>Staff only</h1>\n<p>robots.txt disallows this page.</p>\n")


def render_login_form(csrf_token: str) -> str:
    """The member login form: ``username``, ``password`` and a hidden ``csrf_token`` to echo back."""
    body = (
        "<h1>Member login</h1>\n"
        '<form action="/login" method="post">\n'
        f'<input type="hidden" name="csrf_token" value="{escape(csrf_token)}">\n'
        '<label>Username <input type="text" name="username"></label>\n'
        '<label>Password <input type="password" name="password"></label>\n'
        '<button type="submit">Log in</button>\n'
        "</form>\n"
    )
    return _page("Member login", body)


def render_login_error(message: str) -> str:
    """The page a rejected login gets (with a ``401``)."""
    body = (
        "<h1>Login failed</h1>\n"
        f'<p class="error">{escape(message)}</p>\n'
        '<p><a href="/login">Try again</a></p>\n'
    )
    return _page("Login failed", body)


def render_login_required() -> str:
    """The page ``/account`` answers without a valid session cookie (with a ``401``)."""
    return _page("Login required", '<h1>Login required</h1>\n<p><a href="/login">Log in</a></p>\n')


def render_account(username: str) -> str:
    """The member's account page, greeting `username` and pointing at the JSON API."""
    body = (
        f'<h1>Welcome back, <span class="username">{escape(username)}</span></h1>\n'
        '<p>Your catalogue API: <a href="/api/books">/api/books</a></p>\n'
    )
    return _page("Your account", body)
