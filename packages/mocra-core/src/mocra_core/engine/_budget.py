"""`PageBudget`: how many downloads a job may still start (`crawl.max_pages`), in one process or job-wide.

A download takes one page from the budget just before it starts, so no more than the budget start, however
many workers run at once. `LocalBudget` counts in the process (a one-process run, resumed from a job
directory with its earlier downloads counted). `SharedBudget` is the budget of a job whose workers share
a queue: each worker claims pages in small blocks from a counter in the job's coordination store, so the
job as a whole starts at most `max_pages` downloads, one round trip per block rather than per page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import anyio

if TYPE_CHECKING:
    from ..coordination import Coordination

__all__ = ("BUDGET_KEY", "LocalBudget", "PageBudget", "SharedBudget", "page_budget")

BUDGET_KEY = "budget/pages"
"""Coordination counter of the pages the workers of a job have claimed from its budget."""

_BLOCK = 32  # most pages a worker claims at once: at most this many are lost with a worker that dies


class PageBudget(Protocol):
    """The pages a run may still download."""

    @property
    def limit(self) -> int:
        """The budget: downloads the job may start in all."""
        ...

    @property
    def spent(self) -> bool:
        """True once a `take` found nothing left (the run then stops with `reason = "max_pages"`)."""
        ...

    async def take(self) -> bool:
        """Take one page for a download about to start; False (nothing taken) once the budget is spent."""
        ...


class _Budget:
    """What both budgets have: their limit, and whether a `take` found nothing left."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._spent = False

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def spent(self) -> bool:
        return self._spent


class LocalBudget(_Budget):
    """A budget counted in this process.

    Args:
        limit: Downloads the run may start.
        used: Downloads started before (a run resumed from a job directory).

    Example:
        >>> import anyio
        >>> budget = LocalBudget(2)
        >>> [anyio.run(budget.take) for _ in range(3)], budget.spent
        ([True, True, False], True)
    """

    def __init__(self, limit: int, used: int = 0) -> None:
        super().__init__(limit)
        self._used = used
        self._spent = used >= limit

    async def take(self) -> bool:
        if self._used >= self._limit:
            self._spent = True
            return False
        self._used += 1
        return True


class SharedBudget(_Budget):
    """The budget of a job shared by its workers, kept in the job's coordination store (`BUDGET_KEY`).

    A worker claims up to 32 pages at a time (fewer when the budget is small, so that every worker gets
    its share); a claim that would pass the budget gets what is left, so the counter never passes it.
    Pages a worker claimed and did not use are not handed back: the job starts at most `limit` downloads
    (fewer if a worker dies holding a block). The counter outlives the run, as the job's queues do: the
    job's next run goes on from what is left, and a larger `max_pages` lets it go further.

    Args:
        limit: Downloads the job may start, over all its workers and runs.
        coordination: The job's coordination store.

    Example:
        >>> import anyio
        >>> from mocra_core.coordination import LocalCoordination
        >>> async def main() -> tuple[list[bool], bool]:
        ...     async with LocalCoordination() as store:
        ...         first, second = SharedBudget(3, store), SharedBudget(3, store)
        ...         taken = [await first.take(), await second.take(), await first.take(), await second.take()]
        ...         return taken, second.spent
        >>> anyio.run(main)
        ([True, True, True, False], True)
    """

    def __init__(self, limit: int, coordination: Coordination) -> None:
        super().__init__(limit)
        self._coordination = coordination
        self._block = max(1, min(_BLOCK, limit // 64))
        self._left = 0  # pages claimed and not used yet
        self._exhausted = False  # the last claim got less than it asked for: nothing is left job-wide
        self._lock = anyio.Lock()

    async def take(self) -> bool:
        while self._left == 0:
            if self._exhausted:
                self._spent = True
                return False
            async with self._lock:
                if self._left == 0 and not self._exhausted:
                    await self._claim()
        self._left -= 1
        return True

    async def _claim(self) -> None:
        while True:  # compare-and-set: the counter never passes the budget (a larger one goes on from it)
            current = await self._coordination.get(BUDGET_KEY)
            claimed = int(current) if current else 0
            granted = min(self._block, self._limit - claimed)
            if granted <= 0:
                self._exhausted = True
                return
            if await self._coordination.compare_and_set(BUDGET_KEY, current, str(claimed + granted).encode()):
                self._left += granted
                self._exhausted = granted < self._block
                return


def page_budget(
    limit: int | None, coordination: Coordination, *, shared: bool, used: int = 0
) -> PageBudget | None:
    """The budget of a run: none without `limit`, job-wide when workers share the job, else this process's.

    `used` counts the downloads of earlier runs of a one-process job (resumed from its job directory).

    Example:
        >>> from mocra_core.coordination import LocalCoordination
        >>> type(page_budget(10, LocalCoordination(), shared=False, used=3)).__name__
        'LocalBudget'
    """
    if limit is None:
        return None
    if shared:
        return SharedBudget(limit, coordination)
    return LocalBudget(limit, used)
