"""`DomainTiers`: each domain's current proxy tier, moved by `Tiers` rules and written to a `PoolState`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from ._state import PoolState
    from ._tiers import DomainTier, Tiers

__all__ = ("DomainTiers",)

logger = logging.getLogger(__name__)


class DomainTiers:
    """The tier each domain leases from; changes are saved to `state` (read back by `update`)."""

    def __init__(self, rules: Tiers, state: PoolState, *, shared: bool) -> None:
        self._rules, self._state, self._shared = rules, state, shared
        self.known: dict[str, DomainTier] = {}

    async def tier(self, domain: str | None, available: Collection[int], now: float) -> int | None:
        """The tier to lease from: the domain's (stepping down when due), else the cheapest."""
        if not available:
            return None
        if domain is None:
            return min(available)
        state = self.known.get(domain)
        if state is None:
            loaded = (await self._state.load((), (domain,)))[1] if self._shared else {}
            state = self.known[domain] = loaded.get(domain) or self._rules.start(available, now)
        if state.tier != min(available) and self._rules.step_down(state, available, now):
            logger.info("domain %s steps down to proxy tier %d", domain, state.tier)
            await self._state.save_tier(domain, state)
        return self._rules.nearest(state.tier, available)

    async def on_ban(self, domain: str, proxy_tier: int, available: Collection[int], now: float) -> None:
        """Count a ban of a `proxy_tier` proxy on `domain`; escalate when the rules say so."""
        state = self.known.get(domain)
        if state is None:
            state = self.known[domain] = self._rules.start(available, now)
        before = state.tier
        if self._rules.on_ban(state, proxy_tier, available, now):
            if state.tier != before:
                logger.info("domain %s escalates from proxy tier %d to %d", domain, before, state.tier)
            await self._state.save_tier(domain, state)

    def update(self, tiers: Mapping[str, DomainTier]) -> None:
        """Take the tiers read back from the shared state."""
        self.known.update(tiers)
