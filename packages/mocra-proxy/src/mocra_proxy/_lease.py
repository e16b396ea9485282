"""`Lease`: one proxy held for one request, and how its outcome gets back to the pool."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import anyio

from ._outcome import Outcome

if TYPE_CHECKING:
    from types import TracebackType

    from ._entry import Entry
    from ._proxy import Proxy

__all__ = ("Lease",)


class _Reports(Protocol):
    """What a lease needs of its pool."""

    def _clock(self) -> float: ...
    async def _report_entry(self, entry: Entry, outcome: Outcome, domain: str | None) -> None: ...
    def _release(self, entry: Entry, domain: str | None) -> None: ...


class Lease:
    """A proxy leased from a `ProxyPool` until the `async with` block ends.

    Report what happened with `report(outcome)`, `ok()` or `failed()`. Leaving the block without a
    report reports a failure named after the exception if one escaped (not for cancellation: that is
    not the proxy's fault), else nothing: the lease is given back with the proxy's record unchanged.

    Attributes:
        proxy: The proxy to use (`proxy.url` for the HTTP client; never log it, log `proxy.redacted`).
        domain: The domain it was leased for, if any.
        key: The sticky key it was leased for, if any.
    """

    __slots__ = ("_entry", "_pool", "_started", "domain", "key", "proxy", "reported")

    def __init__(self, pool: _Reports, entry: Entry, domain: str | None, key: str | None) -> None:
        self._pool = pool
        self._entry = entry
        self._started = pool._clock()
        self.proxy: Proxy = entry.proxy
        self.domain = domain
        self.key = key
        self.reported = False

    async def report(self, outcome: Outcome) -> None:
        """Tell the pool how the request went (once; a second report is ignored)."""
        if not self.reported:
            self.reported = True
            await self._pool._report_entry(self._entry, outcome, self.domain)

    async def ok(self, status: int | None = 200, *, latency: float | None = None) -> None:
        """Report a success; `latency` defaults to the seconds since the lease was taken."""
        await self.report(Outcome(ok=True, status=status, latency=self._latency(latency)))

    async def failed(
        self, status: int | None = None, *, error: str | None = None, latency: float | None = None
    ) -> None:
        """Report a failure: a status (a ban status cools the proxy down) or an exception class name."""
        await self.report(Outcome(ok=False, status=status, error=error, latency=self._latency(latency)))

    def _latency(self, latency: float | None) -> float:
        return self._pool._clock() - self._started if latency is None else latency

    async def _close(self, exc: BaseException | None) -> None:
        try:
            if exc is not None and not self.reported and not isinstance(exc, anyio.get_cancelled_exc_class()):
                with anyio.CancelScope(shield=True):
                    await self.failed(error=type(exc).__name__)
        finally:
            self._pool._release(self._entry, self.domain)

    def __repr__(self) -> str:
        return f"Lease({self.proxy.redacted!r}, domain={self.domain!r}, reported={self.reported})"


class LeaseContext:
    """What `ProxyPool.lease()` returns: `async with` it to hold a `Lease`."""

    __slots__ = ("_domain", "_key", "_lease", "_pool", "_timeout")

    def __init__(self, pool: _Acquires, key: str | None, domain: str | None, timeout: float | None) -> None:
        self._pool, self._key, self._domain, self._timeout = pool, key, domain, timeout
        self._lease: Lease | None = None

    async def __aenter__(self) -> Lease:
        self._lease = await self._pool._acquire(self._key, self._domain, self._timeout)
        return self._lease

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._lease is not None:
            await self._lease._close(exc)


class _Acquires(Protocol):
    async def _acquire(self, key: str | None, domain: str | None, patience: float | None) -> Lease: ...
