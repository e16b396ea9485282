"""`Supply`: a pool's sources, highest weight first — refilling from them and telling them of evictions."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ._errors import ProxyPoolError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ._proxy import Proxy
    from ._roster import Roster
    from ._source import ProxySource
    from ._state import PoolState

__all__ = ("Supply",)

logger = logging.getLogger(__name__)


class Supply:
    """The sources a pool fills from, and the ones that owe it a replacement for an evicted proxy.

    A source may have `evicted(proxy)`: it is called when the pool evicts one of its proxies for good
    (or finds it evicted in the shared state), and the source is then fetched on the next refill
    whatever the pool's count (a `TunnelSource` gives a fresh session in place of the evicted one).
    """

    def __init__(self, sources: Sequence[ProxySource], refill_below: int) -> None:
        self.sources = sorted(sources, key=lambda s: -s.weight)
        self.refill_below = refill_below
        self._owed: set[int] = set()  # id() of the sources to fetch whatever the count

    def retire(self, proxy: Proxy) -> None:
        """Tell `proxy`'s source (by `Proxy.source` name) that it was evicted, if it wants to know."""
        for source in self.sources:
            hook: Callable[[Proxy], object] | None = getattr(source, "evicted", None)
            if hook is not None and source.name == proxy.source:
                hook(proxy)
                self._owed.add(id(source))

    async def refill(
        self, roster: Roster, state: PoolState, clock: Callable[[], float], *, everything: bool
    ) -> bool:
        """Fetch from the sources (by weight) until enough proxies are healthy; True if any were added.

        With `everything` it fetches from every source; a source owing a replacement is always fetched.
        """
        owed, self._owed = self._owed, set()
        added = False
        for source in self.sources:
            if not everything and roster.healthy(clock()) >= self.refill_below:
                if not owed:
                    break
                if id(source) not in owed:
                    continue
            try:
                proxies = await source.fetch()
            except (ProxyPoolError, OSError) as exc:
                logger.warning("proxy source %s failed: %s", source.name, exc)
                continue
            fresh = [p for p in proxies if roster.is_new(p)]
            known, _ = await state.load([p.id for p in fresh], []) if fresh else ({}, {})
            if roster.add(fresh, known, clock()):
                logger.debug("proxy source %s refilled the pool (%d proxies)", source.name, len(roster))
                added = True
            for proxy in fresh:
                if proxy.id in roster.evicted:  # evicted by another pool sharing the state
                    self.retire(proxy)
        return added
