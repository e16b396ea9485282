"""`Stats`: counters of a run, cheap enough to update on every request."""

from __future__ import annotations

import math
import time
from collections import Counter
from typing import Any

import msgspec

from ..scope import canonical_host

__all__ = ("LatencyHistogram", "Stats", "StatsSnapshot")

OFFSITE_HOSTS_CAP = 1_000
"""Distinct offsite hosts a run counts one by one; links to further hosts are counted under `OTHER_HOSTS`."""
OTHER_HOSTS = "(other)"
"""The `offsite_hosts` key of the hosts past the cap, or past the top 10 of a snapshot (not a host name)."""
_TOP_OFFSITE = 10


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
    """A point-in-time copy of the stats of a run, or of a job's runs so far (as persisted in a job dir).

    `elapsed` is seconds of crawling (a job's: the sum over its runs, not the wall time since its first
    start); `runs` how many runs it covers; `latency_ms` is a run's own (percentiles do not add up).
    `offsite_hosts` holds the 10 hosts most dropped as out of scope, the rest summed under `"(other)"`,
    so its values add up to `dropped["offsite"]` (a job's: the top 10 of its runs' top 10s, approximate).
    `concurrency` is how many downloads the autoscaler lets run at once (`crawl.autoscale`; 0 when it is
    off): the latest figure, not a count. `proxy_failures` counts proxy failures (connect or proxy errors,
    ban statuses) by proxy URL with its password redacted: the 10 most failing, the rest under `"(other)"`.
    """

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
    offsite_hosts: dict[str, int] = {}
    proxy_failures: dict[str, int] = {}
    latency_ms: dict[str, float] = {}
    elapsed: float = 0.0
    runs: int = 1
    concurrency: int = 0

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

    Each counter has one definition, which the live progress line and the final summary both show:

    - `requests`: downloads started (a retry is one more); `responses`: downloads that got an HTTP answer,
      any status; `retries`: requests handed back for another attempt.
    - `bytes`: body bytes received, after decoding, including those of a body cut at
      `download.max_body_bytes`.
    - `errors`: failures of code: a callback, middleware, sink or downloader that raised, and `ctx.error`
      reports; `errors_by_kind` splits them (`parse`, `generate`, `sitemap`, `sink`, `download`,
      `reported`: a `ctx.error`). A server's error status is not one (see `status`); a failure usually
      dead-letters its message too, and is counted in both.
    - `in_flight`: downloads running now (a gauge, not a count).
    - `dead_lettered`: messages this run sent to a dead-letter queue, by any stage or by the queue itself
      when their attempts ran out (`queue.max_attempts`).
    - `dropped`: requests and items left out on purpose, by reason (duplicate, robots, max_depth, ...).
    - `offsite_hosts`: the hosts of the requests dropped as out of the crawl's scope (`offsite`), the
      first `OFFSITE_HOSTS_CAP` one by one, further ones under `"(other)"`.
    - `proxy_failures`: proxy failures (a connect or proxy error, a timeout, a ban status) by proxy URL,
      password redacted; the downloaders' proxy routes count into it. A page retried through another
      proxy after one failure counts one here and no retry.

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
        self.offsite_hosts: Counter[str] = Counter()
        self.proxy_failures: Counter[str] = Counter()
        self.pages_by_run: Counter[str | None] | None = None  # responses by module run, when recorded
        self.errors_by_kind: Counter[str] = Counter()
        self.in_flight = 0  # downloads running now
        self.concurrency = 0  # the autoscaler's latest number of downloads at once; 0: autoscaling is off
        self.latency = LatencyHistogram()
        self._earlier = StatsSnapshot(runs=0)

    def response(self, domain: str, status: int, size: int, elapsed: float) -> None:
        """Count a downloaded response."""
        self.responses += 1
        self.status[status] += 1
        self.domains[domain] += 1
        self.bytes += size
        self.latency.record(elapsed)

    def error(self, kind: str) -> None:
        """Count a failure of code of `kind` (`parse`, `generate`, `sitemap`, `sink`, `download`, `reported`).

        Example:
            >>> s = Stats()
            >>> s.error("parse"); s.error("parse"); s.error("sink")
            >>> s.errors, dict(s.errors_by_kind)
            (3, {'parse': 2, 'sink': 1})
        """
        self.errors += 1
        self.errors_by_kind[kind] += 1

    def dead_letter(self) -> None:
        """Count one message sent to a dead-letter queue."""
        self.dead_lettered += 1

    def drop(self, reason: str, count: int = 1) -> None:
        """Count requests or items dropped on purpose (duplicate, robots, middleware, depth)."""
        self.dropped[reason] += count

    def offsite(self, url_or_host: str) -> None:
        """Count a request dropped as out of scope: `dropped["offsite"]`, and its host in `offsite_hosts`.

        Args:
            url_or_host: The dropped absolute URL (`scheme://...`) or its host; the canonical host is
                counted (without its port), `"(none)"` for a URL without one.

        Example:
            >>> s = Stats()
            >>> for url in ("https://Ads.example.net/a", "http://ads.example.net./b", "https://cdn.test/"):
            ...     s.offsite(url)
            >>> s.dropped["offsite"], s.snapshot().offsite_hosts
            (3, {'ads.example.net': 2, 'cdn.test': 1})
        """
        self.dropped["offsite"] += 1
        url = url_or_host if "://" in url_or_host else "http://" + url_or_host
        host = canonical_host(url) or "(none)"
        hosts = self.offsite_hosts
        if host in hosts or len(hosts) < OFFSITE_HOSTS_CAP:
            hosts[host] += 1
        else:
            hosts[OTHER_HOSTS] += 1

    @property
    def elapsed(self) -> float:
        """Seconds since this run's counting began."""
        seconds: float = self._clock() - self._started
        return seconds

    @property
    def earlier(self) -> StatsSnapshot:
        """The counts of the job's earlier runs (see `resume`); zero for a job's first run."""
        return self._earlier

    def resume(self, earlier: StatsSnapshot) -> None:
        """Count this run as one more of a job whose earlier runs counted `earlier` (see `job_snapshot`)."""
        self._earlier = earlier

    def snapshot(self) -> StatsSnapshot:
        """Copy the counters of this run."""
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
            offsite_hosts=_top_hosts(self.offsite_hosts),
            proxy_failures=_top_hosts(self.proxy_failures),
            latency_ms={f"p{p}": round(self.latency.percentile(p) * 1000, 2) for p in (50, 90, 99)},
            elapsed=self._clock() - self._started,
            concurrency=self.concurrency,
        )

    def job_snapshot(self, *, domains: bool = True) -> StatsSnapshot:
        """The counts of the job so far: its earlier runs (`resume`) plus this one, without latencies.

        `domains=False` leaves the per-domain and offsite host counts out (`{}`), which keeps the call cheap
        however many domains a crawl reaches (a job dir saves the counts after every ack).

        Example:
            >>> s = Stats()
            >>> s.resume(StatsSnapshot(responses=10, status={"200": 10}, elapsed=4.0, runs=2))
            >>> s.response("example.com", 200, 512, 0.05)
            >>> job = s.job_snapshot()
            >>> job.responses, job.status, job.runs, job.elapsed >= 4.0, s.snapshot().responses
            (11, {'200': 11}, 3, True, 1)
        """
        e = self._earlier
        status = dict(e.status)
        for code, count in self.status.items():
            status[str(code)] = status.get(str(code), 0) + count
        dropped = dict(e.dropped)
        for reason, count in self.dropped.items():
            dropped[reason] = dropped.get(reason, 0) + count
        return StatsSnapshot(
            requests=e.requests + self.requests,
            responses=e.responses + self.responses,
            items=e.items + self.items,
            retries=e.retries + self.retries,
            dropped=dropped,
            dead_lettered=e.dead_lettered + self.dead_lettered,
            errors=e.errors + self.errors,
            bytes=e.bytes + self.bytes,
            status=dict(sorted(status.items())),
            domains=dict((Counter(e.domains) + self.domains).most_common()) if domains else {},
            offsite_hosts=_top_hosts(Counter(e.offsite_hosts) + self.offsite_hosts) if domains else {},
            proxy_failures=_top_hosts(Counter(e.proxy_failures) + self.proxy_failures),
            elapsed=e.elapsed + self._clock() - self._started,
            runs=e.runs + 1,
            concurrency=self.concurrency,
        )


def _top_hosts(hosts: Counter[str]) -> dict[str, int]:
    """The `_TOP_OFFSITE` most counted hosts (or proxies), most first, the rest summed under `OTHER_HOSTS`."""
    top = [(host, count) for host, count in hosts.most_common(_TOP_OFFSITE + 1) if host != OTHER_HOSTS]
    shown = dict(top[:_TOP_OFFSITE])
    rest = sum(hosts.values()) - sum(shown.values())
    if rest:
        shown[OTHER_HOSTS] = rest
    return shown
