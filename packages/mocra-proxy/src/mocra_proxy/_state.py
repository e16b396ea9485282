"""`PoolState`: what pools share across processes (health records, per-domain tiers); `MemoryState`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import msgspec

from ._merge import merge_health, merge_tier

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._health import ProxyHealth
    from ._tiers import DomainTier

__all__ = ("MemoryState", "PoolState")


class PoolState(Protocol):
    """Where pools keep the state they share.

    That is each proxy's health (cooldowns, bans, error counts, scores) and the tier each domain is at.

    The pool works on its own copy and writes through: one `save_health` per report (plus `save_tier`
    when a domain's tier changes); it reads back with one batched `load` on start and then every
    second, so pools sharing a state see each other's bans within about a second. A save merges the
    record into the stored one, atomically, by the rules of `merge_health` and `merge_tier` (a stale
    copy never wipes out another pool's ban). Implementations must not keep references to the objects
    passed in, and raise `StateError` when the store fails (the pool then keeps its own view).
    """

    async def load(
        self, proxy_ids: Sequence[str], domains: Sequence[str]
    ) -> tuple[dict[str, ProxyHealth], dict[str, DomainTier]]:
        """The stored records of those proxies and domains (unknown ones are left out)."""
        ...

    async def save_health(self, proxy_id: str, health: ProxyHealth) -> None:
        """Merge a proxy's health record into the stored one (`merge_health`)."""
        ...

    async def save_tier(self, domain: str, tier: DomainTier) -> None:
        """Merge a domain's tier into the stored one (`merge_tier`)."""
        ...


class MemoryState:
    """`PoolState` in this process's memory (the default; share one object between pools to share state).

    Example:
        >>> from mocra_proxy import ProxyHealth
        >>> import anyio
        >>> async def demo() -> int:
        ...     state = MemoryState()
        ...     await state.save_health("http://10.0.0.1:8080", ProxyHealth(failures=2))
        ...     health, tiers = await state.load(["http://10.0.0.1:8080", "http://x:1"], [])
        ...     return health["http://10.0.0.1:8080"].failures
        >>> anyio.run(demo)
        2
    """

    def __init__(self) -> None:
        self._health: dict[str, ProxyHealth] = {}
        self._tiers: dict[str, DomainTier] = {}

    async def load(
        self, proxy_ids: Sequence[str], domains: Sequence[str]
    ) -> tuple[dict[str, ProxyHealth], dict[str, DomainTier]]:
        """Copies of the stored records of those proxies and domains."""
        health = {i: msgspec.structs.replace(self._health[i]) for i in proxy_ids if i in self._health}
        tiers = {d: _copy_tier(self._tiers[d]) for d in domains if d in self._tiers}
        return health, tiers

    async def save_health(self, proxy_id: str, health: ProxyHealth) -> None:
        """Merge the record into the stored one (a copy)."""
        stored = self._health.get(proxy_id)
        self._health[proxy_id] = (
            msgspec.structs.replace(health) if stored is None else merge_health(stored, health)
        )

    async def save_tier(self, domain: str, tier: DomainTier) -> None:
        """Merge the domain's tier into the stored one (a copy)."""
        stored = self._tiers.get(domain)
        self._tiers[domain] = _copy_tier(tier) if stored is None else merge_tier(stored, tier)

    def __repr__(self) -> str:
        return f"MemoryState({len(self._health)} proxies, {len(self._tiers)} domains)"


def _copy_tier(tier: DomainTier) -> DomainTier:
    return msgspec.structs.replace(tier, bans=list(tier.bans))
