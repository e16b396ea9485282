"""`LeaseStore`: named leases with a monotonic fencing token; `MemoryLeaseStore` keeps them in memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import msgspec

from ._clock import SystemClock
from ._errors import StaleToken

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

    from ._clock import Clock

__all__ = ("Lease", "LeaseStore", "MemoryLeaseStore")


class Lease(msgspec.Struct, frozen=True, kw_only=True):
    """A held lease.

    Attributes:
        name: What is leased (the scheduler leases run ids).
        owner: Who holds it (an opaque id unique per holder).
        token: The fencing token: strictly greater than every token the store handed out before.
        expires: When the lease lapses unless renewed, in epoch seconds on the store's clock.
    """

    name: str
    owner: str
    token: int
    expires: float


class LeaseStore(Protocol):
    """Exclusive, expiring leases by name, each with a fencing token.

    `acquire` succeeds when the name is free or its lease has expired, and hands out a token greater than
    any before it (across all names, and across restarts for durable stores). `renew` extends a lease
    that is still held under its token, even past its expiry if nobody took it over; otherwise it raises
    `StaleToken`. `release` frees a lease still held under its token and does nothing otherwise.
    Expiry is judged on the store's clock (epoch seconds, comparable across processes of one host).
    """

    async def acquire(self, name: str, *, owner: str, ttl: float) -> Lease | None:
        """Take the lease of `name` for `ttl` seconds, or return None if someone holds it."""
        ...

    async def renew(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend a held lease to `ttl` seconds from now; raise `StaleToken` if it was lost."""
        ...

    async def release(self, lease: Lease) -> None:
        """Free the lease if it is still held under its token."""
        ...

    async def holder(self, name: str) -> Lease | None:
        """Return the unexpired lease of `name`, if any."""
        ...

    async def aclose(self) -> None:
        """Release the store's resources."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def grant(current: Lease | None, name: str, owner: str, ttl: float, now: float, token: int) -> Lease | None:
    """Return the lease `acquire` grants with `token`, or None when `current` is still unexpired."""
    if ttl <= 0:
        raise ValueError(f"ttl must be > 0 seconds, got {ttl!r}")
    if current is not None and current.expires > now:
        return None
    return Lease(name=name, owner=owner, token=token, expires=now + ttl)


def extend(current: Lease | None, lease: Lease, ttl: float, now: float) -> Lease:
    """Return `lease` extended to `now + ttl`, or raise `StaleToken` if `current` is not it."""
    if ttl <= 0:
        raise ValueError(f"ttl must be > 0 seconds, got {ttl!r}")
    if current is None or current.token != lease.token:
        raise StaleToken(lease.name, lease.token, current.token if current is not None else -1)
    return msgspec.structs.replace(current, expires=now + ttl)


class MemoryLeaseStore:
    """A `LeaseStore` in process memory: guards runs of the schedulers of one process.

    Args:
        clock: Judges expiry (a `ManualClock` in tests).

    Example:
        >>> import anyio
        >>> from mocra_dag import ManualClock
        >>> async def main():
        ...     clock = ManualClock()
        ...     leases = MemoryLeaseStore(clock=clock)
        ...     first = await leases.acquire("run-1", owner="a", ttl=10)
        ...     blocked = await leases.acquire("run-1", owner="b", ttl=10)
        ...     clock.advance(11)  # "a" paused past its expiry
        ...     second = await leases.acquire("run-1", owner="b", ttl=10)
        ...     return first.token, blocked, second.token
        >>> anyio.run(main)
        (1, None, 2)
    """

    __slots__ = ("_clock", "_counter", "_leases")

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._counter = 0
        self._leases: dict[str, Lease] = {}

    async def acquire(self, name: str, *, owner: str, ttl: float) -> Lease | None:
        """Take the lease if free or expired."""
        lease = grant(self._leases.get(name), name, owner, ttl, self._clock.now(), self._counter + 1)
        if lease is not None:
            self._counter = lease.token
            self._leases[name] = lease
        return lease

    async def renew(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend the lease or raise `StaleToken`."""
        renewed = self._leases[lease.name] = extend(
            self._leases.get(lease.name), lease, ttl, self._clock.now()
        )
        return renewed

    async def release(self, lease: Lease) -> None:
        """Free the lease if still held under its token."""
        current = self._leases.get(lease.name)
        if current is not None and current.token == lease.token:
            del self._leases[lease.name]

    async def holder(self, name: str) -> Lease | None:
        """The unexpired lease of `name`."""
        current = self._leases.get(name)
        return current if current is not None and current.expires > self._clock.now() else None

    async def aclose(self) -> None:
        """Nothing to release."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
