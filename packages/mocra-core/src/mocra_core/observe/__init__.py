"""Observability: run statistics, and `/metrics` (Prometheus text; the `dashboard` extra).

`scrape`, `MocraCollector`, `metrics_registry` and `METRICS_CONTENT_TYPE` are imported on first use: they
need prometheus-client (`mocra[dashboard]`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._metric_sample import JobSample, take_samples
from ._stats import LatencyHistogram, Stats, StatsSnapshot

if TYPE_CHECKING:
    from ._metrics import METRICS_CONTENT_TYPE, MocraCollector, metrics_registry, scrape

__all__ = (
    "METRICS_CONTENT_TYPE",
    "JobSample",
    "LatencyHistogram",
    "MocraCollector",
    "Stats",
    "StatsSnapshot",
    "metrics_registry",
    "scrape",
    "take_samples",
)

_LAZY = {
    name: ("._metrics", "dashboard", "prometheus_client")
    for name in ("METRICS_CONTENT_TYPE", "MocraCollector", "metrics_registry", "scrape")
}
"""The names imported on first use: their module, the extra that provides their driver, and its package."""


def __getattr__(name: str) -> object:
    """Import the `/metrics` names on first use: `mocra_core.observe` works without the dashboard extra."""
    return load_optional(__name__, _LAZY, name)
