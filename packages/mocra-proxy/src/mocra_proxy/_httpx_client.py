"""`ProxiedHttpx`: httpx requests through a `ProxyPool`, outcomes reported, one retry via another proxy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

import httpx

from ._client_cache import ClientCache
from ._client_rules import retry_after_break

if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import TracebackType

    from ._pool import ProxyPool

__all__ = ("ProxiedHttpx",)

# The proxy was not reached or refused the tunnel (a CONNECT answered 403/407): the request never left.
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ProxyError)
# The connection broke without an answer: the request may have reached the site.
_BROKEN = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class ProxiedHttpx:
    """Send httpx requests through proxies leased from `pool`, reporting every outcome.

    Each request leases a proxy for the URL's host (`domain`) and the sticky `key`, sends through an
    `httpx.AsyncClient` kept for that proxy (at most `max_clients`, least recently used closed first)
    and reports to the pool: a status in `ban_statuses` as a failure with that status (the proxy cools
    down), any other status as a success, an `httpx.TransportError` as a failure named after its class.

    It tries again through another proxy, up to `retries` times, when
    - the proxy was not reached or refused the tunnel (`ConnectError`, `ConnectTimeout`, `ProxyError`,
      e.g. a CONNECT answered 407) — for every method, as the request never left;
    - the answer has a ban status (an absolute-form 407 or 403 from the proxy, or the site's 403/429) —
      for every method;
    - the connection broke without an answer (`RemoteProtocolError`, `ReadError`, `WriteError`) — for
      idempotent methods only (`GET`, `HEAD`, `OPTIONS`, `PUT`, `DELETE`, `TRACE`).
    Other errors (a read timeout, a bad URL) are reported and raised at once. When the tries run out, a
    ban answer is returned (check its status) and an error is raised. The next lease gets another proxy
    because the pool cools the failed one down (and unsticks its key); with no other proxy it waits
    for one, up to the pool's `lease_timeout`, then raises `NoProxyAvailable`.

    Bodies are read before returning (no streaming). Use it as `async with` or call `aclose()`; the
    pool is not closed here.

    Args:
        pool: The `ProxyPool` to lease from (entered by the caller).
        max_clients: Clients kept at once (one per proxy).
        retries: Further tries through another proxy after a proxy failure.
        ban_statuses: Statuses reported as bans (default: the pool's `ban_statuses`).
        **client_kwargs: For every `httpx.AsyncClient` (`timeout=`, `verify=`, `headers=`, ...).

    Example:
        >>> async def fetch(pool: ProxyPool) -> str:  # doctest: +SKIP
        ...     async with ProxiedHttpx(pool, timeout=10) as http:
        ...         return (await http.get("https://example.com/", key="account-1")).text
    """

    def __init__(
        self,
        pool: ProxyPool,
        *,
        max_clients: int = 32,
        retries: int = 1,
        ban_statuses: Iterable[int] | None = None,
        **client_kwargs: Any,
    ) -> None:
        if "proxy" in client_kwargs or "mounts" in client_kwargs:
            raise TypeError("ProxiedHttpx sets each client's proxy itself: do not pass proxy= or mounts=")
        self._pool = pool
        self._clients = ClientCache(max_clients, client_kwargs)
        self._retries = retries
        self._bans = pool.ban_statuses if ban_statuses is None else frozenset(ban_statuses)

    @property
    def clients_opened(self) -> int:
        """How many `httpx.AsyncClient`s were made so far (they are reused per proxy)."""
        return self._clients.opened

    async def request(
        self, method: str, url: str | httpx.URL, *, key: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        """Send `method url` through a leased proxy (`kwargs` as for `httpx.AsyncClient.request`).

        Raises:
            httpx.TransportError: The last try's error, once the tries ran out (or at once, see above).
            NoProxyAvailable: No proxy became free within the pool's lease timeout.
        """
        target = httpx.URL(url)
        if not target.host:
            raise httpx.InvalidURL(f"no host in {str(target.copy_with(username=None, password=None))!r}")
        tries = self._retries + 1
        for attempt in range(1, tries + 1):
            last = attempt == tries
            async with self._pool.lease(key=key, domain=target.host) as lease:
                try:
                    async with self._clients.client(lease.proxy) as client:
                        response = await client.request(method, target, **kwargs)
                except httpx.TransportError as exc:
                    await lease.failed(error=type(exc).__name__)
                    again = isinstance(exc, _UNSENT) or (
                        isinstance(exc, _BROKEN) and retry_after_break(method)
                    )
                    if last or not again:
                        raise
                    continue
                if response.status_code in self._bans:
                    await lease.failed(response.status_code)
                    if last:
                        return response
                    continue
                await lease.ok(response.status_code)
                return response
        raise AssertionError("unreachable")  # pragma: no cover

    async def get(self, url: str | httpx.URL, *, key: str | None = None, **kwargs: Any) -> httpx.Response:
        """`request("GET", url, ...)`."""
        return await self.request("GET", url, key=key, **kwargs)

    async def post(self, url: str | httpx.URL, *, key: str | None = None, **kwargs: Any) -> httpx.Response:
        """`request("POST", url, ...)`."""
        return await self.request("POST", url, key=key, **kwargs)

    async def aclose(self) -> None:
        """Close every cached client."""
        await self._clients.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"ProxiedHttpx({self._pool!r}, {len(self._clients)} clients)"


def _try_again(exc: httpx.TransportError, method: str) -> bool:
    """Another proxy may help: the request never left, or it broke and may be sent again."""
    return isinstance(exc, _UNSENT) or (isinstance(exc, _BROKEN) and retry_after_break(method))
