"""`AutoThrottle`: a per-host delay that follows the host's latency (Scrapy's AutoThrottle is the anchor).

With a target of `target_concurrency` requests in flight per host, the gap between two starts should be
`latency / target_concurrency`. After each response the host's delay moves toward that target: at once
when the target is longer, halfway when it is shorter (so a slow host slows the crawl at once and a fast
one speeds it up over a few responses). The delay never drops below `min_delay` (`crawl.per_domain_delay`)
or a host's own floor (robots.txt's `Crawl-delay`), never passes `max_delay`, and an error or a non-2xx
response can lengthen it but never shorten it (a fast 404 or 503 says nothing good about the host).

The delays of a job's processes meet in a `PaceStore`: `LocalPaceStore` in one process, `SharedPaceStore`
over the job's `Coordination` store for many. `observe` is synchronous and O(1) (it runs after every
response); `run` merges the hosts observed since into the store every `sync_interval` seconds, so a
process adopts what the others learnt about the hosts it crawls.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import anyio
import msgspec

from .._bounds import at_least, positive

if TYPE_CHECKING:
    from collections.abc import Callable

    from anyio.abc import TaskStatus

    from ..coordination import Coordination

__all__ = (
    "AutoThrottle",
    "AutoThrottleSettings",
    "HostPace",
    "LocalPaceStore",
    "PaceStore",
    "SharedPaceStore",
    "next_delay",
)

logger = logging.getLogger(__name__)

PACE_KEY_PREFIX = "pace:"
"""Coordination keys of the shared delays: this prefix and a hash of the host."""
PACE_TTL = 3600.0
"""Seconds a shared delay lives after its last merge (a host not crawled for an hour starts over)."""
_CAS_TRIES = 8


class AutoThrottleSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """How a host's delay follows its latency (`download.autothrottle`). Durations are seconds.

    Attributes:
        enabled: Adapt the per-host delay to latency; off, `crawl.per_domain_delay` stays as set. On, a
            host is never paced faster than `crawl.per_domain_delay` nor its robots.txt `Crawl-delay`.
        target_concurrency: Requests in flight per host the delay aims at (latency / delay).
        start_delay: A host's delay before its first response (0 = none: `crawl.per_domain_delay`).
        max_delay: The longest delay a slow host gets.
        sync_interval: Seconds between two merges into the job's shared store.

    Example:
        >>> AutoThrottleSettings(start_delay=90.0)
        Traceback (most recent call last):
        ...
        ValueError: start_delay: must not exceed max_delay (60.0), got 90.0
    """

    enabled: bool = False
    target_concurrency: float = 2.0
    start_delay: float = 1.0
    max_delay: float = 60.0
    sync_interval: float = 1.0

    def __post_init__(self) -> None:
        positive(self, "target_concurrency", "max_delay", "sync_interval")
        at_least(self, 0, "start_delay")
        if self.start_delay > self.max_delay:
            raise ValueError(
                f"start_delay: must not exceed max_delay ({self.max_delay}), got {self.start_delay}"
            )


def next_delay(
    current: float, latency: float, *, ok: bool, target_concurrency: float, floor: float, max_delay: float
) -> float:
    """A host's next delay after a response that took `latency` seconds (Scrapy's `_adjust_delay`).

    Example:
        >>> step = dict(target_concurrency=1.0, floor=0.0, max_delay=60.0)
        >>> next_delay(1.0, 0.2, ok=True, **step)  # shorter: halfway
        0.6
        >>> next_delay(0.1, 0.2, ok=True, **step)  # longer: at once
        0.2
        >>> next_delay(1.0, 0.2, ok=False, **step)  # an error never shortens it
        1.0
    """
    target = latency / target_concurrency
    delay = min(max(floor, target, (current + target) / 2), max_delay)
    if not ok and delay < current:
        return current
    return delay


@dataclass(frozen=True, slots=True)
class HostPace:
    """One host's pace, for stats and tests.

    Attributes:
        delay: Seconds between two starts on the host (job-wide).
        latency: The host's last latency (seconds; 0 before its first response).
        responses: Responses observed in this process.
    """

    delay: float
    latency: float
    responses: int


class PaceStore(Protocol):
    """Where the hosts' delays of a job meet: `LocalPaceStore` (one process), `SharedPaceStore` (a job).

    `merge` is the one step: it combines this process's delay with the stored one — the longer at once,
    a shorter one halfway (the same rule as a response's) — stores the result and returns it, for the
    process to adopt. Calls may fail with the store's errors; the throttle then keeps its own delays.
    """

    async def merge(self, host: str, delay: float) -> float:
        """Combine `delay` with the host's stored delay; return the stored result."""
        ...


def merge_delays(stored: float | None, ours: float) -> float:
    """The merge rule: ours when nothing is stored or ours is longer, else halfway down to ours."""
    return ours if stored is None else max(ours, (stored + ours) / 2)


class LocalPaceStore:
    """A `PaceStore` in this process (a dict): one process's workers share the throttle itself anyway."""

    def __init__(self) -> None:
        self.delays: dict[str, float] = {}

    async def merge(self, host: str, delay: float) -> float:
        """Combine and store (see `PaceStore`)."""
        merged = self.delays[host] = merge_delays(self.delays.get(host), delay)
        return merged


class SharedPaceStore:
    """A `PaceStore` over the job's `Coordination` store: `get` and `compare_and_set` with a TTL.

    A host's delay is a decimal float under `PACE_KEY_PREFIX` + a hash of the host, expiring `PACE_TTL`
    seconds after its last merge. A merge reads it, combines, and writes with compare-and-set, up to 8
    tries; a merge that keeps losing the race returns the stored value of the last read (someone else
    just merged).
    """

    def __init__(self, coordination: Coordination, *, ttl: float = PACE_TTL) -> None:
        self._coordination = coordination
        self._ttl = ttl

    async def merge(self, host: str, delay: float) -> float:
        """Combine and store (see `PaceStore`)."""
        key = PACE_KEY_PREFIX + hashlib.blake2b(host.encode(), digest_size=12).hexdigest()
        stored: float | None = None
        for _ in range(_CAS_TRIES):
            raw = await self._coordination.get(key)
            stored = float(raw) if raw else None
            merged = merge_delays(stored, delay)
            if await self._coordination.compare_and_set(key, raw, repr(merged).encode(), ttl=self._ttl):
                return merged
        return delay if stored is None else stored


class _Host:
    __slots__ = ("delay", "floor", "latency", "responses")

    def __init__(self, delay: float, floor: float) -> None:
        self.delay = delay
        self.floor = floor
        self.latency = 0.0
        self.responses = 0


class AutoThrottle:
    """Per-host delays that follow latency, for every worker of a job (see the module notes).

    Args:
        settings: The throttle's settings.
        min_delay: No host is paced faster than this (`crawl.per_domain_delay`).
        store: Where the job's processes meet (default: `LocalPaceStore`).

    Attributes:
        on_change: Called with a host and its new delay whenever the delay changes (the download stage
            sets the host's delay in its `DomainLimiter`).

    Example:
        >>> throttle = AutoThrottle(AutoThrottleSettings(target_concurrency=1.0, start_delay=1.0))
        >>> throttle.delay("example.com")
        1.0
        >>> throttle.observe("example.com", 0.2, 200)
        0.6
        >>> throttle.observe("example.com", 0.01, 503)  # fast, but an error: no shorter
        0.6
    """

    def __init__(
        self, settings: AutoThrottleSettings, *, min_delay: float = 0.0, store: PaceStore | None = None
    ) -> None:
        if not min_delay >= 0:
            raise ValueError(f"min_delay: must be >= 0, got {min_delay!r}")
        self.settings = settings
        self.min_delay = min_delay
        self.store: PaceStore = store if store is not None else LocalPaceStore()
        self.on_change: Callable[[str, float], object] | None = None
        self._hosts: dict[str, _Host] = {}
        self._active: set[str] = set()  # hosts observed or changed since the last sync

    def delay(self, host: str) -> float:
        """The host's current delay (its start delay before any response)."""
        h = self._hosts.get(host)
        return h.delay if h is not None else max(self.min_delay, self.settings.start_delay)

    def observe(self, host: str, latency: float, status: int | None) -> float:
        """Adapt the host's delay to a response (`status`) or an error (None) after `latency` seconds."""
        h = self._host(host)
        h.latency = latency
        h.responses += 1
        self._active.add(host)
        s = self.settings
        ok = status is not None and 200 <= status < 300
        delay = next_delay(
            h.delay,
            latency,
            ok=ok,
            target_concurrency=s.target_concurrency,
            floor=h.floor,
            max_delay=s.max_delay,
        )
        self._set(host, h, delay)
        return delay

    def floor(self, host: str, delay: float) -> None:
        """Never pace `host` faster than `delay` (robots.txt's `Crawl-delay`), whatever its latency."""
        h = self._host(host)
        h.floor = max(h.floor, delay)
        self._active.add(host)
        self._set(host, h, max(h.delay, h.floor))

    def pace(self, host: str) -> HostPace:
        """A snapshot of the host's pace."""
        h = self._hosts.get(host)
        if h is None:
            return HostPace(self.delay(host), 0.0, 0)
        return HostPace(h.delay, h.latency, h.responses)

    def describe(self) -> str:
        """The hosts' delays in a few words, for the log.

        Example:
            >>> throttle = AutoThrottle(AutoThrottleSettings(target_concurrency=1.0))
            >>> throttle.describe()
            'no host yet'
            >>> _ = throttle.observe("a.example", 0.2, 200), throttle.observe("b.example", 3.0, 200)
            >>> throttle.describe()
            '2 hosts, delay 0.6 to 3 s (median 3 s)'
        """
        delays = sorted(h.delay for h in self._hosts.values())
        if not delays:
            return "no host yet"
        hosts = "1 host" if len(delays) == 1 else f"{len(delays)} hosts"
        median = delays[len(delays) // 2]
        return f"{hosts}, delay {delays[0]:.3g} to {delays[-1]:.3g} s (median {median:.3g} s)"

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Merge the hosts observed since into the store every `sync_interval` seconds, until cancelled."""
        task_status.started()
        while True:
            await anyio.sleep(self.settings.sync_interval)
            await self.sync()

    async def sync(self) -> None:
        """Merge every host observed or changed since the last call into the store; adopt what it returns."""
        active, self._active = self._active, set()
        for host in active:
            h = self._hosts[host]
            try:
                merged = await self.store.merge(host, h.delay)
            except Exception as exc:  # the store is out of reach: keep our own delay, try again later
                logger.warning("could not share the pace of %s: %s", host, exc)
                self._active.add(host)
                continue
            self._set(host, h, min(max(merged, h.floor), self.settings.max_delay))

    def _host(self, host: str) -> _Host:
        h = self._hosts.get(host)
        if h is None:
            h = self._hosts[host] = _Host(self.delay(host), self.min_delay)
        return h

    def _set(self, host: str, h: _Host, delay: float) -> None:
        if delay == h.delay:
            return
        h.delay = delay
        if self.on_change is not None:
            self.on_change(host, delay)

    def __repr__(self) -> str:
        return f"<AutoThrottle hosts={len(self._hosts)} target={self.settings.target_concurrency}>"
