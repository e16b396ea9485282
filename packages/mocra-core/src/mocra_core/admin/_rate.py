"""`RateLimiter`: a token bucket per caller (an API key, or the address of a caller with a wrong key)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("RateLimiter",)


class RateLimiter:
    """`rate` requests per second per caller, `burst` at once; `take` says how long to wait when over.

    Buckets that have filled up again are forgotten once more than `max_callers` are kept.

    Example:
        >>> now = [0.0]
        >>> limiter = RateLimiter(rate=2.0, burst=2, clock=lambda: now[0])
        >>> [limiter.take("k") for _ in range(3)]
        [0.0, 0.0, 0.5]
        >>> now[0] = 0.5
        >>> limiter.take("k")
        0.0
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_callers: int = 10_000,
    ) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._max = max_callers
        self._buckets: dict[str, tuple[float, float]] = {}  # caller -> (tokens, at)

    @property
    def rate(self) -> float:
        """Tokens added per second."""
        return self._rate

    def take(self, caller: str) -> float:
        """Spend one token of `caller`: 0.0 when it had one, else the seconds until it will have one."""
        now = self._clock()
        tokens, at = self._buckets.get(caller, (self._burst, now))
        tokens = min(self._burst, tokens + (now - at) * self._rate)
        if tokens >= 1.0:
            self._buckets[caller] = (tokens - 1.0, now)
            if len(self._buckets) > self._max:
                self._forget_full(now)
            return 0.0
        self._buckets[caller] = (tokens, now)
        return (1.0 - tokens) / self._rate

    def _forget_full(self, now: float) -> None:
        for caller, (tokens, at) in list(self._buckets.items()):
            if tokens + (now - at) * self._rate >= self._burst:
                del self._buckets[caller]
