"""`ProxyRoute`: which proxy each request goes through (none, a fixed URL, or a lease from a pool).

The pool is a `ProxyLeaser`: `mocra_proxy.ProxyPool` fits it structurally, and so does any object with
the same `lease(...)` (core never imports `mocra_proxy` for it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .._errors import redact

if TYPE_CHECKING:
    from collections.abc import Iterable
    from contextlib import AbstractAsyncContextManager

    from ..http import Request

__all__ = ("DIRECT", "POOL", "PROXY_META", "ProxyAddress", "ProxyLease", "ProxyLeaser", "ProxyRoute")

PROXY_META = "proxy"
"""The `Request.meta` key that picks a request's proxy: `"direct"`, `"pool"` or a proxy URL."""
DIRECT = "direct"
POOL = "pool"


class ProxyAddress(Protocol):
    """A leased proxy: `url` goes to the HTTP client (credentials included), `redacted` to logs."""

    @property
    def url(self) -> str: ...

    @property
    def redacted(self) -> str: ...


class ProxyLease(Protocol):
    """One proxy held for one request; report its outcome once (`ok` or `failed`)."""

    @property
    def proxy(self) -> ProxyAddress: ...

    async def ok(self, status: int | None = 200, *, latency: float | None = None) -> None:
        """The proxy delivered an answer the caller accepts."""
        ...

    async def failed(
        self, status: int | None = None, *, error: str | None = None, latency: float | None = None
    ) -> None:
        """The proxy failed: a ban status, or an exception class name (`ConnectError`, `ProxyError`)."""
        ...


@runtime_checkable
class ProxyLeaser(Protocol):
    """A pool of proxies leased one request at a time (`mocra_proxy.ProxyPool` is one).

    Contract: `async with leaser.lease(key=..., domain=...) as lease` holds a proxy until the block ends;
    the downloader reports every outcome on the lease before leaving it. `lease` raises when no proxy
    becomes free within `timeout` (the downloader turns that into a retryable `DownloadError`).
    """

    def lease(
        self, *, key: str | None = None, domain: str | None = None, timeout: float | None = None
    ) -> AbstractAsyncContextManager[ProxyLease]:
        """Hold a proxy for one request."""
        ...


class ProxyRoute:
    """Which proxy a downloader sends each request through.

    A request's `meta["proxy"]` picks: `"direct"` (no proxy), `"pool"` (a lease from `pool`) or a proxy
    URL; without it, requests use `url` if set, else the pool if there is one, else no proxy.

    Args:
        url: One fixed proxy (`http://user:pass@host:port`), used without a pool.
        pool: The pool to lease from.
        ban_statuses: Statuses that mean the proxy is blocked: reported as failures and retried once
            through another proxy of the pool.
        lease_timeout: Seconds a request waits for a free proxy (`None`: the pool's default).

    Example:
        >>> from mocra_core.http import Request
        >>> route = ProxyRoute(url="http://u:pw@10.0.0.1:8080")
        >>> route.choose(Request("https://example.com/")), route.choose(
        ...     Request("https://example.com/", meta={"proxy": "direct"}))
        ('http://u:pw@10.0.0.1:8080', None)
        >>> route
        ProxyRoute(url='http://u:***@10.0.0.1:8080', pool=None)
    """

    def __init__(
        self,
        *,
        url: str | None = None,
        pool: ProxyLeaser | None = None,
        ban_statuses: Iterable[int] = (403, 407, 429),
        lease_timeout: float | None = None,
    ) -> None:
        self.url = url
        self.pool = pool
        self.ban_statuses = frozenset(ban_statuses)
        self.lease_timeout = lease_timeout
        self._default = url if url is not None else POOL if pool is not None else None

    def choose(self, request: Request) -> str | None:
        """`POOL`, a proxy URL, or `None` for a direct request.

        Raises:
            ValueError: the request asks for the pool and there is none, or `meta["proxy"]` is not a str.
        """
        picked = request.meta.get(PROXY_META) if request.meta else None
        if picked is None:
            return self._default
        if not isinstance(picked, str):
            expected = "expected 'direct', 'pool' or a proxy URL"
            raise ValueError(f"meta[{PROXY_META!r}]: {expected}, got {picked!r}")
        if picked == DIRECT:
            return None
        if picked == POOL and self.pool is None:
            raise ValueError(f"meta[{PROXY_META!r}] is 'pool' but no proxy pool is configured ([proxy.pool])")
        return picked

    def __repr__(self) -> str:
        url = None if self.url is None else redact(self.url)
        return f"ProxyRoute(url={url!r}, pool={self.pool!r})"
