"""`JobSample`: what `/metrics` shows of one job, taken (async) before the sync Prometheus collector runs.

`JobView.snapshot()` is async and a Prometheus collector's `collect()` is not, so a scrape takes every job's
sample first (`take_samples`, the snapshots side by side, each within a timeout) and renders them after.
Nothing here runs on the crawl's hot path: the counters are read when someone scrapes.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio

from ._stats import LatencyHistogram

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from ..control import JobSnapshot, JobView
    from ._stats import Stats

__all__ = (
    "LATENCY_BUCKETS",
    "JobSample",
    "PoolCounts",
    "ProxyPools",
    "latency_buckets",
    "take_sample",
    "take_samples",
)

logger = logging.getLogger(__name__)

LATENCY_BUCKETS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    30.0,
    60.0,
)
"""Upper bounds (seconds) of the download latency histogram: prometheus_client's defaults, then 30 and 60."""


class PoolCounts(Protocol):
    """A proxy pool's counts now (`mocra_proxy.PoolStats` is one)."""

    @property
    def proxies(self) -> int:
        """Proxies in the pool (not evicted, not expired)."""
        ...

    @property
    def cooling(self) -> int:
        """Proxies cooling down after a ban or a connect error."""
        ...

    @property
    def limited(self) -> int:
        """Proxies not cooling but at a rate or concurrency limit."""
        ...

    @property
    def leased(self) -> int:
        """Leases held now."""
        ...

    @property
    def evicted(self) -> int:
        """Proxies evicted since the pool started."""
        ...

    @property
    def expired(self) -> int:
        """Proxies dropped because their expiry passed."""
        ...

    @property
    def waits(self) -> int:
        """Times a lease had to wait for a proxy."""
        ...


@runtime_checkable
class ProxyPools(Protocol):
    """A `JobView` whose run has proxy pools (`[proxy.pool]`, `[proxy.pools.<name>]`) shows their health."""

    def proxy_pools(self) -> Mapping[str, PoolCounts]:
        """Each pool's counts now, by pool name (`"pool"` is the default pool)."""
        ...


@dataclass(frozen=True, slots=True)
class JobSample:
    """One job as `/metrics` renders it.

    Attributes:
        job: The job's name.
        snapshot: The job now; `None` when it could not be read (its coordination store out of reach).
        latency: The answering worker's download latencies: (upper bound in seconds, cumulative count),
            `math.inf` last.
        latency_sum: The sum of those latencies in seconds (estimated from their buckets, within ~2.3 %).
        in_flight: Downloads running now on the answering worker, when its `Stats` counts them.
        pools: The run's proxy pools by name, when it has any.
        errors_by_kind: The answering worker's failures of code by kind (`parse`, `sink`, ...).
    """

    job: str
    snapshot: JobSnapshot | None
    latency: tuple[tuple[float, int], ...] = ((math.inf, 0),)
    latency_sum: float = 0.0
    in_flight: int | None = None
    pools: Mapping[str, PoolCounts] = field(default_factory=dict)
    errors_by_kind: Mapping[str, int] = field(default_factory=dict)


def latency_buckets(
    histogram: LatencyHistogram, bounds: Sequence[float] = LATENCY_BUCKETS
) -> tuple[tuple[tuple[float, int], ...], float]:
    """`histogram` as cumulative Prometheus buckets over `bounds` (then `+Inf`), and its estimated sum.

    Each of the histogram's log-spaced buckets (≈ 4.5 % wide) goes to the first bound at or above its
    middle, the value `LatencyHistogram.percentile` reports for it, so a latency is off by at most half
    a bucket; the sum adds those middles.

    Example:
        >>> h = LatencyHistogram()
        >>> for seconds in (0.02, 0.02, 0.3, 12.0):
        ...     h.record(seconds)
        >>> buckets, total = latency_buckets(h, (0.05, 1.0, 10.0))
        >>> buckets
        ((0.05, 2), (1.0, 3), (10.0, 3), (inf, 4))
        >>> abs(total - 12.34) / 12.34 < 0.03
        True
    """
    counts = [0] * (len(bounds) + 1)
    total = 0.0
    for index, count in histogram.buckets.items():
        middle = _middle(index)
        total += middle * count
        slot = next((i for i, bound in enumerate(bounds) if middle <= bound), len(bounds))
        counts[slot] += count
    cumulative: list[tuple[float, int]] = []
    seen = 0
    for bound, count in zip((*bounds, math.inf), counts, strict=True):
        seen += count
        cumulative.append((bound, seen))
    return tuple(cumulative), total


def _middle(index: int) -> float:
    """The latency (seconds) a `LatencyHistogram` bucket stands for, as its `percentile` reports it."""
    smallest, per_doubling = LatencyHistogram._MIN, LatencyHistogram._PER_DOUBLING
    return smallest * 2 ** ((index - 0.5) / per_doubling) if index else smallest


async def take_sample(view: JobView, *, job_timeout: float = 5.0) -> JobSample:
    """Read `view` for `/metrics`: its snapshot (within `job_timeout` seconds) and its live run counters.

    A snapshot that fails or takes too long gives `snapshot=None` (the job shows `mocra_job_up 0`), so
    one job whose store is out of reach does not fail the scrape.
    """
    stats = view.stats
    latency, latency_sum = latency_buckets(stats.latency)
    pools = _pools(view)
    snapshot: JobSnapshot | None = None
    try:
        with anyio.fail_after(job_timeout):
            snapshot = await view.snapshot()
    except Exception as exc:  # the scrape goes on: this job shows as down
        logger.warning("metrics: job %s could not be read: %s: %s", view.job, type(exc).__name__, exc)
    return JobSample(
        job=view.job,
        snapshot=snapshot,
        latency=latency,
        latency_sum=latency_sum,
        in_flight=_in_flight(stats),
        pools=pools,
        errors_by_kind=dict(getattr(stats, "errors_by_kind", {})),
    )


async def take_samples(views: Iterable[JobView], *, job_timeout: float = 5.0) -> list[JobSample]:
    """`take_sample` of every view, side by side, in the order given."""
    todo = list(views)
    samples: list[JobSample | None] = [None] * len(todo)

    async def one(i: int, view: JobView) -> None:
        samples[i] = await take_sample(view, job_timeout=job_timeout)

    async with anyio.create_task_group() as group:
        for i, view in enumerate(todo):
            group.start_soon(one, i, view)
    return [sample for sample in samples if sample is not None]


def _pools(view: JobView) -> Mapping[str, PoolCounts]:
    """The view's proxy pools' counts, or none when its run has no pool (or they cannot be read)."""
    if not isinstance(view, ProxyPools):
        return {}
    try:
        return dict(view.proxy_pools())
    except Exception as exc:  # a pool's counts are a nicety of the scrape, not worth failing it
        logger.warning("metrics: job %s: proxy pools unreadable: %s: %s", view.job, type(exc).__name__, exc)
        return {}


def _in_flight(stats: Stats) -> int | None:
    """Downloads running now, when this `Stats` counts them (an `in_flight` attribute), else `None`."""
    value = getattr(stats, "in_flight", None)
    return value if isinstance(value, int) else None
