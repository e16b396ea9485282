"""Tiers: per domain, lease from the cheapest tier; escalate on repeated bans, step back down later."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from collections.abc import Collection

__all__ = ("DomainTier", "Tiers")


class Tiers(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a domain moves between proxy tiers, as Crawlee's tiered proxies do.

    Tiers are `Proxy.tier` values, 0 cheapest (e.g. direct < datacenter < residential).

    A domain starts at the cheapest tier the pool has. `bans` ban statuses for that domain from its
    current tier within `window` seconds move it one tier up; after `step_down_after` seconds at a tier
    it tries the next tier down again (and climbs back if the bans return).

    Example:
        >>> Tiers(bans=2, window=30.0)
        Tiers(bans=2, window=30.0, step_down_after=300.0)
    """

    bans: int = 3
    window: float = 60.0
    step_down_after: float = 300.0

    def __post_init__(self) -> None:
        if self.bans < 1:
            raise ValueError(f"Tiers.bans must be at least 1, got {self.bans!r}")
        if self.window <= 0 or self.step_down_after <= 0:
            raise ValueError("Tiers.window and Tiers.step_down_after must be positive seconds")

    def start(self, available: Collection[int], now: float) -> DomainTier:
        """A new domain's tier: the cheapest one available."""
        return DomainTier(tier=min(available, default=0), since=now)

    def on_ban(self, state: DomainTier, proxy_tier: int, available: Collection[int], now: float) -> bool:
        """Record a ban of a proxy of `proxy_tier`; True if the domain escalated (its state changed)."""
        if proxy_tier != state.tier:
            return False
        state.bans = [t for t in state.bans if t > now - self.window]
        state.bans.append(now)
        higher = [t for t in available if t > state.tier]
        if len(state.bans) >= self.bans and higher:
            state.tier, state.since, state.bans = min(higher), now, []
        return True

    def step_down(self, state: DomainTier, available: Collection[int], now: float) -> bool:
        """Move down one tier if the domain has been up long enough; True if it moved."""
        if now - state.since < self.step_down_after:
            return False
        lower = [t for t in available if t < state.tier]
        if not lower:
            return False
        state.tier, state.since, state.bans = max(lower), now, []
        return True

    @staticmethod
    def nearest(tier: int, available: Collection[int]) -> int:
        """`tier` if the pool has it, else the next one up, else the highest below (`available` not empty)."""
        if tier in available:
            return tier
        higher = [t for t in available if t > tier]
        return min(higher) if higher else max(available)


class DomainTier(msgspec.Struct, kw_only=True):
    """A domain's place in the tiers (shared through `PoolState`).

    Attributes:
        tier: The tier its leases come from.
        since: When it got there (pool clock seconds).
        bans: Times of recent bans at this tier.
    """

    tier: int
    since: float
    bans: list[float] = msgspec.field(default_factory=list)
