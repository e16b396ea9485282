"""`RunRecorder`: a record per run this worker begins, in a `RunLog` (a store), and how it ended."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ..modules import CompiledModule, Task
    from ..observe import Stats
    from ._protocol import RunLog

__all__ = ("RunRecorder", "run_status")

logger = logging.getLogger(__name__)

_STATUS = {
    "finished": "succeeded",
    "max_pages": "succeeded",
    "interrupted": "cancelled",
    "stopped": "cancelled",
}


def run_status(reason: str) -> str:
    """The run record's status of a crawl that ended for `reason` (`CrawlResult.reason`).

    Example:
        >>> run_status("finished"), run_status("interrupted"), run_status("unavailable")
        ('succeeded', 'cancelled', 'failed')
    """
    return _STATUS.get(reason, "failed")


class RunRecorder:
    """Writes `run_started` for each run this worker queues, and `run_finished` for them at the end.

    A record's id is `<job>/<run>/<start time>`, its account and platform the store row's. A record that
    cannot be written (the store went away) is logged, and the crawl goes on.

    Args:
        log: Where the records go.
        modules: The run's modules (their starts tell each run's account and platform).
        job: The job's name.
        worker: This worker's name.
    """

    def __init__(self, log: RunLog, modules: Mapping[str, CompiledModule], *, job: str, worker: str) -> None:
        self._log = log
        self._job = job
        self._worker = worker
        self._stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        self._tenants = {
            (module.name, start.account): (start.tenant, start.platform)
            for module in modules.values()
            for start in (*module.starts, *(s for e in module.schedules for s in e.starts))
        }
        self._started: dict[str | None, str] = {}

    async def started(self, tasks: Sequence[Task]) -> None:
        """Record the start of each task's run."""
        for task in tasks:
            record = f"{self._job}/{task.run}/{self._stamp}"
            tenant, platform = self._tenants.get((task.module, task.account), (task.account, None))
            try:
                await self._log.run_started(
                    record, account=tenant, platform=platform, module=task.module, worker=self._worker
                )
            except Exception as exc:  # the history is not worth the crawl
                logger.warning("run record %s not written: %s", record, f"{type(exc).__name__}: {exc}")
                continue
            self._started[task.run] = record

    async def finished(self, reason: str, stats: Stats, error: str | None = None) -> None:
        """Record the end of every run started here: the status, the run's pages and the crawl's counts."""
        crawl = {
            "responses": stats.responses,
            "items": stats.items,
            "errors": stats.errors,
            "dead_lettered": stats.dead_lettered,
            "elapsed": round(stats.elapsed, 3),
        }
        status = run_status(reason)
        for run, record in self._started.items():
            pages = stats.pages_by_run.get(run, 0) if stats.pages_by_run is not None else None
            summary = {"pages": pages, "reason": reason, "crawl": crawl}
            try:
                await self._log.run_finished(record, status=status, stats=summary, error=error)
            except Exception as exc:
                logger.warning("run record %s not finished: %s", record, f"{type(exc).__name__}: {exc}")
