"""`Stats`: counters of a run, cheap enough to update on every request."""

from __future__ import annotations

import math
import time
from collections import Counter
from typing import Any

import msgspec

__all__ = ("LatencyHistogram", "Stats", "StatsSnapshot")


class LatencyHistogram:
    """Latencies in log-spaced buckets (≈ 4.5 % wide): O(1) record, percentiles within one bucket.

    Example:
        >>> h = LatencyHistogram()
        >>> for ms in range(1, 101):
        ...     h.record(ms / 1000)
        >>> round(h.percentile(50) * 1000)
        50
    """

    _PER_DOUBLING = 16
    _MIN = 1e-4  # 0.1 ms: the first bucket

    __slots__ = ("buckets", "count")

    def __init__(self) -> None:
        self.buckets: Counter[int] = Counter()
        self.count = 0

    def record(self, seconds: float) -> None:
        """Add one latency in seconds."""
        index = 0 if seconds <= self._MIN else int(math.log2(seconds / self._MIN) * self._PER_DOUBLING) + 1
        self.buckets[index] += 1
        self.count += 1

    def percentile(self, p: float) -> float:
        """The latency (seconds) below which `p` percent of the recorded ones fall; 0.0 when empty."""
        if not self.count:
            return 0.0
        rank = max(1, math.ceil(self.count * p / 100))
        seen = 0
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen >= rank:
                return self._MIN * 2 ** ((index - 0.5) / self._PER_DOUBLING) if index else self._MIN
        return 0.0


class StatsSnapshot(msgspec.Struct, kw_only=True):
    """A point-in-time copy of the stats, as returned in the run result and persisted in a job dir."""

    requests: int = 0
    responses: int = 0
    items: int = 0
    retries: int = 0
    dropped: dict[str, int] = {}
    dead_lettered: int = 0
    errors: int = 0
    bytes: int = 0
    status: dict[str, int] = {}
    domains: dict[str, int] = {}
    latency_ms: dict[str, float] = {}
    elapsed: float = 0.0

    @property
    def pages_per_second(self) -> float:
        """Responses per second of elapsed time."""
        return self.responses / self.elapsed if self.elapsed > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """A plain dict, ready for JSON."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        data["pages_per_second"] = round(self.pages_per_second, 1)
        return data


class Stats:
    """Mutable counters of one run. Not thread-safe: update it from the event loop only.

    Example:
        >>> s = Stats()
        >>> s.response("example.com", 200, 1024, 0.05)
        >>> s.snapshot().status
        {'200': 1}
    """

    def __init__(self, *, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self.requests = 0
        self.responses = 0
        self.items = 0
        self.retries = 0
        self.dead_lettered = 0
        self.errors = 0
        self.bytes = 0
        self.dropped: Counter[str] = Counter()
        self.status: Counter[int] = Counter()
        self.domains: Counter[str] = Counter()
        self.latency = LatencyHistogram()
        self._carried = 0.0

    def response(self, domain: str, status: int, size: int, elapsed: float) -> None:
        """Count a downloaded response."""
        self.responses += 1
        self.status[status] += 1
        self.domains[domain] += 1
        self.bytes += size
        self.latency.record(elapsed)

    def drop(self, reason: str, count: int = 1) -> None:
        """Count requests or items dropped on purpose (duplicate, robots, middleware, depth)."""
        self.dropped[reason] += count

    def restore(self, snapshot: StatsSnapshot) -> None:
        """Continue counting from a snapshot (a resumed job)."""
        self.requests += snapshot.requests
        self.responses += snapshot.responses
        self.items += snapshot.items
        self.retries += snapshot.retries
        self.dead_lettered += snapshot.dead_lettered
        self.errors += snapshot.errors
        self.bytes += snapshot.bytes
        self.dropped.update(snapshot.dropped)
        self.status.update({int(k): v for k, v in snapshot.status.items()})
        self.domains.update(snapshot.domains)
        self._carried += snapshot.elapsed

    def snapshot(self) -> StatsSnapshot:
        """Copy the counters."""
        return StatsSnapshot(
            requests=self.requests,
            responses=self.responses,
            items=self.items,
            retries=self.retries,
            dropped=dict(self.dropped),
            dead_lettered=self.dead_lettered,
            errors=self.errors,
            bytes=self.bytes,
            status={str(k): v for k, v in sorted(self.status.items())},
            domains=dict(self.domains.most_common()),
            latency_ms={f"p{p}": round(self.latency.percentile(p) * 1000, 2) for p in (50, 90, 99)},
            elapsed=self._carried + self._clock() - self._started,
        )
