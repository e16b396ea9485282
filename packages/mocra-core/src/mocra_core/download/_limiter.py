"""`DomainLimiter`: per-domain concurrency, minimum delay and adaptive slow-down (the politeness gate)."""

from __future__ import annotations

import math
import random as _random
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio

from ._permit import Permit
from ._retry import parse_retry_after

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from types import TracebackType

__all__ = ("BACKOFF_FLOOR", "MAX_BACKOFF", "DomainLimiter", "DomainState", "domain_of")

BACKOFF_FLOOR = 0.25
"""Extra delay (seconds) a domain gets on its first 429/503; each further one doubles it."""
MAX_BACKOFF = 30.0
"""Default cap (seconds) on that extra delay and on a `Retry-After` block of a domain (`max_backoff`)."""
_SLOW_STATUSES = frozenset((429, 503))
_SWEEP_EVERY = 1024


def domain_of(url_or_domain: str) -> str:
    """The limiter's key: the lower-cased host name, without port or credentials.

    Example:
        >>> domain_of("https://User@Shop.Example.com:8443/a?b=1")
        'shop.example.com'
        >>> domain_of("Example.COM")
        'example.com'
    """
    if ":" not in url_or_domain and "/" not in url_or_domain:
        return url_or_domain.lower()
    text = url_or_domain if "://" in url_or_domain else "//" + url_or_domain
    return urlsplit(text).hostname or url_or_domain.lower()


@dataclass(frozen=True)
class DomainState:
    """A snapshot of one domain's limits, for logs, stats and tests. Durations are seconds."""

    concurrency: int
    """Requests allowed at once right now (halved by a 429/503, restored by successes)."""
    delay: float
    """Configured minimum gap between request starts."""
    extra_delay: float
    """Adaptive gap added after 429/503 responses."""
    active: int
    """Requests holding a slot."""
    waiting: int
    """Requests queued for a slot."""
    blocked_for: float
    """Seconds until a `Retry-After` block ends (0 when not blocked)."""


class _Domain:
    __slots__ = (
        "active",
        "blocked_until",
        "delay",
        "extra",
        "limit",
        "max_limit",
        "next_start",
        "pinned",
        "streak",
        "waiters",
    )

    def __init__(self, limit: int, delay: float) -> None:
        self.active = 0
        self.limit = self.max_limit = limit
        self.delay = delay
        self.extra = 0.0
        self.next_start = 0.0
        self.blocked_until = 0.0
        self.streak = 0
        self.pinned = False
        self.waiters: deque[anyio.Event] = deque()

    def is_default(self) -> bool:
        return (
            not self.active
            and not self.waiters
            and not self.pinned
            and not self.extra
            and not self.delay
            and not self.blocked_until
            and self.limit == self.max_limit
        )


class _Slot:
    __slots__ = ("_domain", "_key", "_limiter")

    def __init__(self, limiter: DomainLimiter, key: str) -> None:
        self._limiter = limiter
        self._key = key
        self._domain: _Domain | None = None

    async def __aenter__(self) -> None:
        self._domain = await self._limiter._acquire(self._key)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._domain is not None:
            self._limiter._release(self._key, self._domain)
            self._domain = None


