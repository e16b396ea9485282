"""One exchange through a proxy: a fixed one, or leased from a pool with every outcome reported back.

A proxy failure (a connect or proxy error, a timeout, a ban status such as 403 or 407) is reported to
the pool and the exchange is tried once more through another lease, within the same download attempt:
it costs the page at most one of its own retries. Failures are counted by redacted proxy URL.

The exchange is the downloader's: `exchange(via)` with what `vias.using(proxy_url)` yields (an httpx
transport per proxy for `HttpxDownloader`, the proxy URL itself for `AiohttpDownloader`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Protocol, TypeVar
from urllib.parse import urlsplit

from .._errors import DownloadError, DownloadTimeout, redact

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import Awaitable, Callable
    from contextlib import AbstractAsyncContextManager

    from ..http import Request
    from ._fetched import Fetched
    from ._proxy_route import PoolRoute, ProxyLease

__all__ = ("Vias", "through_fixed", "through_pool")

V = TypeVar("V")
V_co = TypeVar("V_co", covariant=True)


class Vias(Protocol[V_co]):
    """What a downloader sends through for a proxy URL, held while one exchange uses it."""

    def using(self, url: str) -> AbstractAsyncContextManager[V_co]:
        """The way through proxy `url` (made on first use), held open until the block ends."""
        ...


logger = logging.getLogger(__name__)

_PROXY_FAULTS = (DownloadError, DownloadTimeout)  # exactly these; the subclasses are the page's own


async def through_fixed(
    url: str,
    transports: Vias[V],
    exchange: Callable[[V], Awaitable[Fetched]],
    request: Request,
    *,
    failures: Counter[str],
) -> Fetched:
    """`exchange` through the fixed proxy `url`; a failure is counted and names the proxy, redacted."""
    async with transports.using(url) as transport:
        try:
            return await exchange(transport)
        except DownloadError as exc:
            if type(exc) not in _PROXY_FAULTS:
                raise
            proxy = redact(url)
            failures[proxy] += 1
            raise type(exc)(f"{exc} (via proxy {proxy})", request=request) from exc


async def through_pool(
    route: PoolRoute,
    transports: Vias[V],
    exchange: Callable[[V], Awaitable[Fetched]],
    request: Request,
    *,
    key: str | None,
    failures: Counter[str],
) -> Fetched:
    """`exchange` through a proxy leased from `route`, retried once through another on a proxy failure.

    Raises:
        DownloadError: no proxy could be leased, or both proxies failed (the message names the last one,
            redacted); the page's own failures (`BodyTooLarge`, `HopRefused`, ...) as they are.
    """
    domain = urlsplit(request.url).hostname
    for attempt in (1, 2):
        leasing = route.leaser.lease(key=key, domain=domain, timeout=route.lease_timeout)
        try:
            lease = await leasing.__aenter__()
        except Exception as exc:  # the pool's own error (NoProxyAvailable), whatever pool it is
            raise DownloadError(
                f"{request.method} {request.url}: no proxy from pool {route.name!r}: "
                f"{type(exc).__name__}: {exc}",
                request=request,
            ) from exc
        try:
            result = await _once(route, transports, exchange, request, lease, failures, last=attempt == 2)
        finally:
            await leasing.__aexit__(None, None, None)  # reported already (or cancelled: not its fault)
        if result is not None:
            return result
    raise AssertionError("unreachable: the second attempt returns or raises")  # pragma: no cover


async def _once(
    route: PoolRoute,
    transports: Vias[V],
    exchange: Callable[[V], Awaitable[Fetched]],
    request: Request,
    lease: ProxyLease,
    failures: Counter[str],
    *,
    last: bool,
) -> Fetched | None:
    """One try through `lease`, reported; `None` when the proxy failed and another may be tried."""
    proxy = lease.proxy.redacted
    start = time.perf_counter()
    async with transports.using(lease.proxy.url) as transport:
        try:
            result = await exchange(transport)
        except DownloadError as exc:
            latency = time.perf_counter() - start
            if type(exc) not in _PROXY_FAULTS:
                await lease.ok(None, latency=latency)  # the proxy carried it; the page failed
                raise
            error = type(exc.__cause__ or exc).__name__
            await lease.failed(error=error, latency=latency)
            failures[proxy] += 1
            logger.info("proxy %s failed for %s %s: %s", proxy, request.method, request.url, error)
            if last:
                raise type(exc)(f"{exc} (via proxy {proxy})", request=request) from exc
            return None
    latency = time.perf_counter() - start
    status = result.status
    if status in route.ban_statuses:
        await lease.failed(status, latency=latency)
        failures[proxy] += 1
        logger.info("proxy %s answered %d for %s %s", proxy, status, request.method, request.url)
        return result if last else None
    await lease.ok(status, latency=latency)
    return result
