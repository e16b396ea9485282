"""`HttpxDownloader`: a `Downloader` in httpx's model over a pooled httpx transport (aiohttp or httpcore).

Requests go straight to an `httpx.AsyncBaseTransport` rather than through `httpx.AsyncClient.send`: the
client's per-request machinery (auth flow, cookie extraction through urllib shims, redirect bookkeeping)
doubled the CPU cost of a page in `benchmarks/bench_transport.py`, and this class does its own redirects,
cookies, timeouts and body decoding anyway. Users still see httpx types (`httpx.Headers`, transports).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from .._errors import DownloadError, UnfetchableURL
from ._base import PooledDownloader
from ._body import discard_body, read_body
from ._cookies import merge_cookies
from ._fetched import Fetched
from ._headers import has_cookie_header
from ._proxy_transports import ProxyTransports
from ._redirects import REDIRECT_STATUSES, Leg, RedirectTrail
from ._session import DownloaderSession
from ._settings import DownloadSettings
from ._transport import build_transport, map_error, transport_errors

if TYPE_CHECKING:
    from ..http import Request
    from ._protocol import HopCheck
    from ._proxy_route import ProxyRoute

__all__ = ("HttpxDownloader", "HttpxSession")


class HttpxDownloader(PooledDownloader[httpx.AsyncBaseTransport]):
    """httpx's model at the seam: pooled HTTP/1.1 with timeouts, redirects, cookies and a decoded-size cap.

    `AiohttpDownloader` (the default, `DownloadSettings.transport="aiohttp"`) behaves the same without
    httpx objects per request; this one is `transport="httpx-aiohttp"` (an aiohttp pool under httpx's
    model) or `"httpx"` (httpx's own pool), and takes any httpx transport (`transport=`).

    - One connection pool for every host (`max_connections`), shared by all sessions.
    - Timeouts: `connect_timeout` and `read_timeout` per socket operation; `total_timeout` (or
      `Request.timeout`) bounds the whole exchange, every redirect hop and the full body included.
    - Redirects are followed here, up to `max_redirects` hops, with loop detection (the same method, URL and
      cookies twice). 301/302 turn a POST into a body-less GET, 303 turns anything but HEAD into one (as
      browsers do); 307/308 keep method and body. Credentials (`Authorization`, an explicit `Cookie` header,
      `Request.cookies`) are not sent to another host. `Response.url` is the final URL. `download(request,
      hop=check)` asks `check` before sending each hop and stops with `HopRefused` when it refuses one
      (`HopCheckingDownloader`); the engine passes its dedup and robots.txt check there.
    - Bodies are decoded (gzip, deflate; br with Brotli >= 1.2) while streaming and capped at
      `max_body_bytes` *after* decoding, so a gzip bomb stops at the cap. Headers stay as received
      (`Content-Encoding` included, as in httpx).
    - Cookies set by responses are kept in a jar and sent on later requests to the same site (ports are not
      distinguished, per RFC 6265). The downloader has one jar; `session(key)` gives a view with its own.
      `Request.cookies` are added for that request (over jar cookies of the same name); an explicit
      `Cookie` header in `Request.headers` is sent as it is, instead of both.
    - `Request.headers` are merged over the settings' default headers (case-insensitively).

    Args:
        settings: Timeouts, caps, pool size, transport and default headers.
        name: The name requests use to pick this downloader (`Request.downloader`).
        transport: An httpx transport to use instead of the one `settings.transport` names (a proxy
            transport, `httpx.MockTransport`, ...); the downloader closes it.
        proxies: Which proxy each request goes through (`ProxyRoute`: a fixed URL or a pool, and a
            request's `meta["proxy"]`); `None` sends everything directly. Through a pool, every outcome is
            reported to it, and a proxy failure is tried once more through another proxy;
            `proxy_failures` counts them by redacted proxy URL.

    Example:
        >>> import anyio
        >>> from mocra_core.http import Request
        >>> from mocra_core.testing import LocalServer, ServerResponse
        >>> server = LocalServer({"/": ServerResponse(body="<h1>hi</h1>")})
        >>> async def main() -> tuple[int, bytes]:
        ...     async with server.running() as base_url, HttpxDownloader() as downloader:
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
        transport: httpx.AsyncBaseTransport | None = None,
        proxies: ProxyRoute | None = None,
    ) -> None:
        settings = settings or DownloadSettings()
        self._via: ProxyTransports = ProxyTransports(settings)
        super().__init__(settings, name=name, proxies=proxies, vias=self._via)
        self._transport = transport or build_transport(self.settings)
        self._errors = transport_errors()
        self._extensions: dict[str, Any] = {
            "timeout": {
                "connect": self.settings.connect_timeout,
                "read": self.settings.read_timeout,
                "write": self.settings.read_timeout,
                "pool": None,  # waiting for a pooled connection is bounded by the total timeout
            }
        }

    def session(self, key: str) -> HttpxSession:
        """A downloader sharing this one's pool and settings but with its own cookie jar, one per `key`.

        The same key returns the same session until it is closed. Use one per account or login.
        """
        return self._session(key, HttpxSession)

    def _direct(self) -> httpx.AsyncBaseTransport:
        return self._transport

    async def _close_pool(self) -> None:
        await self._transport.aclose()
        await self._via.aclose()

    def __repr__(self) -> str:
        return f"<HttpxDownloader {self.name!r} transport={self.settings.transport!r}>"

    # ------------------------------------------------------------------ the exchange

    async def _exchange(
        self, request: Request, jar: httpx.Cookies, hop: HopCheck | None, via: httpx.AsyncBaseTransport
    ) -> Fetched:
        headers = self._headers.merged(request)
        leg = Leg(request.method, request.url, request.body, headers, has_cookie_header(request, headers))
        first_host: str | None = None
        trail: RedirectTrail | None = None
        while True:
            http_request = self._build(leg, request)
            host = http_request.url.host
            if first_host is None:
                first_host = host
            if not leg.explicit_cookie:
                _add_cookies(http_request, jar, request.cookies if host == first_host else None)
            resp = await self._send(via, http_request, request, leg.url)
            if "set-cookie" in resp.headers:
                resp.request = http_request
                jar.extract_cookies(resp)
            location = resp.headers.get("location") if resp.status_code in REDIRECT_STATUSES else None
            if location is None or self.settings.max_redirects == 0:
                body = await read_body(
                    resp,
                    request,
                    leg.url,
                    leg.method,
                    max_body_bytes=self.settings.max_body_bytes,
                    errors=self._errors,
                )
                return Fetched(leg.url, resp.status_code, resp.headers, body)
            await discard_body(resp, request, leg.url, errors=self._errors)
            if trail is None:
                trail = RedirectTrail(request, self.settings.max_redirects, hop)
            cookie = http_request.headers.get("cookie")
            leg, _ = await trail.follow(leg, cookie, http_request.url, resp.status_code, location)

    def _build(self, leg: Leg, request: Request) -> httpx.Request:
        method, url, content, headers, _ = leg
        try:
            return httpx.Request(method, url, headers=headers, content=content, extensions=self._extensions)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:  # IDNAError is a ValueError
            raise UnfetchableURL(url, f"cannot request {method} {url}: {exc}", request=request) from exc
        except TypeError as exc:  # a header or body of the wrong type
            raise DownloadError(f"cannot request {method} {url}: {exc}", request=request) from exc

    async def _send(
        self, transport: httpx.AsyncBaseTransport, http_request: httpx.Request, request: Request, url: str
    ) -> httpx.Response:
        try:
            return await transport.handle_async_request(http_request)
        except self._errors as exc:
            raise map_error(exc, request, url) from exc


def _add_cookies(http_request: httpx.Request, jar: httpx.Cookies, extra: dict[str, str] | None) -> None:
    if jar:
        jar.set_cookie_header(http_request)
    if extra:
        http_request.headers["Cookie"] = merge_cookies(http_request.headers.get("cookie"), extra)


class HttpxSession(DownloaderSession):
    """A view of an `HttpxDownloader` with its own cookie jar (one login, one account); see `session`.

    It shares the parent's pool and settings; closing it forgets its cookies, not the pool.
    """
