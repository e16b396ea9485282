"""`ProxyPool`: lease proxies by score, key and domain, with cooldowns, eviction, limits, tiers and refill."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Self

import anyio

from ._domain_tiers import DomainTiers
from ._lease import Lease, LeaseContext
from ._limits import Limits
from ._outcome import BAN_STATUSES
from ._policy import ScorePolicy
from ._pool_view import NoProxyAvailable, PoolStats, count
from ._probe import probe_loop
from ._roster import Roster
from ._state import MemoryState
from ._state_guard import GuardedState
from ._supply import Supply
from ._tiers import Tiers

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from types import TracebackType

    from ._entry import Entry
    from ._health import ProxyHealth
    from ._outcome import Outcome
    from ._policy import SelectionPolicy
    from ._probe import HealthCheck
    from ._proxy import Proxy
    from ._source import ProxySource
    from ._state import PoolState

__all__ = ("ProxyPool",)

logger = logging.getLogger(__name__)
UPKEEP_INTERVAL = 1.0  # seconds between refill checks and shared-state reads


class ProxyPool:
    """A pool of proxies from `sources`, leased one request at a time.

    `async with` it: entering loads the sources, then background tasks refill it from the sources
    (by weight) when fewer than `refill_below` proxies are healthy, read the shared `state` every second
    and, with `health_check`, probe idle proxies.

    Every reported outcome updates the proxy's `ProxyHealth`. A failure with a ban status or without a
    status (a connect error, a timeout, an exception) cools the proxy down for
    `cooldown * 2**(n-1)` seconds (n: cooldowns since its last success), at most `max_cooldown`; other
    failures only count. `max_errors` failures in a row evict it for good. Expired proxies are dropped.

    Args:
        sources: Where proxies come from (`ProxySource`).
        policy: Chooses among free proxies (default `ScorePolicy()`).
        ban_statuses: Statuses that mean "this proxy is blocked" (default 403, 407, 429).
        max_errors: Consecutive failures that evict a proxy.
        cooldown: First cooldown, seconds; doubles per repeat.
        max_cooldown: Longest cooldown, seconds.
        limits: Per-proxy and per-(proxy, domain) rate and concurrency (default: none).
        tiers: Per-domain tier escalation (default `Tiers()`; `None` mixes all tiers).
        refill_below: Refill from the sources when fewer proxies than this are healthy.
        lease_timeout: Default seconds a lease waits for a free proxy.
        health_check: Probe idle proxies (default: no probing).
        state: Shared `PoolState` (default: a private `MemoryState`); while it fails, the pool logs a
            warning and goes on with its own view.
        clock: Unix seconds (for expiry and cooldowns shared across processes); inject in tests.

    Example:
        >>> import anyio
        >>> from mocra_proxy import Proxy
        >>> class Static:
        ...     name, weight = "static", 1.0
        ...     async def fetch(self): return [Proxy.parse("http://u:pw@10.0.0.1:8080")]
        >>> async def demo() -> str:
        ...     async with ProxyPool([Static()]) as pool, pool.lease(domain="example.com") as lease:
        ...         await lease.ok(200)
        ...         return lease.proxy.redacted
        >>> anyio.run(demo)
        'http://u:***@10.0.0.1:8080'
    """

    def __init__(
        self,
        sources: Sequence[ProxySource],
        *,
        policy: SelectionPolicy | None = None,
        ban_statuses: Iterable[int] = BAN_STATUSES,
        max_errors: int = 5,
        cooldown: float = 1.0,
        max_cooldown: float = 300.0,
        limits: Limits | None = None,
        tiers: Tiers | None = Tiers(),  # noqa: B008 - frozen
        refill_below: int = 1,
        lease_timeout: float = 30.0,
        health_check: HealthCheck | None = None,
        state: PoolState | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._supply = Supply(sources, refill_below)
        self._policy = policy or ScorePolicy()
        self._ban_statuses = frozenset(ban_statuses)
        self._max_errors, self._cooldown, self._max_cooldown = max_errors, cooldown, max_cooldown
        self._limits = limits or Limits()
        self._lease_timeout = lease_timeout
        self._health_check = health_check
        self._shared = state is not None
        self._state: PoolState = MemoryState() if state is None else GuardedState(state)
        self._clock = clock
        self._roster = Roster()
        self._sticky: dict[str, Entry] = {}
        self._tiers = None if tiers is None else DomainTiers(tiers, self._state, shared=self._shared)
        self._waiters = 0
        self._waits = 0
        self._changed = anyio.Event()
        self._refill_wanted = anyio.Event()
        self._tg: anyio.abc.TaskGroup | None = None

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Self:
        await self._refill(everything=True)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._upkeep, name="proxy-pool-upkeep")
        if self._health_check is not None:
            check, idle, bans = self._health_check, self._roster.idle, self._ban_statuses
            self._tg.start_soon(probe_loop, check, idle, self._probed, bans, name="proxy-pool-probes")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel("proxy pool closed")
        tg, self._tg = self._tg, None
        await tg.__aexit__(None, None, None)  # the block's own exception propagates as itself
        return None

    # ------------------------------------------------------------------ public API
    def lease(
        self, *, key: str | None = None, domain: str | None = None, timeout: float | None = None
    ) -> LeaseContext:
        """Hold a proxy for one request: `async with pool.lease(domain=...) as lease: ...`.

        Args:
            key: A sticky key (account, session): it keeps its proxy until that proxy fails.
            domain: The target's domain, for per-domain limits and tiers.
            timeout: Seconds to wait for a free proxy (default `lease_timeout`).

        Raises:
            NoProxyAvailable: No proxy became free within `timeout`; the message says why.
        """
        return LeaseContext(self, key, domain, timeout)

    async def report(self, proxy: Proxy, outcome: Outcome, *, domain: str | None = None) -> None:
        """Report an outcome for a proxy used outside a lease (ignored if it has left the pool)."""
        entry = self._roster.entries.get(proxy.id)
        if entry is not None:
            await self._report_entry(entry, outcome, domain)

    @property
    def proxies(self) -> list[Proxy]:
        """The proxies in the pool now (not evicted, not expired)."""
        return [entry.proxy for entry in self._roster.entries.values()]

    def health(self, proxy: Proxy) -> ProxyHealth | None:
        """The pool's record of `proxy` (a live view), or `None` if it is not in the pool."""
        entry = self._roster.entries.get(proxy.id)
        return None if entry is None else entry.health

    @property
    def ban_statuses(self) -> frozenset[int]:
        """The statuses this pool takes for a ban (`ProxiedHttpx` and `ProxiedAiohttp` use them too).

        Example:
            >>> sorted(ProxyPool([], ban_statuses=[418, 403]).ban_statuses)
            [403, 418]
        """
        return self._ban_statuses

    def stats(self) -> PoolStats:
        """Counts of proxies by condition, now."""
        return count(
            self._roster.entries.values(),
            self._clock(),
            self._limits,
            len(self._roster.evicted),
            self._roster.expired,
            self._waits,
        )

    # ------------------------------------------------------------------ leasing
    async def _acquire(self, key: str | None, domain: str | None, patience: float | None) -> Lease:
        deadline: float | None = None
        while True:
            now = self._clock()
            if now >= self._roster.next_expiry:
                for gone in self._roster.take_expired(now):
                    self._unstick(gone)
                self._refill_wanted.set()
            tier = None if self._tiers is None else await self._tiers.tier(domain, self._roster.by_tier, now)
            entry, wait = self._pick(key, domain, tier, now)
            if entry is not None:
                entry.take(now, domain, self._limits)
                return Lease(self, entry, domain, key)
            limit = self._lease_timeout if patience is None else patience
            if deadline is None:
                deadline = anyio.current_time() + limit
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                raise NoProxyAvailable.explain(self.stats(), domain, tier, limit)
            if self._roster.healthy(now) < self._supply.refill_below:
                self._refill_wanted.set()
            self._waits += 1
            self._waiters += 1
            try:
                with anyio.move_on_after(min(wait, remaining)):
                    await self._changed.wait()
            finally:
                self._waiters -= 1

    def _pick(
        self, key: str | None, domain: str | None, tier: int | None, now: float
    ) -> tuple[Entry | None, float]:
        """A free entry (or None and the seconds until one may be free)."""
        limits = self._limits
        if key is not None and (stuck := self._sticky.get(key)) is not None:
            if stuck.id in self._roster.entries and stuck.health.cooldown_until <= now:
                at = stuck.ready_at(now, domain, limits)
                return (stuck, 0.0) if at <= now else (None, at - now)
            self._unstick(stuck)
        chosen, wait = self._roster.pick(self._policy, limits, domain, tier, now)
        if chosen is not None and key is not None:
            self._sticky[key] = chosen
            chosen.keys.add(key)
        return chosen, wait

    async def _probed(self, entry: Entry, outcome: Outcome) -> None:
        if entry.id in self._roster.entries:
            await self._report_entry(entry, outcome, None)

    def _release(self, entry: Entry, domain: str | None) -> None:
        entry.give_back(domain, self._clock())
        if self._waiters:
            self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # ------------------------------------------------------------------ outcomes
    async def _report_entry(self, entry: Entry, outcome: Outcome, domain: str | None) -> None:
        now = self._clock()
        health = entry.health
        if outcome.ok:
            health.succeed(outcome.latency, now)
        else:
            health.fail(outcome.latency, now, max_errors=self._max_errors)
            self._unstick(entry)
            banned = outcome.status in self._ban_statuses
            if banned or outcome.status is None:
                length = health.cool_down(now, self._cooldown, self._max_cooldown)
                logger.debug(
                    "proxy %s cools down for %.1f s (%s)",
                    entry.proxy.redacted,
                    length,
                    outcome.status or outcome.error,
                )
            if banned and domain is not None and self._tiers is not None:
                await self._tiers.on_ban(domain, entry.proxy.tier, self._roster.by_tier, now)
            if health.evicted:
                self._evict(entry)
        await self._state.save_health(entry.id, health)

    def _unstick(self, entry: Entry) -> None:
        for key in entry.keys:
            if self._sticky.get(key) is entry:
                del self._sticky[key]
        entry.keys.clear()

    # ------------------------------------------------------------------ membership
    def _evict(self, entry: Entry) -> None:
        errors = entry.health.consecutive_errors
        logger.info("proxy %s evicted after %d errors in a row", entry.proxy.redacted, errors)
        self._remove(entry, evicted=True)

    def _remove(self, entry: Entry, *, evicted: bool = False) -> None:
        self._roster.remove(entry, evicted=evicted)
        self._unstick(entry)
        if evicted:
            self._supply.retire(entry.proxy)
        self._refill_wanted.set()

    # ------------------------------------------------------------------ background
    async def _refill(self, *, everything: bool = False) -> None:
        """Fetch from the sources (by weight) until enough proxies are healthy (all of them on start)."""
        if await self._supply.refill(self._roster, self._state, self._clock, everything=everything):
            self._notify()

    async def _upkeep(self) -> None:
        while True:
            with anyio.move_on_after(UPKEEP_INTERVAL):
                await self._refill_wanted.wait()
            self._refill_wanted = anyio.Event()
            if self._shared:
                await self.sync()
            await self._refill()

    async def sync(self) -> None:
        """Read the shared state now: other pools' bans, cooldowns, evictions and domain tiers.

        The pool does this every second when it was given a `state`; call it to see them at once.
        While the state fails (e.g. Redis is down) the pool keeps its own view and logs the outage.
        """
        health, tiers = await self._state.load(
            list(self._roster.entries), list(self._tiers.known) if self._tiers else []
        )
        for pid, record in health.items():
            entry = self._roster.entries.get(pid)
            if entry is None:
                continue
            if record.evicted:
                self._remove(entry, evicted=True)
            else:
                entry.health = record
        if self._tiers is not None:
            self._tiers.update(tiers)

    def __repr__(self) -> str:
        return f"ProxyPool({len(self._roster.entries)} proxies, policy={self._policy!r})"
