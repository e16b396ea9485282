"""`_Entry`: one proxy inside a pool — its health and the lease slots its limits allow."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._health import ProxyHealth
    from ._limits import Limits
    from ._proxy import Proxy

__all__ = ("Blocked", "Entry")

INF = float("inf")
PRUNE_AT = 64  # per-domain slots an entry holds before it drops the idle ones (then twice what is left)


class Blocked:
    """Why a proxy cannot be leased now (one of these names), for the `NoProxyAvailable` message."""

    COOLING = "cooling down"
    LIMITED = "limited"


class _Slot:
    __slots__ = ("in_use", "next_at")

    def __init__(self) -> None:
        self.in_use = 0
        self.next_at = 0.0


class Entry:
    """A proxy in the pool: its record, the keys stuck to it, and its (per-domain) lease slots.

    A domain's slot lives only while it matters: while a lease for the domain is held or its rate
    limit still spaces the next one. It goes when its last lease is given back after that, or when the
    map has grown to `PRUNE_AT` (then to twice the slots left) and a new domain comes.
    """

    __slots__ = ("_prune_at", "domains", "health", "id", "keys", "proxy", "slot")

    def __init__(self, proxy: Proxy, health: ProxyHealth) -> None:
        self.proxy = proxy
        self.id = proxy.id
        self.health = health
        self.keys: set[str] = set()
        self.slot = _Slot()
        self.domains: dict[str, _Slot] = {}
        self._prune_at = PRUNE_AT

    def ready_at(self, now: float, domain: str | None, limits: Limits) -> float:
        """When it may be leased: `<= now` means now; `inf` means when a lease is given back."""
        at = self.health.cooldown_until
        slot = self.slot
        if limits.concurrency is not None and slot.in_use >= limits.concurrency:
            return INF
        if limits.rate is not None and slot.next_at > at:
            at = slot.next_at
        if domain is not None and (limits.domain_rate is not None or limits.domain_concurrency is not None):
            per = self.domains.get(domain)
            if per is not None:
                if limits.domain_concurrency is not None and per.in_use >= limits.domain_concurrency:
                    return INF
                if limits.domain_rate is not None and per.next_at > at:
                    at = per.next_at
        return at

    def take(self, now: float, domain: str | None, limits: Limits) -> None:
        """Use one lease slot (and space the next by the rate limits)."""
        slot = self.slot
        slot.in_use += 1
        if limits.rate is not None:
            slot.next_at = max(now, slot.next_at) + 1.0 / limits.rate
        if domain is not None and (limits.domain_rate is not None or limits.domain_concurrency is not None):
            per = self.domains.get(domain)
            if per is None:
                if len(self.domains) >= self._prune_at:
                    self._prune(now)
                per = self.domains[domain] = _Slot()
            per.in_use += 1
            if limits.domain_rate is not None:
                per.next_at = max(now, per.next_at) + 1.0 / limits.domain_rate
        self.health.last_used = now

    def give_back(self, domain: str | None, now: float) -> None:
        """Free the lease slot taken by `take` (and drop the domain's slot if it no longer matters)."""
        self.slot.in_use -= 1
        if domain is not None:
            per = self.domains.get(domain)
            if per is not None:
                per.in_use -= 1
                if per.in_use <= 0 and per.next_at <= now:
                    del self.domains[domain]

    def _prune(self, now: float) -> None:
        """Drop the domain slots with no lease held and no rate spacing left."""
        self.domains = {d: per for d, per in self.domains.items() if per.in_use > 0 or per.next_at > now}
        self._prune_at = max(PRUNE_AT, 2 * len(self.domains))

    def __repr__(self) -> str:
        return f"Entry({self.proxy.redacted!r}, in_use={self.slot.in_use})"
