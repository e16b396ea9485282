"""`ProxySource`: where a pool gets its proxies from (the protocol every source implements)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._proxy import Proxy

__all__ = ("ProxySource",)


@runtime_checkable
class ProxySource(Protocol):
    """A supply of proxies.

    `name` labels the proxies it gives (`Proxy.source`). `fetch` returns the proxies it offers now: a
    static list always the same ones, a file its current lines, a provider a fresh batch (each call may
    cost a request to the provider: the pool calls it when the healthy pool falls under its threshold,
    and the source keeps to its own rate limit). `weight` orders providers when the pool refills
    (higher first). Errors of a source are raised as `ProxyPoolError` subclasses naming the source.

    A source may also have `evicted(proxy: Proxy) -> None` (not part of the protocol): the pool calls
    it when it evicts one of the source's proxies for good, then fetches from the source on its next
    refill; `TunnelSource` uses it to give a new session in place of an evicted one.
    """

    name: str
    weight: float

    async def fetch(self) -> Sequence[Proxy]:
        """The proxies this source offers now."""
        ...
