"""`/metrics`'s body: the jobs' metrics rendered by `mocra_core.observe`, in Prometheus's text format."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..control import JobView

__all__ = ("render_metrics",)


async def render_metrics(views: Sequence[JobView]) -> tuple[bytes, str]:
    """The body and content type of `/metrics` for `views` (every job of the node, read now)."""
    try:
        from ..observe._metrics import METRICS_CONTENT_TYPE, scrape
    except ImportError:  # until the jobs' collector lands: the process's own metrics
        from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    return await scrape(views), METRICS_CONTENT_TYPE
