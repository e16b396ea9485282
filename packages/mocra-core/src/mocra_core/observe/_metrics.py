"""`/metrics`: the jobs of this process as Prometheus text (the `dashboard` extra: prometheus-client).

A scrape costs the crawl nothing between scrapes: `scrape` reads each job when asked (its `JobView`
snapshot, side by side, then its live latency histogram) and renders the families of
`mocra_core.observe._metric_families` (names, labels and what each counts are documented there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from ._metric_families import families
from ._metric_sample import take_samples

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from prometheus_client.core import Metric

    from ..control import JobView
    from ._metric_sample import JobSample

__all__ = ("METRICS_CONTENT_TYPE", "MocraCollector", "metrics_registry", "scrape")

METRICS_CONTENT_TYPE: str = CONTENT_TYPE_LATEST
"""The content type of `scrape`'s bytes (prometheus_client's text format)."""


class MocraCollector:
    """A Prometheus collector of the jobs' samples that `samples` returns when collected.

    `collect` is synchronous, as prometheus_client calls it: give it samples taken before
    (`take_samples`, async), as `scrape` does.

    Example:
        >>> from prometheus_client import CollectorRegistry, generate_latest
        >>> from mocra_core.control import JobSnapshot
        >>> from mocra_core.observe._metric_sample import JobSample
        >>> registry = CollectorRegistry()
        >>> shop = JobSample("shop", JobSnapshot(job="shop", state="ready"))
        >>> registry.register(MocraCollector(lambda: [shop]))
        >>> b'mocra_job_up{mocra_job="shop"} 1.0' in generate_latest(registry)
        True
    """

    def __init__(self, samples: Callable[[], Iterable[JobSample]]) -> None:
        self._samples = samples

    def collect(self) -> Iterable[Metric]:
        """The metric families of the samples now."""
        return families(self._samples())


def metrics_registry(
    samples: Callable[[], Iterable[JobSample]], *, process: bool = True
) -> CollectorRegistry:
    """A registry of the jobs' metrics, and of this process (CPU, memory, GC, Python) when `process`.

    Example:
        >>> from prometheus_client import generate_latest
        >>> b"process_cpu_seconds_total" in generate_latest(metrics_registry(list))
        True
    """
    registry = CollectorRegistry()
    registry.register(MocraCollector(samples))
    if process:
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
    return registry


async def scrape(views: Iterable[JobView], *, job_timeout: float = 5.0, process: bool = True) -> bytes:
    """The `/metrics` body (content type `METRICS_CONTENT_TYPE`) of `views`, read now.

    Args:
        views: The jobs to show (a `JobRegistry`'s `views()`).
        job_timeout: Seconds each job's snapshot may take; a job not read in time shows `mocra_job_up 0`.
        process: Add this process's CPU, memory, GC and Python metrics.

    Example:
        >>> import anyio
        >>> anyio.run(scrape, [])[:7]
        b'# HELP '
    """
    samples = await take_samples(views, job_timeout=job_timeout)
    return generate_latest(metrics_registry(lambda: samples, process=process))
