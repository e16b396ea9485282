"""`Roster`: the proxies a pool holds, by id and by tier, with the evicted ones remembered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._entry import INF, Entry
from ._health import ProxyHealth

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._limits import Limits
    from ._policy import SelectionPolicy
    from ._proxy import Proxy

__all__ = ("Roster",)


class Roster:
    """Who is in the pool: `entries` by id, `all` and `by_tier` (lists), evicted ids, the expired count."""

    __slots__ = ("all", "by_tier", "entries", "evicted", "expired", "next_expiry")

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.all: list[Entry] = []
        self.by_tier: dict[int, list[Entry]] = {}
        self.evicted: set[str] = set()
        self.expired = 0
        self.next_expiry = INF

    def is_new(self, proxy: Proxy) -> bool:
        """Neither in the pool nor evicted."""
        return proxy.id not in self.entries and proxy.id not in self.evicted

    def add(self, proxies: Iterable[Proxy], known: dict[str, ProxyHealth], now: float) -> int:
        """Add the new, unexpired proxies (with their `known` records); return how many were added."""
        added = 0
        for proxy in proxies:
            if not self.is_new(proxy) or proxy.expired(now):
                continue
            health = known.get(proxy.id) or ProxyHealth()
            if health.evicted:
                self.evicted.add(proxy.id)
                continue
            self.entries[proxy.id] = Entry(proxy, health)
            added += 1
        if added:
            self._reindex()
        return added

    def remove(self, entry: Entry, *, evicted: bool = False) -> None:
        """Take `entry` out (and remember its id if `evicted`)."""
        if evicted:
            self.evicted.add(entry.id)
        if self.entries.pop(entry.id, None) is not None:
            self._reindex()

    def take_expired(self, now: float) -> list[Entry]:
        """Remove and return the entries whose expiry has passed."""
        gone = [e for e in self.entries.values() if e.proxy.expired(now)]
        for entry in gone:
            self.expired += 1
            self.remove(entry)
        return gone

    def pick(
        self, policy: SelectionPolicy, limits: Limits, domain: str | None, tier: int | None, now: float
    ) -> tuple[Entry | None, float]:
        """A free entry of `tier` (all tiers if `None`) chosen by `policy`.

        A `SamplingPolicy` names the few entries to look at; only if none of them is free (or the policy
        has no `visit`) are all of them looked at. Returns `(entry, 0.0)`, or `(None, seconds until one
        may be free)` (`inf`: when a lease ends).
        """
        pool = self.all if tier is None else self.by_tier.get(tier, [])
        visit = getattr(policy, "visit", None)
        if visit is not None and pool:
            want: int = policy.sample  # type: ignore[attr-defined]
            free: list[Entry] = []
            for position in visit(len(pool)):
                entry = pool[position]
                if entry.ready_at(now, domain, limits) <= now and entry not in free:
                    free.append(entry)
                    if len(free) >= want:
                        break
            if free:
                return self._choose(policy, free, now), 0.0
        return self._scan(policy, pool, limits, domain, now)

    @staticmethod
    def _scan(
        policy: SelectionPolicy, pool: list[Entry], limits: Limits, domain: str | None, now: float
    ) -> tuple[Entry | None, float]:
        """Look at every entry: a free one chosen by `policy`, or how long until one may be free."""
        free: list[Entry] = []
        earliest = INF
        for entry in pool:
            at = entry.ready_at(now, domain, limits)
            if at <= now:
                free.append(entry)
            elif at < earliest:
                earliest = at
        if not free:
            return None, earliest - now
        return Roster._choose(policy, free, now), 0.0

    @staticmethod
    def _choose(policy: SelectionPolicy, free: list[Entry], now: float) -> Entry:
        return free[0] if len(free) == 1 else free[policy.choose([e.health for e in free], now)]

    def idle(self) -> list[Entry]:
        """The entries with no lease held."""
        return [e for e in self.entries.values() if e.slot.in_use == 0]

    def healthy(self, now: float) -> int:
        """How many are not cooling down."""
        return sum(1 for e in self.entries.values() if e.health.cooldown_until <= now)

    def _reindex(self) -> None:
        by_tier: dict[int, list[Entry]] = {}
        for entry in self.entries.values():
            by_tier.setdefault(entry.proxy.tier, []).append(entry)
        self.by_tier = by_tier
        self.all = list(self.entries.values())
        expiries = [e.proxy.expires_at for e in self.entries.values() if e.proxy.expires_at is not None]
        self.next_expiry = min(expiries, default=INF)

    def __len__(self) -> int:
        return len(self.entries)
