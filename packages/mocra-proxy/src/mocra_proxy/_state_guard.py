"""`GuardedState`: the pool's `PoolState` wrapper that turns a failing store into a logged, passing outage."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ._errors import ProxyPoolError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._health import ProxyHealth
    from ._state import PoolState
    from ._tiers import DomainTier

__all__ = ("GuardedState",)

logger = logging.getLogger(__name__)


class GuardedState:
    """A `PoolState` whose failures (`ProxyPoolError`, `OSError`) are logged instead of raised.

    A failed `load` returns nothing and a failed save is dropped, so the pool carries on with its own
    view; the next save of a record sends it whole again. The first failure of an outage is a warning,
    the rest are debug lines until the store answers again (logged at info).
    """

    def __init__(self, state: PoolState) -> None:
        self._state = state
        self._down = False

    async def load(
        self, proxy_ids: Sequence[str], domains: Sequence[str]
    ) -> tuple[dict[str, ProxyHealth], dict[str, DomainTier]]:
        """The stored records, or none while the store fails."""
        try:
            found = await self._state.load(proxy_ids, domains)
        except (ProxyPoolError, OSError) as exc:
            self._failed("read", exc)
            return {}, {}
        self._answered()
        return found

    async def save_health(self, proxy_id: str, health: ProxyHealth) -> None:
        """Save the record, or drop it while the store fails."""
        try:
            await self._state.save_health(proxy_id, health)
        except (ProxyPoolError, OSError) as exc:
            self._failed("write", exc)
        else:
            self._answered()

    async def save_tier(self, domain: str, tier: DomainTier) -> None:
        """Save the domain's tier, or drop it while the store fails."""
        try:
            await self._state.save_tier(domain, tier)
        except (ProxyPoolError, OSError) as exc:
            self._failed("write", exc)
        else:
            self._answered()

    def _failed(self, action: str, exc: Exception) -> None:
        if self._down:
            logger.debug("shared pool state: %s failed again: %s", action, exc)
            return
        self._down = True
        logger.warning("shared pool state: %s failed, the pool keeps its own view: %s", action, exc)

    def _answered(self) -> None:
        if self._down:
            self._down = False
            logger.info("shared pool state answers again")

    def __repr__(self) -> str:
        return f"GuardedState({self._state!r})"
