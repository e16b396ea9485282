"""`ShareLimiter`: a `DomainLimiter` that keeps this node to its share of a cluster's per-domain limits."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ._limiter import domain_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from types import TracebackType

    from ._limiter import DomainLimiter, DomainState
    from ._permit import Permit

__all__ = ("SHARE_REFRESH", "ShareLimiter")

logger = logging.getLogger(__name__)

SHARE_REFRESH = 5.0
"""Seconds between two reads of the member count."""


class _ShareSlot:
    __slots__ = ("_limiter", "_local")

    def __init__(self, limiter: ShareLimiter, key: str) -> None:
        self._limiter = limiter
        self._local = limiter.local.slot(key)

    async def __aenter__(self) -> None:
        await self._limiter.refresh()
        await self._local.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._local.__aexit__(exc_type, exc, tb)


class ShareLimiter:
    """Per-domain politeness split evenly between the members of a cluster, without a shared gate.

    Each node enforces `ceil(per_domain_concurrency / members)` requests at once and starts at least
    `per_domain_delay * members` apart per domain (`DomainLimiter.share`), so the job as a whole stays
    near the configured limits. It is **approximate**: a node that does not crawl a domain does not
    give its share to the others (the job then runs below the limits), the rounding up lets up to
    `members - 1` more requests than the limit be in flight, members' delays are not interleaved (two
    nodes may start a request to a domain at the same moment), and after a join or leave each node
    follows within `interval` seconds. Use a Redis (or, on one host, LMDB) coordination store when the
    limits must hold exactly: its `DomainGate` replaces this.

    The member count is read before a request at most every `interval` seconds (one read, by whichever
    request comes first); if reading it fails the node keeps its last share and logs a warning.

    Args:
        local: This node's limiter, holding the job-wide limits.
        members: Returns the current member count.
        interval: Seconds between two reads of the member count.
        clock: Monotonic seconds; tests pass a fake.

    Example:
        >>> import anyio
        >>> from mocra_core.download import DomainLimiter
        >>> async def three_members() -> int:
        ...     return 3
        >>> limiter = ShareLimiter(DomainLimiter(concurrency=8, delay=0.2), three_members)
        >>> async def main() -> int:
        ...     async with limiter.slot("https://example.com/a"):
        ...         return limiter.local.members
        >>> anyio.run(main)
        3
    """

    __slots__ = ("_clock", "_members", "_next_read", "interval", "local")

    needs_admit = True
    """A permit of `try_acquire` passes `admit`, which keeps the member count fresh."""

    def __init__(
        self,
        local: DomainLimiter,
        members: Callable[[], Awaitable[int]],
        *,
        interval: float = SHARE_REFRESH,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"interval: must be > 0 seconds, got {interval!r}")
        self.local = local
        self.interval = interval
        self._members = members
        self._clock = clock
        self._next_read = float("-inf")

    def slot(self, url_or_domain: str) -> _ShareSlot:
        """An async context manager holding one of this node's slots of the domain for one request."""
        return _ShareSlot(self, domain_of(url_or_domain))

    async def refresh_now(self) -> int:
        """Read the member count now and apply it; return it."""
        self._next_read = self._clock() + self.interval
        try:
            members = max(1, await self._members())
        except Exception as exc:  # a control-plane hiccup must not fail downloads
            logger.warning(
                "could not read the member count (keeping a share of 1/%d): %s", self.local.members, exc
            )
            return self.local.members
        if members != self.local.members:
            logger.info("politeness: %d member(s) share each domain's limits", members)
            self.local.share(members)
        return members

    async def refresh(self) -> None:
        """Read the member count if `interval` seconds have passed since the last read."""
        if self._clock() >= self._next_read:
            await self.refresh_now()

    def try_acquire(self, url_or_domain: str) -> Permit | float:
        """A slot of this node's share without waiting (`DomainLimiter.try_acquire`); then `admit` it."""
        return self.local.try_acquire(url_or_domain)

    async def admit(self, permit: Permit) -> None:
        """Read the member count if `interval` seconds have passed (`refresh`); the permit may go ahead."""
        await self.refresh()

    def configure(
        self, url_or_domain: str, *, concurrency: int | None = None, delay: float | None = None
    ) -> None:
        """Override the job-wide limits of one domain (see `DomainLimiter.configure`); shared the same way."""
        self.local.configure(url_or_domain, concurrency=concurrency, delay=delay)

    def feedback(self, url_or_domain: str, status: int, retry_after: str | None = None) -> None:
        """Adapt this node's limits of a domain to a response status (see `DomainLimiter.feedback`)."""
        self.local.feedback(url_or_domain, status, retry_after)

    def state(self, url_or_domain: str) -> DomainState:
        """A snapshot of the domain's job-wide limits as this node sees them."""
        return self.local.state(url_or_domain)

    def __repr__(self) -> str:
        return f"<ShareLimiter {self.local!r} members={self.local.members} interval={self.interval}>"
