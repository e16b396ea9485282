"""What the pool says about itself: `PoolStats` counts and the `NoProxyAvailable` error built from them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ._errors import ProxyPoolError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._entry import Entry
    from ._limits import Limits

__all__ = ("NoProxyAvailable", "PoolStats", "count")


class PoolStats(msgspec.Struct, frozen=True, kw_only=True):
    """Counts of a pool's proxies at one moment.

    Attributes:
        proxies: In the pool (not evicted, not expired).
        cooling: Cooling down after a ban or connect error.
        limited: Not cooling, but at a rate or concurrency limit.
        leased: Leases held now.
        evicted: Evicted since the pool started (never leased again).
        expired: Dropped because their expiry passed.
        waits: Times a lease had to wait for a proxy (each wake-up counts once).
    """

    proxies: int
    cooling: int
    limited: int
    leased: int
    evicted: int
    expired: int
    waits: int


def count(
    entries: Iterable[Entry], now: float, limits: Limits, evicted: int, expired: int, waits: int
) -> PoolStats:
    """Count the entries by condition."""
    proxies = cooling = limited = leased = 0
    for entry in entries:
        proxies += 1
        leased += entry.slot.in_use
        if entry.health.cooldown_until > now:
            cooling += 1
        elif entry.ready_at(now, None, limits) > now:
            limited += 1
    return PoolStats(
        proxies=proxies,
        cooling=cooling,
        limited=limited,
        leased=leased,
        evicted=evicted,
        expired=expired,
        waits=waits,
    )


class NoProxyAvailable(ProxyPoolError):
    """No proxy became free within the lease timeout; the message says how many are in which state.

    Attributes:
        stats: The pool's counts when the lease gave up.
        domain: The domain asked for, if any.
    """

    def __init__(self, message: str, stats: PoolStats, domain: str | None) -> None:
        super().__init__(message)
        self.stats, self.domain = stats, domain

    @classmethod
    def explain(
        cls, stats: PoolStats, domain: str | None, tier: int | None, timeout: float
    ) -> NoProxyAvailable:
        """The error for a lease that waited `timeout` seconds in vain."""
        where = f" for domain {domain!r}" if domain is not None else ""
        at = f" at tier {tier}" if tier is not None else ""
        return cls(
            f"no proxy available{where}{at} after waiting {timeout:g} s: "
            f"{stats.proxies} proxies in the pool, "
            f"{stats.cooling} cooling down, {stats.limited} limited ({stats.leased} leases held), "
            f"{stats.evicted} evicted, {stats.expired} expired",
            stats,
            domain,
        )
