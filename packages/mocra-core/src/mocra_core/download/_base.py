"""`PooledDownloader`: what the built-in downloaders share around their exchange.

Settings, default headers, the cookie jar and its per-key sessions, the proxy route, the total timeout
and the `Response`; a subclass supplies the exchange itself (`_exchange`: one request, its redirects
and its body, through a way `V` to the server: an httpx transport, or a proxy URL for aiohttp).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import TYPE_CHECKING, Generic, TypeVar

import anyio
import httpx
from anyio.abc import AsyncResource

from .._errors import DownloadTimeout, UnfetchableURL
from ..http import Response
from ._body import CLOSE_TIMEOUT
from ._headers import HeaderDefaults
from ._proxied import through_fixed, through_pool
from ._proxy_route import PoolRoute, ProxyRoute
from ._settings import DownloadSettings

if TYPE_CHECKING:
    from collections import Counter
    from types import TracebackType

    from ..http import Request
    from ._fetched import Fetched
    from ._protocol import HopCheck
    from ._proxied import Vias
    from ._session import DownloaderSession

__all__ = ("PooledDownloader",)

V = TypeVar("V")
S = TypeVar("S", bound="DownloaderSession")


class PooledDownloader(AsyncResource, Generic[V]):
    """The shared half of `HttpxDownloader` and `AiohttpDownloader` (see their class notes).

    Args:
        settings: Timeouts, caps, pool size and default headers.
        name: The name requests use to pick this downloader (`Request.downloader`).
        proxies: Which proxy each request goes through; `None`: the run's `[proxy]` route, once the
            engine sets it (`route_proxies`), and a request's `meta["proxy"]` URL until then.
        vias: The way through each proxy URL.
    """

    def __init__(
        self, settings: DownloadSettings | None, *, name: str, proxies: ProxyRoute | None, vias: Vias[V]
    ) -> None:
        self.name = name
        self.settings = settings = settings or DownloadSettings()
        self._headers = HeaderDefaults(settings)
        self._cookies = httpx.Cookies()
        self._sessions: dict[str, DownloaderSession] = {}
        self._closed = False
        self._proxies = ProxyRoute() if proxies is None else proxies  # empty: meta["proxy"] URLs still work
        self._routed_by_run = proxies is None
        self._via = vias

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
            await self._close_pool()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close within `CLOSE_TIMEOUT` seconds, shielded from the block's cancellation."""
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            await self.aclose()

    # ------------------------------------------------------------------ for subclasses

    def _session(self, key: str, make: type[S]) -> S:
        found = self._sessions.get(key)
        if not isinstance(found, make):
            found = make(self, key)
            self._sessions[key] = found
        return found

    def _forget(self, session: DownloaderSession) -> None:
        if self._sessions.get(session.key) is session:
            del self._sessions[session.key]

    @abstractmethod
    def _direct(self) -> V:
        """The way to send a request without a proxy."""

    @abstractmethod
    async def _exchange(self, request: Request, jar: httpx.Cookies, hop: HopCheck | None, via: V) -> Fetched:
        """Send `request` through `via`, following redirects; read and decode the final body."""

    @abstractmethod
    async def _close_pool(self) -> None:
        """Release the connections (called once)."""

    # ------------------------------------------------------------------ the exchange

    async def _fetch(
        self, request: Request, jar: httpx.Cookies, hop: HopCheck | None, key: str | None
    ) -> Response:
        if self._closed:
            raise RuntimeError(f"downloader {self.name!r} is closed")
        timeout = request.timeout if request.timeout is not None else self.settings.total_timeout
        start = time.perf_counter()
        try:
            fetched = await self._within(timeout, request, jar, hop, key)
        except TimeoutError as exc:
            raise DownloadTimeout(
                f"{request.method} {request.url} timed out: no complete response within {timeout}s "
                "(total timeout)",
                request=request,
            ) from exc
        url, status, headers, body = fetched
        return Response(url, status, headers, body, request, elapsed=time.perf_counter() - start)

    async def _within(
        self, seconds: float, request: Request, jar: httpx.Cookies, hop: HopCheck | None, key: str | None
    ) -> Fetched:
        """`_routed` within `seconds`; `TimeoutError` when they run out (any async backend)."""
        with anyio.fail_after(seconds):
            return await self._routed(request, jar, hop, key)

    async def _routed(
        self, request: Request, jar: httpx.Cookies, hop: HopCheck | None, key: str | None
    ) -> Fetched:
        route = self._proxies
        try:
            choice = route.choose(request)
        except ValueError as exc:
            message = f"cannot request {request.url}: {exc}"
            raise UnfetchableURL(request.url, message, request=request) from None
        if choice is None:
            return await self._exchange(request, jar, hop, self._direct())

        async def exchange(via: V) -> Fetched:
            return await self._exchange(request, jar, hop, via)

        if isinstance(choice, PoolRoute):
            return await through_pool(choice, self._via, exchange, request, key=key, failures=route.failures)
        return await through_fixed(choice, self._via, exchange, request, failures=route.failures)
