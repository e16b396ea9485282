"""The rules of a redirect hop: where it goes, with which method, body and headers, and when to stop.

The built-in downloaders follow redirects themselves; their loops ask a `RedirectTrail` for the next hop.
301/302 turn a POST into a body-less GET, 303 turns anything but HEAD into one (as browsers do), 307/308
keep method and body; credentials are not sent to another origin; a loop (the same method, URL and
cookies twice) or more than `max_redirects` hops stops the download with `TooManyRedirects`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, NamedTuple

import httpx

from .._errors import HopRefused, TooManyRedirects, UnfetchableURL
from ._protocol import Hop

if TYPE_CHECKING:
    from ..http import Request
    from ._protocol import HopCheck

__all__ = (
    "REDIRECT_STATUSES",
    "Leg",
    "RedirectTrail",
    "crosses_origin",
    "drop_credentials",
    "redirect_method",
    "redirect_target",
)

REDIRECT_STATUSES = frozenset((301, 302, 303, 307, 308))
"""The statuses whose `Location` is followed."""

_BODY_HEADERS = ("content-type", "content-length", "content-encoding", "transfer-encoding")
_CROSS_ORIGIN_DROP = ("authorization", "proxy-authorization", "cookie")

Headers = list[tuple[str, str]]

logger = logging.getLogger(__name__)


class Leg(NamedTuple):
    """One request of a download, the first or a redirect hop: what it sends."""

    method: str
    url: str
    content: bytes | None
    headers: Headers
    explicit_cookie: bool
    """A `Cookie` header in `headers` is sent as it is, instead of the jar's (until a hop changes origin)."""


class RedirectTrail:
    """The hops one download has taken: works out the next (`follow`); refuses a loop or too many.

    Example:
        >>> from mocra_core.http import Request
        >>> trail = RedirectTrail(Request("http://a.test/"), max_redirects=5)
        >>> trail.step("GET", "http://a.test/", None)
        >>> trail.step("GET", "http://a.test/", None)
        Traceback (most recent call last):
        ...
        mocra_core._errors.TooManyRedirects: redirect loop at GET http://a.test/ (from http://a.test/)
    """

    __slots__ = ("_check", "_hops", "_max", "_request", "_seen")

    def __init__(self, request: Request, max_redirects: int, hop: HopCheck | None = None) -> None:
        self._request = request
        self._max = max_redirects
        self._check = hop
        self._hops = 0
        self._seen: set[tuple[str, str, str | None]] = set()

    def step(self, method: str, url: str, cookie: str | None) -> None:
        """Note that `method url` (sent with `cookie`) redirected.

        Raises:
            TooManyRedirects: It did so before in this download (a loop), or this is one hop too many.
        """
        request = self._request
        self._hops += 1
        key = (method, url, cookie)
        if key in self._seen:
            raise TooManyRedirects(f"redirect loop at {method} {url} (from {request.url})", request=request)
        self._seen.add(key)
        if self._hops > self._max:
            raise TooManyRedirects(
                f"{request.method} {request.url}: more than max_redirects={self._max} redirects "
                f"(last to {url})",
                request=request,
            )

    async def follow(
        self, leg: Leg, cookie: str | None, base: httpx.URL, status: int, location: str
    ) -> tuple[Leg, httpx.URL]:
        """The next leg, and its URL, after `leg` (sent to `base` with `cookie`) got a redirect.

        `status` and `location` are the redirect's. The method and body follow `redirect_method`;
        credentials stay behind when the origin changes; the trail's hop check is asked before the leg
        is returned, and the hop is logged.

        Raises:
            TooManyRedirects: A loop, or one hop too many (`step`).
            UnfetchableURL: `location` is not a valid http(s) URL.
            HopRefused: The hop check refused the hop (it is not to be sent).
        """
        self.step(leg.method, leg.url, cookie)
        request = self._request
        target = redirect_target(base, location, request)
        method, content, headers = redirect_method(status, leg.method, leg.content, leg.headers)
        explicit_cookie = leg.explicit_cookie
        if crosses_origin(base, target):
            headers = drop_credentials(headers)
            explicit_cookie = False
        url = str(target)
        if self._check is not None:
            refused = await self._check(Hop(url, method, content, status))
            if refused is not None:
                raise HopRefused(url, refused, request=request)
        logger.debug("redirect %d %s -> %s", status, leg.url, url)
        return Leg(method, url, content, headers, explicit_cookie), target


def redirect_target(base: httpx.URL, location: str, request: Request) -> httpx.URL:
    """The absolute http(s) URL `location` names, relative to `base` (the URL that redirected).

    Raises:
        UnfetchableURL: `location` is not a valid URL, or not an http(s) one.
    """
    try:
        target = base.join(location)
        host = target.host  # decoded here: IDNAError (a ValueError) for a bad label such as "xn--zz"
    except (httpx.InvalidURL, ValueError) as exc:
        raise UnfetchableURL(
            location,
            f"{base} redirected to an invalid Location {location!r}: {exc}",
            request=request,
        ) from exc
    if target.scheme not in ("http", "https") or not host:
        raise UnfetchableURL(
            location,
            f"{base} redirected to {location!r}, which is not an http(s) URL",
            request=request,
        )
    return target


def redirect_method(
    status: int, method: str, content: bytes | None, headers: Headers
) -> tuple[str, bytes | None, Headers]:
    """The method, body and headers of the hop after a `status` redirect of `method`.

    Example:
        >>> redirect_method(303, "POST", b"q=1", [("Content-Type", "text/plain"), ("Accept", "*/*")])
        ('GET', None, [('Accept', '*/*')])
        >>> redirect_method(307, "POST", b"q=1", [])
        ('POST', b'q=1', [])
    """
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        return "GET", None, [(k, v) for k, v in headers if k.lower() not in _BODY_HEADERS]
    return method, content, headers


def crosses_origin(source: httpx.URL, target: httpx.URL) -> bool:
    """Whether a hop from `source` to `target` changes host or scheme (credentials stay behind)."""
    return target.host != source.host or target.scheme != source.scheme


def drop_credentials(headers: Headers) -> Headers:
    """`headers` without `Authorization`, `Proxy-Authorization` and `Cookie`."""
    return [(k, v) for k, v in headers if k.lower() not in _CROSS_ORIGIN_DROP]
