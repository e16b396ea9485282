"""`why_nothing_crawled`: tells a run that had work but crawled nothing from one that had nothing to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..observe import StatsSnapshot

__all__ = ("why_nothing_crawled",)

_SHOWN = 5  # rejected start URLs named in the reason


def why_nothing_crawled(stats: StatsSnapshot, *, parsed: int, rejected: Sequence[str]) -> str | None:
    """Why a run parsed no page although it had work, or None.

    Args:
        stats: The run's own counts.
        parsed: Responses the run parsed through to the end.
        rejected: The invalid URLs its seeds had, each with why (`GenerateStage.rejected`).

    Returns:
        `"all N requests were dead-lettered"` when it parsed nothing and dead-lettered something;
        `"every start URL was invalid: …"` when every URL seeded was invalid (nothing else was
        requested or dropped); None when a page was parsed or there was nothing to do (no seeds, a job
        already done).

    Example:
        >>> from mocra_core.observe import StatsSnapshot
        >>> why_nothing_crawled(StatsSnapshot(dropped={"invalid_url": 1}), parsed=0,
        ...                     rejected=["invalid URL 'htp:/x': scheme must be http or https"])
        "every start URL was invalid: invalid URL 'htp:/x': scheme must be http or https"
        >>> why_nothing_crawled(StatsSnapshot(requests=2, dead_lettered=2), parsed=0, rejected=[])
        'all 2 requests were dead-lettered'
        >>> why_nothing_crawled(StatsSnapshot(requests=4, dead_lettered=1), parsed=0, rejected=[])
        'its one request was dead-lettered'
        >>> why_nothing_crawled(StatsSnapshot(requests=3, dead_lettered=2), parsed=1, rejected=[]) is None
        True
    """
    if parsed:
        return None
    if stats.dead_lettered:
        n = stats.dead_lettered
        return f"all {n} requests were dead-lettered" if n > 1 else "its one request was dead-lettered"
    invalid = stats.dropped.get("invalid_url", 0)
    if invalid and not stats.requests and set(stats.dropped) == {"invalid_url"}:
        named = "; ".join(rejected[:_SHOWN])
        more = invalid - min(len(rejected), _SHOWN)
        return f"every start URL was invalid: {named}" + (f"; and {more} more" if more > 0 else "")
    return None
