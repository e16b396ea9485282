"""`JobRegistry`: the jobs of this process, running or finished here, as the admin API finds them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._protocol import JobView

__all__ = ("KEPT_FINISHED", "JobRegistry")

KEPT_FINISHED = 20
"""Finished jobs a registry keeps (the oldest go first)."""


class JobRegistry:
    """The `JobView`s of this process by job name; an engine adds its own when its run is wired.

    A job run again replaces its older view. A view whose job has ended (`finished` says so) stays
    readable; past `keep` of those, the oldest is dropped.

    Args:
        keep: How many finished jobs to keep.

    Example:
        >>> class View:
        ...     job = "books"
        >>> registry = JobRegistry()
        >>> registry.add(View())  # type: ignore[arg-type]
        >>> [view.job for view in registry.views()], registry.get("books") is not None, registry.get("x")
        (['books'], True, None)
    """

    def __init__(self, *, keep: int = KEPT_FINISHED) -> None:
        self._keep = keep
        self._views: dict[str, JobView] = {}
        self._finished: list[str] = []

    def add(self, view: JobView) -> None:
        """Register `view` under its job's name (replacing an earlier run's)."""
        self._views.pop(view.job, None)
        if view.job in self._finished:
            self._finished.remove(view.job)
        self._views[view.job] = view

    def finished(self, view: JobView) -> None:
        """`view`'s run ended: keep it readable, among the last `keep` finished jobs."""
        if self._views.get(view.job) is not view:
            return
        self._finished.append(view.job)
        while len(self._finished) > self._keep:
            self._views.pop(self._finished.pop(0), None)

    def remove(self, job: str) -> None:
        """Forget `job` (nothing when unknown)."""
        self._views.pop(job, None)
        if job in self._finished:
            self._finished.remove(job)

    def get(self, job: str) -> JobView | None:
        """The view of `job`, or None."""
        return self._views.get(job)

    def views(self) -> list[JobView]:
        """Every job's view, in the order they were added."""
        return list(self._views.values())

    def __len__(self) -> int:
        return len(self._views)
