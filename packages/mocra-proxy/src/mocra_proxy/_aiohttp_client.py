"""aiohttp through a `ProxyPool`: per-request proxy arguments and `ProxiedAiohttp` (aiohttp is optional)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ._client_rules import retry_after_break

if TYPE_CHECKING:
    from collections.abc import Iterable

    import aiohttp

    from ._pool import ProxyPool
    from ._proxy import Proxy

__all__ = ("ProxiedAiohttp", "aiohttp_proxy_kwargs")


def _aiohttp() -> Any:
    try:
        import aiohttp
    except ModuleNotFoundError as exc:  # pragma: no cover - aiohttp is in the workspace
        raise ModuleNotFoundError("the aiohttp helpers need aiohttp: pip install aiohttp") from exc
    return aiohttp


def aiohttp_proxy_kwargs(proxy: Proxy) -> dict[str, Any]:
    """The arguments for one aiohttp request through `proxy`: `{"proxy": proxy.url}`.

    The login stays in the URL: aiohttp turns it into `Proxy-Authorization` both for an absolute-form
    request (`http://` targets) and for a `CONNECT` (`https://`). The alternatives fall short in aiohttp
    3.14: `proxy_auth=` is deprecated, and `proxy_headers=` go only with a `CONNECT`. Never log the
    result; log `proxy.redacted`.

    Example:
        >>> from mocra_proxy import Proxy
        >>> aiohttp_proxy_kwargs(Proxy.parse("10.0.0.1:8080:alice:s3cret"))
        {'proxy': 'http://alice:s3cret@10.0.0.1:8080'}
    """
    return {"proxy": proxy.url}


class ProxiedAiohttp:
    """Send requests on one `aiohttp.ClientSession` through proxies leased from `pool`.

    aiohttp takes a proxy per request, so one session serves every proxy. The rules are those of
    `ProxiedHttpx`: a status in `ban_statuses` is reported as a ban, any other status as a success, an
    `aiohttp.ClientError` (or a timeout) as a failure named after its class; it tries again through another
    proxy, up to `retries` times, when the proxy was not reached or refused the tunnel
    (`ClientProxyConnectionError`, `ClientHttpProxyError` such as a CONNECT answered 407) or the answer
    has a ban status, for every method, and when the connection broke without an answer
    (`ServerDisconnectedError`, `ClientOSError`) for idempotent methods only. When the tries run out,
    a ban answer is returned and an error raised.

    The response's body is read before it is returned (`await response.text()` works; the connection
    is back in the session's pool). The session is not closed here.

    Args:
        pool: The `ProxyPool` to lease from (entered by the caller).
        session: The `aiohttp.ClientSession` to send with.
        retries: Further tries through another proxy after a proxy failure.
        ban_statuses: Statuses reported as bans (default: the pool's `ban_statuses`).
    """

    def __init__(
        self,
        pool: ProxyPool,
        session: aiohttp.ClientSession,
        *,
        retries: int = 1,
        ban_statuses: Iterable[int] | None = None,
    ) -> None:
        self._pool, self._session, self._retries = pool, session, retries
        self._bans = pool.ban_statuses if ban_statuses is None else frozenset(ban_statuses)

    async def request(
        self, method: str, url: str, *, key: str | None = None, **kwargs: Any
    ) -> aiohttp.ClientResponse:
        """Send `method url` through a leased proxy (`kwargs` as for `ClientSession.request`).

        Raises:
            aiohttp.ClientError: The last try's error, once the tries ran out (or at once, see above).
            TimeoutError: The request's timeout passed (reported, not retried).
            NoProxyAvailable: No proxy became free within the pool's lease timeout.
        """
        if "proxy" in kwargs or "proxy_auth" in kwargs:
            raise TypeError("ProxiedAiohttp sets the proxy of each request: no proxy= or proxy_auth=")
        aiohttp = _aiohttp()
        unsent = (aiohttp.ClientProxyConnectionError, aiohttp.ClientHttpProxyError)
        broken = (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)
        domain = urlsplit(url).hostname
        tries = self._retries + 1
        for attempt in range(1, tries + 1):
            last = attempt == tries
            async with self._pool.lease(key=key, domain=domain) as lease:
                try:
                    response = await self._session.request(
                        method, url, **{**kwargs, **aiohttp_proxy_kwargs(lease.proxy)}
                    )
                    async with response:
                        await response.read()
                except (aiohttp.ClientError, TimeoutError) as exc:
                    await lease.failed(error=type(exc).__name__)
                    again = isinstance(exc, unsent) or (isinstance(exc, broken) and retry_after_break(method))
                    if last or not again:
                        raise
                    continue
                if response.status in self._bans:
                    await lease.failed(response.status)
                    if last:
                        return response
                    continue
                await lease.ok(response.status)
                return response
        raise AssertionError("unreachable")  # pragma: no cover

    async def get(self, url: str, *, key: str | None = None, **kwargs: Any) -> aiohttp.ClientResponse:
        """`request("GET", url, ...)`."""
        return await self.request("GET", url, key=key, **kwargs)

    async def post(self, url: str, *, key: str | None = None, **kwargs: Any) -> aiohttp.ClientResponse:
        """`request("POST", url, ...)`."""
        return await self.request("POST", url, key=key, **kwargs)

    def __repr__(self) -> str:
        return f"ProxiedAiohttp({self._pool!r})"
