"""`ProxyRoute`: which proxy each request goes through (none, a fixed URL, or a lease from a named pool).

A pool is a `ProxyLeaser`: `mocra_proxy.ProxyPool` fits it structurally, and so does any object with
the same `lease(...)` (core never imports `mocra_proxy` for it).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .._errors import redact

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from contextlib import AbstractAsyncContextManager

    from ..http import Request

__all__ = (
    "DEFAULT_BAN_STATUSES",
    "DIRECT",
    "POOL",
    "PROXY_META",
    "PoolRoute",
    "ProxyAddress",
    "ProxyLease",
    "ProxyLeaser",
    "ProxyRoute",
    "check_pool_name",
)

PROXY_META = "proxy"
"""The `Request.meta` key that picks a request's proxy: `"direct"`, a pool's name or a proxy URL."""
DIRECT = "direct"
"""The proxy choice that sends a request without a proxy."""
POOL = "pool"
"""The name of the default pool (`[proxy.pool]`); further pools have their own (`[proxy.pools.<name>]`)."""
DEFAULT_BAN_STATUSES = frozenset({403, 407, 429})

_POOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


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


def check_pool_name(name: str) -> str:
    """`name` if it can name a pool (a letter, then letters, digits, `_` or `-`; not `"direct"`).

    Raises:
        ValueError: the name says what is wrong with it.

    Example:
        >>> check_pool_name("residential")
        'residential'
    """
    if name == DIRECT:
        raise ValueError(f"{name!r} means no proxy; a pool needs another name")
    if not _POOL_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a pool name (a letter, then letters, digits, '_' or '-')")
    return name


@dataclass(frozen=True, slots=True)
class PoolRoute:
    """A pool as a route uses it: the leaser, the statuses that mean its proxy is blocked, its lease wait.

    Attributes:
        name: How requests (`meta["proxy"]`), spiders and modules (`proxy = ...`) name it.
        leaser: The pool (`mocra_proxy.ProxyPool` or any `ProxyLeaser`).
        ban_statuses: Statuses reported as the proxy's failure and retried once through another proxy.
        lease_timeout: Seconds a request waits for a free proxy (`None`: the pool's default).
    """

    name: str
    leaser: ProxyLeaser
    ban_statuses: frozenset[int] = field(default=DEFAULT_BAN_STATUSES)
    lease_timeout: float | None = None


class ProxyRoute:
    """Which proxy a downloader sends each request through.

    A request's `meta["proxy"]` picks: `"direct"` (no proxy), a pool's name (`"pool"` is the default
    pool, further pools are named in `pools`) or a proxy URL (`scheme://...`); a spider's or module's
    `proxy` attribute sets it for their requests that do not. Without it, requests use `url` if set,
    else the default pool if there is one, else no proxy. Proxy failures are counted in `failures` by
    redacted proxy URL.

    Args:
        url: One fixed proxy (`http://user:pass@host:port`), used without a pool.
        pool: The default pool (named `"pool"`).
        ban_statuses: The default pool's ban statuses: reported as failures and retried once through
            another proxy of the pool.
        lease_timeout: Seconds a request waits for a free proxy of the default pool (`None`: the pool's).
        pools: Further pools, by name.
        failures: Where proxy failures are counted (the run's `Stats.proxy_failures`); a new `Counter`
            when `None`.

    Example:
        >>> from mocra_core.http import Request
        >>> route = ProxyRoute(url="http://u:pw@10.0.0.1:8080")
        >>> route.choose(Request("https://example.com/")), route.choose(
        ...     Request("https://example.com/", meta={"proxy": "direct"}))
        ('http://u:pw@10.0.0.1:8080', None)
        >>> route
        ProxyRoute(url='http://u:***@10.0.0.1:8080', pools=[])
    """

    def __init__(
        self,
        *,
        url: str | None = None,
        pool: ProxyLeaser | None = None,
        ban_statuses: Iterable[int] = DEFAULT_BAN_STATUSES,
        lease_timeout: float | None = None,
        pools: Iterable[PoolRoute] = (),
        failures: Counter[str] | None = None,
    ) -> None:
        self.url = url
        named: dict[str, PoolRoute] = {}
        if pool is not None:
            named[POOL] = PoolRoute(POOL, pool, frozenset(ban_statuses), lease_timeout)
        for route in pools:
            if route.name in named:
                raise ValueError(f"two proxy pools named {route.name!r}")
            named[check_pool_name(route.name)] = route
        self.pools: Mapping[str, PoolRoute] = named
        self.failures: Counter[str] = Counter() if failures is None else failures
        self._default: str | PoolRoute | None = url if url is not None else named.get(POOL)

    @property
    def pool(self) -> ProxyLeaser | None:
        """The default pool (`[proxy.pool]`), or `None`."""
        default = self.pools.get(POOL)
        return None if default is None else default.leaser

    def choose(self, request: Request) -> str | PoolRoute | None:
        """The pool to lease from, a proxy URL, or `None` for a direct request.

        Raises:
            ValueError: `meta["proxy"]` names no configured pool, or is not a str.
        """
        picked = request.meta.get(PROXY_META) if request.meta else None
        if picked is None:
            return self._default
        return self.resolve(picked)

    def resolve(self, choice: object) -> str | PoolRoute | None:
        """What a proxy choice (`"direct"`, a pool's name or a proxy URL) stands for in this route.

        Raises:
            ValueError: a name of no configured pool (the message lists them), or not a str.

        Example:
            >>> ProxyRoute().resolve("http://10.0.0.9:3128"), ProxyRoute().resolve("direct")
            ('http://10.0.0.9:3128', None)
        """
        if not isinstance(choice, str):
            expected = "expected 'direct', a pool's name or a proxy URL"
            raise ValueError(f"proxy: {expected}, got {choice!r}")
        if choice == DIRECT:
            return None
        if "://" in choice:
            return choice
        found = self.pools.get(choice)
        if found is None:
            known = ", ".join(sorted(self.pools)) or "none is configured ([proxy.pool], [proxy.pools.<name>])"
            raise ValueError(f"proxy: no pool named {choice!r} (pools: {known})")
        return found

    def __repr__(self) -> str:
        url = None if self.url is None else redact(self.url)
        return f"ProxyRoute(url={url!r}, pools={sorted(self.pools)!r})"
