"""`AiohttpDownloader`: the default `Downloader`, aiohttp natively (no httpx objects per request).

Same behaviour as `HttpxDownloader` (the same redirect rules, body cap and decoder, cookie jar, proxy
route and errors: `tests/download` runs every test against both); what it saves is httpx's model per
request (`httpx.Request`, `httpx.URL` parsing, the httpx-aiohttp wrapper): ~0.2 CPU ms a page in
`benchmarks/README.md`, "Downloader transport". httpx objects are built only where they are rare: a
redirect's `Location` (`httpx.URL.join`), and the `httpx.Headers` of the `Response`.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import httpx

from .._errors import DownloadError, UnfetchableURL
from ._aiohttp_body import discard_aiohttp_body, read_aiohttp_body
from ._base import PooledDownloader
from ._cookies import cookie_header, merge_cookies, store_cookies
from ._fetched import Fetched
from ._headers import has_cookie_header
from ._redirects import REDIRECT_STATUSES, Leg, RedirectTrail
from ._session import DownloaderSession
from ._transport import SKIP_AUTO_HEADERS, map_error

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    import aiohttp

    from ..http import Request
    from ._protocol import HopCheck
    from ._proxy_route import ProxyRoute
    from ._settings import DownloadSettings

__all__ = ("AiohttpDownloader", "AiohttpSession")


class _ProxyURLs:
    """aiohttp takes the proxy per request (one pool, keyed by proxy): the way through a proxy is its URL."""

    @asynccontextmanager
    async def using(self, url: str) -> AsyncIterator[str | None]:
        yield url


class AiohttpDownloader(PooledDownloader[str | None]):
    """The default downloader: aiohttp's pool, with timeouts, redirects, cookies and a decoded-size cap.

    Behaves as `HttpxDownloader` does (see its class notes: one pool for every host, connect and read
    timeouts per socket operation and a total one per exchange, redirects followed here with
    `HopCheckingDownloader`'s hook, bodies decoded under `max_body_bytes`, a cookie jar and
    `session(key)` views with their own, default headers, a `ProxyRoute` per request); it only skips
    httpx's model per request. `DownloadSettings.transport="aiohttp"` (the default) makes one in the
    engine (`build_downloader`). aiohttp is imported when the first one is made.

    Args:
        settings: Timeouts, caps, pool size, TLS verification and default headers.
        name: The name requests use to pick this downloader (`Request.downloader`).
        proxies: Which proxy each request goes through (`ProxyRoute`); `None` sends everything directly
            (a request's `meta["proxy"]` URL still applies). Through a pool, every outcome is reported to
            it, and a proxy failure is tried once more through another proxy.

    Example:
        >>> import anyio
        >>> from mocra_core.http import Request
        >>> from mocra_core.testing import LocalServer, ServerResponse
        >>> server = LocalServer({"/": ServerResponse(body="<h1>hi</h1>")})
        >>> async def main() -> tuple[int, bytes]:
        ...     async with server.running() as base_url, AiohttpDownloader() as downloader:
        ...         response = await downloader.download(Request(base_url + "/"))
        ...         return response.status, response.body
        >>> anyio.run(main)
        (200, b'<h1>hi</h1>')
    """

    def __init__(
        self,
        settings: DownloadSettings | None = None,
        *,
        name: str = "default",
        proxies: ProxyRoute | None = None,
    ) -> None:
        import aiohttp

        super().__init__(settings, name=name, proxies=proxies, vias=_ProxyURLs())
        self._client: aiohttp.ClientSession | None = None
        self._errors: tuple[type[BaseException], ...] = (aiohttp.ClientError, OSError)
        self._invalid_url = aiohttp.InvalidURL

    def session(self, key: str) -> AiohttpSession:
        """A downloader sharing this one's pool and settings but with its own cookie jar, one per `key`.

        The same key returns the same session until it is closed. Use one per account or login.
        """
        return self._session(key, AiohttpSession)

    def __repr__(self) -> str:
        return f"<AiohttpDownloader {self.name!r}>"

    async def _within(
        self, seconds: float, request: Request, jar: httpx.Cookies, hop: HopCheck | None, key: str | None
    ) -> Fetched:
        # aiohttp runs on asyncio only, whose own timeout costs a third of anyio's cancel scope (~6 vs
        # ~16 us a request); an outer cancel still propagates as a cancel, not as this timeout
        async with asyncio.timeout(seconds):
            return await self._routed(request, jar, hop, key)

    def _direct(self) -> str | None:
        return None

    async def _close_pool(self) -> None:
        if self._client is not None:
            await self._client.close()

    def _open(self) -> aiohttp.ClientSession:
        """The aiohttp session, made on first use (inside the event loop, as aiohttp wants)."""
        import aiohttp

        settings = self.settings
        tls = httpx.create_ssl_context(verify=settings.verify, trust_env=False)  # httpx's CA bundle
        self._client = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=settings.max_connections, ssl=tls),
            cookie_jar=aiohttp.DummyCookieJar(),  # cookies are ours, per session
            auto_decompress=False,  # decoded by BodyDecoder, under the size cap
            # the pool wait and the whole exchange are bounded by the total timeout (`_within`)
            timeout=aiohttp.ClientTimeout(
                total=None,
                connect=None,
                sock_connect=settings.connect_timeout,
                sock_read=settings.read_timeout,
            ),
            skip_auto_headers=SKIP_AUTO_HEADERS,  # send exactly our headers, as httpx does
            trust_env=False,
            max_line_size=65536,
            max_field_size=65536,
        )
        # aiohttp resends an idempotent request once when the connection drops; a retry is the engine's
        # (`RetryPolicy`), and through a proxy pool another proxy's: never a second hit here
        if hasattr(self._client, "_retry_connection"):
            self._client._retry_connection = False
        return self._client

    # ------------------------------------------------------------------ the exchange

    async def _exchange(
        self, request: Request, jar: httpx.Cookies, hop: HopCheck | None, via: str | None
    ) -> Fetched:
        client = self._client or self._open()
        headers = self._headers.merged(request)
        leg = Leg(request.method, request.url, request.body, headers, has_cookie_header(request, headers))
        extra: Mapping[str, str] | None = request.cookies or None
        first_host: str | None = None
        trail: RedirectTrail | None = None
        if "xn--" in leg.url.lower():
            _check_idna(leg.method, leg.url, request)
        while True:
            method, url, content, headers, explicit_cookie = leg
            cookie = None if explicit_cookie else _cookie_for(jar, url, extra)
            sent = headers if cookie is None else [*headers, ("Cookie", cookie)]
            resp = await self._send(client, method, url, sent, content, via, request)
            received = resp.headers
            if "Set-Cookie" in received:
                store_cookies(jar, url, received.getall("Set-Cookie"))
            status = resp.status
            location = received.get("Location") if status in REDIRECT_STATUSES else None
            if location is None or self.settings.max_redirects == 0:
                max_body = self.settings.max_body_bytes
                body = await read_aiohttp_body(
                    resp, request, url, method, max_body_bytes=max_body, errors=self._errors
                )
                return Fetched(url, status, httpx.Headers(resp.raw_headers), body)
            await discard_aiohttp_body(resp, request, url, errors=self._errors)
            if trail is None:
                trail = RedirectTrail(request, self.settings.max_redirects, hop)
            base = httpx.URL(url)
            if first_host is None:
                first_host = base.host
            leg, target = await trail.follow(leg, cookie, base, status, location)
            extra = (request.cookies or None) if target.host == first_host else None

    async def _send(
        self,
        client: aiohttp.ClientSession,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        content: bytes | None,
        via: str | None,
        request: Request,
    ) -> aiohttp.ClientResponse:
        try:
            return await client.request(
                method, url, headers=headers, data=content, allow_redirects=False, proxy=via
            )
        except self._invalid_url as exc:
            raise UnfetchableURL(url, f"cannot request {method} {url}: {exc}", request=request) from exc
        except self._errors as exc:
            raise map_error(exc, request, url) from exc
        except (ValueError, TypeError) as exc:  # a header or body aiohttp cannot send
            raise DownloadError(f"cannot request {method} {url}: {exc}", request=request) from exc


def _cookie_for(jar: httpx.Cookies, url: str, extra: Mapping[str, str] | None) -> str | None:
    current = cookie_header(jar, url)
    return merge_cookies(current, extra) if extra else current


def _check_idna(method: str, url: str, request: Request) -> None:
    """Refuse a URL whose punycode host does not decode (aiohttp would only fail at DNS time)."""
    try:
        httpx.URL(url).host  # noqa: B018 - decoding the host is the check
    except (httpx.InvalidURL, ValueError) as exc:  # IDNAError is a ValueError
        raise UnfetchableURL(url, f"cannot request {method} {url}: {exc}", request=request) from exc


class AiohttpSession(DownloaderSession):
    """A view of an `AiohttpDownloader` with its own cookie jar (one login, one account); see `session`.

    It shares the parent's pool and settings; closing it forgets its cookies, not the pool.
    """
