"""`HttpxDownloader`: the default `Downloader`, httpx's model over a pooled transport (aiohttp or httpcore).

Requests go straight to an `httpx.AsyncBaseTransport` rather than through `httpx.AsyncClient.send`: the
client's per-request machinery (auth flow, cookie extraction through urllib shims, redirect bookkeeping)
doubled the CPU cost of a page in `benchmarks/bench_transport.py`, and this class does its own redirects,
cookies, timeouts and body decoding anyway. Users still see httpx types (`httpx.Headers`, transports).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Self

import anyio
import httpx

from .._errors import DownloadError, DownloadTimeout, HopRefused, UnfetchableURL
from ..http import Response
from ._body import CLOSE_TIMEOUT, discard_body, read_body
from ._decode import ACCEPT_ENCODING
from ._protocol import Hop
from ._proxied import through_fixed, through_pool
from ._proxy_route import PoolRoute, ProxyRoute
from ._proxy_transports import ProxyTransports
from ._redirects import (
    REDIRECT_STATUSES,
    RedirectTrail,
    crosses_origin,
    drop_credentials,
    redirect_method,
    redirect_target,
)
from ._settings import DownloadSettings
from ._transport import build_transport, map_error, transport_errors

if TYPE_CHECKING:
    from collections import Counter
    from types import TracebackType

    from ..http import Request
    from ._protocol import HopCheck

__all__ = ("HttpxDownloader", "HttpxSession")

logger = logging.getLogger(__name__)


class HttpxDownloader:
    """The default downloader: pooled HTTP/1.1 with timeouts, redirects, cookies and a decoded-size cap.

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
        self.name = name
        self.settings = settings = settings or DownloadSettings()
        self._transport = transport or build_transport(settings)
        self._errors = transport_errors()
        defaults = {
            "user-agent": ("User-Agent", settings.user_agent),
            "accept-encoding": ("Accept-Encoding", ACCEPT_ENCODING),
        }
        for key, value in settings.headers.items():
            defaults[key.lower()] = (key, value)
        self._default_headers = defaults
        self._default_list = list(defaults.values())
        self._extensions: dict[str, Any] = {
            "timeout": {
                "connect": settings.connect_timeout,
                "read": settings.read_timeout,
                "write": settings.read_timeout,
                "pool": None,  # waiting for a pooled connection is bounded by the total timeout
            }
        }
        self._cookies = httpx.Cookies()
        self._sessions: dict[str, HttpxSession] = {}
        self._closed = False
        self._proxies = ProxyRoute() if proxies is None else proxies  # empty: meta["proxy"] URLs still work
        self._routed_by_run = proxies is None
        self._via = ProxyTransports(settings)

    @property
    def proxies(self) -> ProxyRoute:
        """Which proxy each request goes through (an empty route: none, unless `meta["proxy"]` names one)."""
        return self._proxies

    @property
    def routed_by_run(self) -> bool:
        """True until a route is given (here or by `route_proxies`): the run's `[proxy]` route applies."""
        return self._routed_by_run

    @property
    def proxy_failures(self) -> Counter[str]:
        """Proxy failures (connect or proxy errors, ban statuses) by redacted proxy URL (the route's)."""
        return self._proxies.failures

    def route_proxies(self, route: ProxyRoute) -> None:
        """Send requests through `route` from now on (the engine sets the run's `[proxy]` route)."""
        self._proxies = route
        self._routed_by_run = False

    @property
    def cookies(self) -> httpx.Cookies:
        """The downloader's own cookie jar (sessions have theirs)."""
        return self._cookies

    def session(self, key: str) -> HttpxSession:
        """A downloader sharing this one's pool and settings but with its own cookie jar, one per `key`.

        The same key returns the same session until it is closed. Use one per account or login.
        """
        found = self._sessions.get(key)
        if found is None:
            found = self._sessions[key] = HttpxSession(self, key)
        return found

    async def download(self, request: Request, *, hop: HopCheck | None = None) -> Response:
        """Fetch `request`, following redirects; any HTTP status is a `Response` (see the class notes).

        Args:
            request: The request to send.
            hop: Asked before each redirect hop is sent; a reason it returns stops the download.

        Raises:
            HopRefused: `hop` refused a redirect hop (it was not sent).
            DownloadError: The exchange failed (see `Downloader`).
        """
        return await self._fetch(request, self._cookies, hop, None)

    async def aclose(self) -> None:
        """Close the pool (and every session's use of it); idempotent."""
        if not self._closed:
            self._closed = True
            self._sessions.clear()
            await self._transport.aclose()
            await self._via.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            await self.aclose()

    def __repr__(self) -> str:
        return f"<HttpxDownloader {self.name!r} transport={self.settings.transport!r}>"

    # ------------------------------------------------------------------ the exchange

    async def _fetch(
        self, request: Request, jar: httpx.Cookies, hop: HopCheck | None, key: str | None
    ) -> Response:
        if self._closed:
            raise RuntimeError(f"downloader {self.name!r} is closed")
        timeout = request.timeout if request.timeout is not None else self.settings.total_timeout
        start = time.perf_counter()
        try:
            with anyio.fail_after(timeout):
                url, resp, body = await self._routed(request, jar, hop, key)
        except TimeoutError as exc:
            raise DownloadTimeout(
                f"{request.method} {request.url} timed out: no complete response within {timeout}s "
                "(total timeout)",
                request=request,
            ) from exc
        return Response(
            url, resp.status_code, resp.headers, body, request, elapsed=time.perf_counter() - start
        )

    async def _routed(
        self, request: Request, jar: httpx.Cookies, hop: HopCheck | None, key: str | None
    ) -> tuple[str, httpx.Response, bytes]:
        route = self._proxies
        try:
            choice = route.choose(request)
        except ValueError as exc:
            message = f"cannot request {request.url}: {exc}"
            raise UnfetchableURL(request.url, message, request=request) from None
        if choice is None:
            return await self._exchange(request, jar, hop, self._transport)

        async def exchange(transport: httpx.AsyncBaseTransport) -> tuple[str, httpx.Response, bytes]:
            return await self._exchange(request, jar, hop, transport)

        if isinstance(choice, PoolRoute):
            return await through_pool(choice, self._via, exchange, request, key=key, failures=route.failures)
        return await through_fixed(choice, self._via, exchange, request, failures=route.failures)

    def _headers(self, request: Request) -> list[tuple[str, str]]:
        if not request.headers:
            return self._default_list
        merged = self._default_headers.copy()
        for key, value in request.headers.items():
            merged[key.lower()] = (key, value)
        return list(merged.values())

    async def _exchange(
        self, request: Request, jar: httpx.Cookies, hop: HopCheck | None, transport: httpx.AsyncBaseTransport
    ) -> tuple[str, httpx.Response, bytes]:
        method, url, content = request.method, request.url, request.body
        headers = self._headers(request)
        explicit_cookie = any(k.lower() == "cookie" for k, _ in headers) if request.headers else False
        first_host: str | None = None
        trail: RedirectTrail | None = None
        while True:
            http_request = self._build(method, url, headers, content, request)
            host = http_request.url.host
            if first_host is None:
                first_host = host
            if not explicit_cookie:
                _add_cookies(http_request, jar, request.cookies if host == first_host else None)
            resp = await self._send(transport, http_request, request, url)
            if "set-cookie" in resp.headers:
                resp.request = http_request
                jar.extract_cookies(resp)
            location = resp.headers.get("location") if resp.status_code in REDIRECT_STATUSES else None
            if location is None or self.settings.max_redirects == 0:
                body = await read_body(
                    resp,
                    request,
                    url,
                    method,
                    max_body_bytes=self.settings.max_body_bytes,
                    errors=self._errors,
                )
                return url, resp, body
            await discard_body(resp, request, url, errors=self._errors)
            if trail is None:
                trail = RedirectTrail(request, self.settings.max_redirects)
            trail.step(method, url, http_request.headers.get("cookie"))
            next_url = redirect_target(http_request, location, request)
            status = resp.status_code
            method, content, headers = redirect_method(status, method, content, headers)
            if crosses_origin(http_request.url, next_url):
                headers = drop_credentials(headers)
                explicit_cookie = False
            target = str(next_url)
            if hop is not None:
                refused = await hop(Hop(target, method, content, status))
                if refused is not None:
                    raise HopRefused(target, refused, request=request)
            logger.debug("redirect %d %s -> %s", status, url, target)
            url = target

    def _build(
        self, method: str, url: str, headers: list[tuple[str, str]], content: bytes | None, request: Request
    ) -> httpx.Request:
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
        pairs: dict[str, str] = {}
        current = http_request.headers.get("cookie")
        if current:
            for part in current.split(";"):
                name, _, value = part.strip().partition("=")
                pairs[name] = value
        pairs.update(extra)
        http_request.headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in pairs.items())


class HttpxSession:
    """A view of an `HttpxDownloader` with its own cookie jar (one login, one account); see `session`.

    It shares the parent's pool and settings; closing it forgets its cookies, not the pool.
    """

    def __init__(self, parent: HttpxDownloader, key: str) -> None:
        self._parent = parent
        self.key = key
        self.name = f"{parent.name}[{key}]"
        self._cookies = httpx.Cookies()

    @property
    def cookies(self) -> httpx.Cookies:
        """This session's cookie jar."""
        return self._cookies

    async def download(self, request: Request, *, hop: HopCheck | None = None) -> Response:
        """Fetch `request` with this session's cookies (see `HttpxDownloader.download`)."""
        return await self._parent._fetch(request, self._cookies, hop, self.key)

    async def aclose(self) -> None:
        """Forget this session's cookies; the parent's pool stays open."""
        self._cookies.clear()
        if self._parent._sessions.get(self.key) is self:
            del self._parent._sessions[self.key]

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<HttpxSession {self.name!r}>"
