"""`/metrics`'s body: the jobs' metrics rendered by `mocra_core.observe`, in Prometheus's text format."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..observe._metrics import METRICS_CONTENT_TYPE, scrape

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..control import JobView

__all__ = ("render_metrics",)


async def render_metrics(views: Sequence[JobView]) -> tuple[bytes, str]:
    """The body and content type of `/metrics` for `views` (every job of the node, read now).

    Example:
        >>> import anyio
        >>> body, kind = anyio.run(render_metrics, [])
        >>> kind.startswith("text/plain"), body.startswith(b"# HELP")
        (True, True)
    """
    return await scrape(views), METRICS_CONTENT_TYPE
