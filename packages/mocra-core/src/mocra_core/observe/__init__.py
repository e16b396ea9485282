"""Observability: run statistics."""

from __future__ import annotations

from ._stats import LatencyHistogram, Stats, StatsSnapshot

__all__ = ("LatencyHistogram", "Stats", "StatsSnapshot")
