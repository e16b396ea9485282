"""`RobotsPolicy`: robots.txt, fetched once per origin and obeyed (parsed by Protego)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio
from protego import Protego

from .._errors import DownloadError
from ..http import Request

if TYPE_CHECKING:
    from ._protocol import Downloader

__all__ = ("RobotsPolicy", "origin_of")

logger = logging.getLogger(__name__)

_MAX_ROBOTS_BYTES = 500 * 1024  # what Google reads (RFC 9309 asks for at least 500 KiB); the rest is ignored
_ALLOW_ALL = Protego.parse("")


def origin_of(url: str) -> str:
    """The origin robots.txt applies to: `scheme://host[:port]`, lower-cased, default port dropped.

    Example:
        >>> origin_of("HTTPS://Example.com:443/a?b")
        'https://example.com'
        >>> origin_of("http://example.com:8080/")
        'http://example.com:8080'
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = parts.port
    if port is None or (scheme, port) in (("http", 80), ("https", 443)):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


class RobotsPolicy:
    r"""Answers "may this request be fetched?" from the origin's robots.txt (RFC 9309, via Protego).

    robots.txt is fetched through `downloader` the first time an origin (scheme, host, port) is asked
    about, then cached for the life of the policy; concurrent callers for the same origin wait on that one
    fetch. What an unusable robots.txt means:

    - 2xx: parsed (the first 500 KiB), rules matched against `user_agent`.
    - 4xx (404, 401, 403, ...): allow everything, as RFC 9309 says for "unavailable".
    - 5xx or a network error: allow everything. This is Scrapy's behaviour; RFC 9309 (and Google) would
      rather assume a full disallow until the server recovers. It is cached like a success.

    Redirects of robots.txt itself are followed by the downloader (unchecked); robots.txt itself is always
    allowed. The engine asks `allows` about each redirect hop of a page as well (a new origin reached by a
    hop has its robots.txt fetched then).

    Args:
        downloader: Fetches robots.txt (normally the crawl's default downloader, so politeness settings
            and cookies are the same).
        user_agent: The token (or full `User-Agent`) rules are matched against; Protego finds the product
            token inside a full header such as `mocra/0.1.0`.
        max_origins: Origins kept in the cache; the oldest entry is dropped beyond it.

    Example:
        >>> import anyio
        >>> from mocra_core.download import HttpxDownloader
        >>> from mocra_core.testing import LocalServer, ServerResponse
        >>> server = LocalServer({"/robots.txt": ServerResponse(body="User-agent: *\nDisallow: /private")})
        >>> async def main() -> tuple[bool, bool]:
        ...     async with server.running() as base, HttpxDownloader() as downloader:
        ...         robots = RobotsPolicy(downloader, user_agent="mocra")
        ...         return (await robots.allowed(Request(base + "/a")),
        ...                 await robots.allowed(Request(base + "/private/b")))
        >>> anyio.run(main)
        (True, False)
    """

    def __init__(self, downloader: Downloader, *, user_agent: str, max_origins: int = 10_000) -> None:
        self._downloader = downloader
        self.user_agent = user_agent
        self._max_origins = max_origins
        self._parsed: dict[str, Protego] = {}
        self._pending: dict[str, anyio.Event] = {}

    async def allowed(self, request: Request) -> bool:
        """Whether robots.txt lets `user_agent` fetch `request.url`; fetches robots.txt on first use."""
        return await self.allows(request.url)

    async def allows(self, url: str) -> bool:
        """Whether robots.txt lets `user_agent` fetch `url` (a redirect's target, say); as `allowed`."""
        origin = origin_of(url)
        rules = self._parsed.get(origin)
        if rules is None:
            rules = await self._load(origin)
        return rules is _ALLOW_ALL or rules.can_fetch(url, self.user_agent)

    def crawl_delay(self, url_or_origin: str) -> float | None:
        """The cached `Crawl-delay` for `user_agent` at this origin (seconds), or `None` (unknown or unset).

        Feed it to `DomainLimiter.configure(url, delay=...)` after the first `allowed` call on the origin.
        """
        rules = self._parsed.get(origin_of(url_or_origin))
        if rules is None or rules is _ALLOW_ALL:
            return None
        return rules.crawl_delay(self.user_agent)

    async def _load(self, origin: str) -> Protego:
        while True:
            rules = self._parsed.get(origin)
            if rules is not None:
                return rules
            pending = self._pending.get(origin)
            if pending is None:
                break
            await pending.wait()  # the fetcher stores the result, or gives up (cancelled): try again
        done = self._pending[origin] = anyio.Event()
        try:
            rules = await self._fetch(origin)
            self._store(origin, rules)
            return rules
        finally:
            del self._pending[origin]
            done.set()

    async def _fetch(self, origin: str) -> Protego:
        url = origin + "/robots.txt"
        try:
            response = await self._downloader.download(Request(url, dont_filter=True, max_retries=0))
        except DownloadError as exc:
            logger.info("robots.txt of %s could not be fetched (%s): allowing everything", origin, exc)
            return _ALLOW_ALL
        if response.status >= 400:
            logger.debug("robots.txt of %s: HTTP %d, allowing everything", origin, response.status)
            return _ALLOW_ALL
        if not 200 <= response.status < 300:
            return _ALLOW_ALL
        text = response.body[:_MAX_ROBOTS_BYTES].decode("utf-8", errors="replace")
        try:
            return Protego.parse(text)
        except Exception:  # Protego is lenient; never let a broken file stop the crawl
            logger.warning("robots.txt of %s could not be parsed: allowing everything", origin, exc_info=True)
            return _ALLOW_ALL

    def _store(self, origin: str, rules: Protego) -> None:
        if len(self._parsed) >= self._max_origins:
            del self._parsed[next(iter(self._parsed))]
        self._parsed[origin] = rules

    def __repr__(self) -> str:
        return f"<RobotsPolicy user_agent={self.user_agent!r} origins={len(self._parsed)}>"
