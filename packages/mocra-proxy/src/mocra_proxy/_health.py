"""`ProxyHealth`: what the pool knows about one proxy's record, and how an outcome changes it."""

from __future__ import annotations

import msgspec

__all__ = ("ProxyHealth",)

LATENCY_ALPHA = 0.3  # weight of the newest latency in the moving average


class ProxyHealth(msgspec.Struct, kw_only=True):
    """The shared health record of one proxy (what `PoolState` stores, what a `SelectionPolicy` reads).

    Times are the pool clock's seconds (Unix time by default).

    Attributes:
        successes: Outcomes reported ok.
        failures: Outcomes reported not ok.
        consecutive_errors: Failures since the last success; `max_errors` of them evict the proxy.
        cooldowns: Cooldowns since the last success (the backoff exponent).
        cooldown_until: The proxy is not leased before this time.
        latency: Moving average of reported latencies, seconds (newest weighs `0.3`).
        last_used: When it was last leased or reported.
        evicted: Dropped for good (by this pool or another sharing the state).
    """

    successes: int = 0
    failures: int = 0
    consecutive_errors: int = 0
    cooldowns: int = 0
    cooldown_until: float = 0.0
    latency: float = 0.0
    last_used: float = 0.0
    evicted: bool = False

    def succeed(self, latency: float, now: float) -> None:
        """Count a success: errors and backoff start again from zero, the cooldown ends."""
        self.successes += 1
        self.consecutive_errors = 0
        self.cooldowns = 0
        self.cooldown_until = 0.0
        self._observe(latency, now)

    def fail(self, latency: float, now: float, *, max_errors: int) -> None:
        """Count a failure; the `max_errors`-th in a row marks the proxy evicted."""
        self.failures += 1
        self.consecutive_errors += 1
        self._observe(latency, now)
        if self.consecutive_errors >= max_errors:
            self.evicted = True

    def cool_down(self, now: float, base: float, cap: float) -> float:
        """Start the next cooldown (exponential backoff, capped) and return its length in seconds."""
        self.cooldowns += 1
        length = min(base * 2.0 ** (self.cooldowns - 1), cap)
        self.cooldown_until = now + length
        return length

    def _observe(self, latency: float, now: float) -> None:
        if latency > 0:
            seen = self.successes + self.failures
            self.latency = latency if seen <= 1 else self.latency + LATENCY_ALPHA * (latency - self.latency)
        self.last_used = now
