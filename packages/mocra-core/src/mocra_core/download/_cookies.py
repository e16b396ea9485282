"""Cookies by URL string: the downloaders' jar (`httpx.Cookies`) read and filled without httpx requests.

`http.cookiejar` (under `httpx.Cookies`) asks a urllib request for the URL and a response for its
`Set-Cookie` headers; these helpers hand it `urllib.request.Request(url)` and a shim over the header
values, so a downloader that does not build `httpx.Request`s still shares the jar's rules (domains,
paths, expiry, `Secure`).
"""

from __future__ import annotations

import urllib.request
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import httpx

__all__ = ("cookie_header", "merge_cookies", "store_cookies")


def cookie_header(jar: httpx.Cookies, url: str) -> str | None:
    """The `Cookie` header `jar` holds for `url`, or `None` when no cookie applies.

    Example:
        >>> import httpx
        >>> jar = httpx.Cookies()
        >>> store_cookies(jar, "http://a.test/login", ["sid=1; Path=/"])
        >>> cookie_header(jar, "http://a.test/me"), cookie_header(jar, "http://b.test/")
        ('sid=1', None)
    """
    if not jar:
        return None
    shim = urllib.request.Request(url)
    jar.jar.add_cookie_header(shim)
    return shim.get_header("Cookie")


def store_cookies(jar: httpx.Cookies, url: str, set_cookies: Sequence[str]) -> None:
    """Keep in `jar` the cookies a response from `url` set (its `Set-Cookie` header values)."""
    jar.jar.extract_cookies(_SetCookies(set_cookies), urllib.request.Request(url))  # type: ignore[arg-type]


def merge_cookies(current: str | None, extra: Mapping[str, str]) -> str:
    """A `Cookie` header: the pairs of `current` with `extra` over those of the same name.

    Example:
        >>> merge_cookies("sid=ann; a=1", {"lang": "fr", "sid": "override"})
        'sid=override; a=1; lang=fr'
    """
    pairs: dict[str, str] = {}
    if current:
        for part in current.split(";"):
            name, _, value = part.strip().partition("=")
            pairs[name] = value
    pairs.update(extra)
    return "; ".join(f"{k}={v}" for k, v in pairs.items())


class _SetCookies:
    """What `CookieJar.extract_cookies` reads of a response: `info().get_all("Set-Cookie", default)`."""

    __slots__ = ("_values",)

    def __init__(self, values: Sequence[str]) -> None:
        self._values = list(values)

    def info(self) -> _SetCookies:
        return self

    def get_all(self, name: str, default: list[str]) -> list[str]:
        return self._values if name.lower() == "set-cookie" else default