class DomainLimiter:
    """Limits requests per domain: at most `concurrency` at once, starts at least `delay` seconds apart.

    A domain is the lower-cased host name: ports do not count, so `example.com:8080` and `example.com`
    share limits (they are almost always one server; Scrapy's download slots do the same). robots.txt, by
    contrast, is per origin (`RobotsPolicy`).

    Waiting requests are served first come, first served. With no delay and no slow-down in force a free
    slot costs O(1) and does not yield to the event loop; the delay path sleeps until the domain's next
    start time. Cancelling a waiting request gives its place (or its slot) to the next one. `try_acquire`
    never waits: it grants a slot (a `Permit`) or says when to ask again, so a caller can serve another
    domain meanwhile (the download stage does; `slot` is the waiting form).

    Adaptive slow-down, fed by `feedback` after each response:

    - 429 or 503: the domain's extra delay doubles (from `BACKOFF_FLOOR`, capped at `max_backoff`) and its
      concurrency halves (at least 1). A `Retry-After` (seconds or HTTP-date) also blocks new starts on the
      domain until then, for at most `max_backoff` seconds.
    - 2xx or 3xx: the domain serves, so the extra delay ends at once; after as many successes in a row as
      the current concurrency, concurrency grows by one back towards its configured value.
    - Other statuses leave the domain as it is.

    So a domain's slow-down never spaces starts more than `max_backoff` apart nor blocks it longer, and
    a few URLs that answer 429 forever cannot starve the domain's other pages: the engine feeds back only
    a request's first attempt, and the URL's own retries wait out their backoff (`RetryPolicy`) alone.

    Args:
        concurrency: Requests in flight at once per domain.
        delay: Minimum seconds between two request starts on one domain (0 = none).
        jitter: Spread of the delay as a fraction: each gap is `delay * (1 ± jitter)`, uniformly.
        max_backoff: Cap (seconds) on the slow-down 429/503 responses impose on a domain: its extra delay
            and a `Retry-After` block (`retry.max_domain_backoff`). 0 turns the slow-down off.
        clock: Monotonic time in seconds; inject a fake one in tests.
        sleep: Sleeps for seconds; inject one that advances the fake clock.
        random: Returns a float in [0, 1), for the jitter.

    Raises:
        ValueError: a value makes no sense; the message names the argument.

    Example:
        >>> import anyio
        >>> limiter = DomainLimiter(concurrency=2)
        >>> async def main() -> int:
        ...     async with limiter.slot("https://example.com/a"):
        ...         return limiter.state("example.com").active
        >>> anyio.run(main)
        1
        >>> limiter.feedback("example.com", 503, "30")
        >>> state = limiter.state("example.com")
        >>> state.concurrency, state.extra_delay, state.blocked_for > 29
        (1, 0.25, True)
        >>> limiter.feedback("example.com", 200)  # it serves again: the extra delay ends
        >>> limiter.state("example.com").extra_delay
        0.0
    """

    needs_admit = False
    """A permit of this limiter needs no `admit` step (see `DomainAdmission`)."""

    def __init__(
        self,
        *,
        concurrency: int = 8,
        delay: float = 0.0,
        jitter: float = 0.0,
        max_backoff: float = MAX_BACKOFF,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency: must be >= 1, got {concurrency!r}")
        if not delay >= 0:
            raise ValueError(f"delay: must be >= 0, got {delay!r}")
        if not 0 <= jitter <= 1:
            raise ValueError(f"jitter: must be between 0 and 1, got {jitter!r}")
        if not 0 <= max_backoff < math.inf:
            raise ValueError(f"max_backoff: must be a finite number of seconds >= 0, got {max_backoff!r}")
        self.concurrency = concurrency
        self.max_backoff = max_backoff
        self.delay = delay
        self.jitter = jitter
        self._clock = clock
        self._sleep = sleep
        self._random = random
        self._domains: dict[str, _Domain] = {}
        self._created = 0
        self.members = 1

    def slot(self, url_or_domain: str) -> _Slot:
        """An async context manager holding one of the domain's slots for the duration of a request.

        Entering waits for a free slot, then for the domain's next start time (delay, slow-down,
        `Retry-After` block). Pass a URL or a host name (see `domain_of`).
        """
        return _Slot(self, domain_of(url_or_domain))

    def try_acquire(self, url_or_domain: str) -> Permit | float:
        """Take one of the domain's slots if a request may start now, without waiting.

        Returns a `Permit` (give it back with `async with permit:` around the request, or `abandon`), or
        the seconds until asking again can succeed: the wait for the domain's next start (its delay,
        slow-down or `Retry-After` block), or `math.inf` while all its slots are taken (ask again once one
        is given back). Requests waiting in `slot` go first. O(1); never yields to the event loop.

        Example:
            >>> limiter = DomainLimiter(concurrency=2, delay=10.0)
            >>> first = limiter.try_acquire("https://example.com/a")
            >>> second = limiter.try_acquire("example.com")  # a free slot, but the next start is 10 s away
            >>> type(first).__name__, 9 < second <= 10
            ('Permit', True)
        """
        key = domain_of(url_or_domain)
        d = self._domains.get(key)
        if d is None:
            d = self._domain(key)
        if d.waiters or d.active >= -(-d.limit // self.members):
            return math.inf
        if not (d.delay or d.extra or d.blocked_until):
            d.active += 1
            return Permit(self, key, d)
        previous = d.next_start
        wait = self._turn(d, self._clock())
        if wait > 0:
            return wait
        d.active += 1
        return Permit(self, key, d, previous, d.next_start)

    async def admit(self, permit: Permit) -> None:
        """Nothing to do: a permit of this limiter may start at once (`needs_admit` is False)."""

    def configure(
        self, url_or_domain: str, *, concurrency: int | None = None, delay: float | None = None
    ) -> None:
        """Override the limits of one domain, e.g. with robots.txt's `Crawl-delay`; kept for the whole run."""
        d = self._domain(domain_of(url_or_domain))
        d.pinned = True
        if concurrency is not None:
            if concurrency < 1:
                raise ValueError(f"concurrency: must be >= 1, got {concurrency!r}")
            d.limit = d.max_limit = concurrency
            self._wake(d)
        if delay is not None:
            if not delay >= 0:
                raise ValueError(f"delay: must be >= 0, got {delay!r}")
            d.delay = delay

    def share(self, members: int) -> None:
        """Enforce this process's share of limits meant for `members` processes (1: all of them).

        Every domain then allows `ceil(limit / members)` requests at once and spaces starts `delay *
        members` apart (the adaptive extra delay and `Retry-After` are this process's own and are not
        scaled); `state` and `configure` keep speaking of the whole limits.

        Example:
            >>> limiter = DomainLimiter(concurrency=8, delay=0.5)
            >>> limiter.share(3)
            >>> limiter.members, limiter.state("example.com").concurrency
            (3, 8)
        """
        if members < 1:
            raise ValueError(f"members: must be >= 1, got {members!r}")
        self.members = members
        for d in self._domains.values():
            self._wake(d)

    def feedback(self, url_or_domain: str, status: int, retry_after: str | None = None) -> None:
        """Adapt a domain's limits to a response status (see the class notes); cheap, call it every time."""
        key = domain_of(url_or_domain)
        if status in _SLOW_STATUSES:
            d = self._domain(key)
            d.extra = min(self.max_backoff, max(BACKOFF_FLOOR, d.extra * 2))
            d.limit = max(1, d.limit // 2)
            d.streak = 0
            wait = parse_retry_after(retry_after) if retry_after else None
            if wait and self.max_backoff:
                d.blocked_until = max(d.blocked_until, self._clock() + min(wait, self.max_backoff))
            return
        if status >= 400:
            return
        d_or_none = self._domains.get(key)
        if d_or_none is None:
            return
        d = d_or_none
        d.extra = 0.0
        if d.limit < d.max_limit:
            d.streak += 1
            if d.streak >= d.limit:
                d.limit += 1
                d.streak = 0
                self._wake(d)

    def state(self, url_or_domain: str) -> DomainState:
        """A snapshot of one domain's current limits."""
        d = self._domains.get(domain_of(url_or_domain))
        if d is None:
            return DomainState(self.concurrency, self.delay, 0.0, 0, 0, 0.0)
        blocked_for = max(0.0, d.blocked_until - self._clock()) if d.blocked_until else 0.0
        return DomainState(d.limit, d.delay, d.extra, d.active, len(d.waiters), blocked_for)

    # ------------------------------------------------------------------ internals

    def _domain(self, key: str) -> _Domain:
        d = self._domains.get(key)
        if d is None:
            d = self._domains[key] = _Domain(self.concurrency, self.delay)
            self._created += 1
            if self._created % _SWEEP_EVERY == 0:
                self._sweep()
        return d

    async def _acquire(self, key: str) -> _Domain:
        d = self._domain(key)
        if d.active < -(-d.limit // self.members) and not d.waiters:
            d.active += 1
        else:
            event = anyio.Event()
            d.waiters.append(event)
            try:
                await event.wait()
            except BaseException:
                if event.is_set():  # the slot was already handed to us: pass it on
                    self._release(key, d)
                else:
                    d.waiters.remove(event)
                raise
        if d.delay or d.extra or d.blocked_until:
            try:
                await self._wait_turn(d)
            except BaseException:
                self._release(key, d)
                raise
        return d

    async def _wait_turn(self, d: _Domain) -> None:
        while True:
            wait = self._turn(d, self._clock())
            if wait <= 0:
                return
            await self._sleep(wait)

    def _turn(self, d: _Domain, now: float) -> float:
        """Reserve the domain's start `now` and return 0, or return the seconds until its next start."""
        if d.blocked_until and d.blocked_until <= now:
            d.blocked_until = 0.0
        start = max(d.next_start, d.blocked_until)
        if start > now:
            return start - now
        gap = d.delay * self.members
        if gap and self.jitter:
            gap *= 1.0 + self.jitter * (2.0 * self._random() - 1.0)
        d.next_start = now + gap + d.extra
        return 0.0

    def _release(self, key: str, d: _Domain) -> None:
        d.active -= 1
        self._wake(d)
        if d.is_default() and self._domains.get(key) is d:
            del self._domains[key]

    def _wake(self, d: _Domain) -> None:
        while d.waiters and d.active < -(-d.limit // self.members):
            d.active += 1
            d.waiters.popleft().set()

    def _sweep(self) -> None:
        now = self._clock()
        for key, d in list(self._domains.items()):
            idle = not d.active and not d.waiters and not d.pinned and d.limit == d.max_limit
            if idle and not d.extra and d.next_start <= now and d.blocked_until <= now:
                del self._domains[key]

    def __repr__(self) -> str:
        return (
            f"<DomainLimiter concurrency={self.concurrency} delay={self.delay} domains={len(self._domains)}>"
        )
