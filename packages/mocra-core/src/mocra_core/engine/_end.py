"""`EndCheck`: decides when a run is over — interrupted, page budget spent, or nothing left anywhere."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Literal

import anyio

from ..topics import run_topics
from ._transient import TRANSIENT
from .generate import all_seeded

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ..coordination import Coordination
    from ..modules import CompiledModule
    from ._activity import ActivityQueue
    from ._budget import PageBudget
    from ._outage import Outage

__all__ = ("ACTIVITY_KEY", "IDLE_POLL", "IDLE_POLL_SHARED", "EndCheck", "StopReason")

logger = logging.getLogger(__name__)

StopReason = Literal["finished", "interrupted", "max_pages", "unavailable", "lost", "stopped"]
IDLE_POLL = 0.01
"""Seconds between two looks at whether a one-process run is over."""
IDLE_POLL_SHARED = 0.1
"""The same for a worker of a shared queue (a look there is a broker round trip per topic)."""
ACTIVITY_KEY = "activity"
"""Coordination counter the workers of a shared queue bump while they work (see `EndCheck.is_idle`)."""


class EndCheck:
    """Watches one run and says when it is over: interrupted, page budget reached, or nothing left to do.

    Args:
        queue: The run's queue (its write counts tell whether the topics were read at one moment).
        coordination: The job's coordination store (seed flags; `ACTIVITY_KEY` on a shared queue).
        shared: Whether other workers share the queue.
        modules: The run's modules by name (which of them must be seeded before the job can end).
        budget: The page budget (`crawl.max_pages`), or None.
        interrupted: Set by `Engine.interrupt` or a signal.
        stopped: Set when an operator stopped the job (`JobControl.stop`): the run ends with `stopped`.
        crons_running: How many cron schedules are still running (the run is not over while any is).
        outage: The run's outage of its shared services: over (`crawl.outage_timeout`) ends the run.
        seeded: Whether every module's seed flag is known set (by `seed_once`). A flag seen set that is
            gone later means the coordination store lost the job's state (a Redis restarted without
            persistence): the run ends with `lost` instead of waiting for a seeding that never comes.
    """

    def __init__(
        self,
        queue: ActivityQueue,
        coordination: Coordination,
        *,
        shared: bool,
        modules: Mapping[str, CompiledModule],
        budget: PageBudget | None,
        interrupted: anyio.Event,
        stopped: anyio.Event | None = None,
        crons_running: Callable[[], int],
        outage: Outage,
        seeded: bool = False,
    ) -> None:
        self._queue = queue
        self._coordination = coordination
        self._shared = shared
        self._modules = modules
        self._topics = run_topics(modules)
        self._budget = budget
        self._interrupted = interrupted
        self._stopped = stopped
        self._crons_running = crons_running
        self._outage = outage
        self._seeded = seeded
        self._lost = False

    async def until_over(self) -> StopReason:
        """Wait until the run is over and return why."""
        budget = self._budget
        # a worker that wrote to the queue since the last look is not idle: ask the broker only when it
        # was quiet for a whole interval (a busy worker costs the broker no `pending` calls)
        interval = IDLE_POLL_SHARED if self._shared else IDLE_POLL
        last: int | None = None
        while True:
            if self._interrupted.is_set():
                logger.info("interrupted: finishing requests in flight")
                return "interrupted"
            if self._stopped is not None and self._stopped.is_set():
                logger.info("stopped by an operator: finishing requests in flight")
                return "stopped"
            if budget is not None and budget.spent:
                logger.info("page budget of %d reached", budget.limit)
                return "max_pages"
            if self._outage.over:
                return "unavailable"
            mark, last = last, self._queue.quiet()
            if mark is not None and mark == last:
                if self._crons_running() == 0 and await self._idle_now():
                    return "finished"
                if self._lost:
                    logger.error(
                        "the job's state is gone from its coordination store: its seed flags were set and "
                        "are not any more (a server restarted without persistence, or the job's keys were "
                        "deleted); stopping"
                    )
                    return "lost"
            elif self._shared:
                with contextlib.suppress(*TRANSIENT):  # a missed bump only delays the others' checks
                    await self._coordination.incr(ACTIVITY_KEY)  # tell the others' idle checks (is_idle)
            await anyio.sleep(interval)

    async def _idle_now(self) -> bool:
        try:
            idle = await self.is_idle()
        except TRANSIENT as exc:  # the broker or store is out of reach: not over, look again later
            self._outage.failed(exc, "checking whether the job is over")
            return False
        self._outage.recovered()  # the queues (and, shared, the coordination store) answered
        return idle

    async def is_idle(self) -> bool:
        """Nothing queued, leased or delayed on any topic of the run (`topics.run_topics`).

        Shared queues are checked twice, 0.2 s apart, once every module was seeded (another worker may
        still be seeding), and only count if no worker was active in between: each active worker bumps
        the job's `ACTIVITY_KEY` counter every `IDLE_POLL_SHARED` seconds, so another worker's message
        moving from one topic to the next while the topics were read one by one does not look like an
        empty job.
        """
        if not self._shared:
            return await self._nothing_pending()
        before = await self._coordination.get(ACTIVITY_KEY)
        if not await self._nothing_pending():
            return False
        if not await all_seeded(self._modules, self._coordination):
            self._lost = self._seeded  # seen seeded once: the flags vanished with the job's state
            return False
        self._seeded = True
        await anyio.sleep(0.2)
        return await self._nothing_pending() and await self._coordination.get(ACTIVITY_KEY) == before

    async def _nothing_pending(self) -> bool:
        """Every topic's `pending` is 0, read while no write of this process ran (see `ActivityQueue`)."""
        mark = self._queue.quiet()
        if mark is None:
            return False
        for topic in self._topics:
            if await self._queue.pending(topic):
                return False
        return self._queue.unchanged(mark)
