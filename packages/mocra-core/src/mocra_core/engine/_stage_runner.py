"""`StageRunner`: runs a run's stages in task groups until its `EndCheck` ends it, then drains them.

Draining: the stages take no new work and finish what they hold — downloads in flight complete, responses
already downloaded are parsed, sinks are flushed — within `crawl.drain_timeout` seconds. What is still in
flight then is cancelled and handed back to its queue (`nack`, no delay): nothing is lost, and the job's
next run (or another worker) does it. A second SIGINT/SIGTERM cancels at once, as the timeout does.

The download stage's adaptive pace (`Pace`) samples and rescales beside the stages, through the drain.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from ..observe import StatsSnapshot  # noqa: TC001 - msgspec resolves it at runtime
from ._job_counts import save_every
from ._lifecycle import ENGINE, describe_error
from ._transient import TRANSIENT

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Sequence

    from ..config import CrawlSettings
    from ..control import Hold
    from ..observe import Stats
    from ._activity import ActivityQueue
    from ._end import EndCheck, StopReason
    from ._job_counts import JobCounts
    from ._lifecycle import Lifecycle
    from ._outage import Outage
    from ._wiring import Crons, Stages
    from .parse import ItemWriter

__all__ = ("Background", "Progress", "StageRunner", "report_progress")

logger = logging.getLogger(__name__)


class Progress(msgspec.Struct, kw_only=True):
    """What a progress display shows: the stats so far and the depth of each queue."""

    stats: StatsSnapshot
    queued: dict[str, int]


@dataclasses.dataclass(frozen=True)
class Background:
    """What runs beside the stages: sink writers, cron schedules, the job's counts, a progress report.

    `tasks` run beside them until the drain ends (the job's control watcher, the heartbeat); `hold`,
    the run's pause gate, is released when the run is over (a paused run drains too).
    """

    writers: Sequence[ItemWriter]
    crons: Crons
    counts: JobCounts | None = None
    report: Callable[[], Coroutine[Any, Any, None]] | None = None
    tasks: Sequence[Callable[[], Coroutine[Any, Any, None]]] = ()
    hold: Hold | None = None


class StageRunner:
    """Runs the stages of one run and moves them (and the run's other parts) through their states.

    Args:
        stages: The run's stages.
        lifecycle: Where the states go.
        crawl: `concurrency`, `parse_workers` and `drain_timeout`.
        interrupt: What a first SIGINT/SIGTERM calls (`Engine.interrupt`).
    """

    def __init__(
        self, stages: Stages, lifecycle: Lifecycle, crawl: CrawlSettings, *, interrupt: Callable[[], None]
    ) -> None:
        self._stages = stages
        self._life = lifecycle
        self._crawl = crawl
        self._interrupt = interrupt
        self._forced = False

    async def run(self, end: EndCheck, background: Background, *, handle_signals: bool = False) -> StopReason:
        """Run until `end` says the run is over, drain, and return why it ended."""
        stages, crawl, counts = self._stages, self._crawl, background.counts
        generate, download, parse = stages.generate, stages.download, stages.parse
        reason: StopReason = "interrupted"  # a second signal cancels everything before a reason is known
        self._life.move_all("active", among=("ready",))
        self._life.move(ENGINE, "active")
        async with anyio.create_task_group() as outer:
            for writer in background.writers:
                outer.start_soon(writer.run, name="sink-writer")
            async with anyio.create_task_group() as watchers:
                await watchers.start(stages.pace.run)
                if handle_signals:
                    watchers.start_soon(self._watch_signals, outer.cancel_scope)
                if background.report is not None:
                    watchers.start_soon(background.report)
                if counts is not None:
                    watchers.start_soon(save_every, counts)
                for cron in background.crons.runners:
                    watchers.start_soon(background.crons.run, cron)
                for task in background.tasks:
                    watchers.start_soon(task)
                async with anyio.create_task_group() as parsing:
                    parsing.start_soon(self._stage, "parse", parse.run, crawl.parse_workers)
                    async with anyio.create_task_group() as fetching:
                        fetching.start_soon(self._stage, "generate", generate.run)
                        fetching.start_soon(self._stage, "download", download.run, crawl.concurrency)
                        reason = await end.until_over()
                        if background.hold is not None:
                            background.hold.release()
                        self._drain(reason, outer.cancel_scope)
                        if reason == "finished" and counts is not None:
                            await counts.ended()  # while the job's other workers are still up
                        if reason in ("unavailable", "lost"):  # what is in hand cannot be finished
                            parsing.cancel_scope.cancel(f"shared services {reason}")
                        elif reason == "finished":  # stop leasing at once; what is in hand is finished
                            generate.halt()
                            download.halt()
                        else:
                            generate.stop()
                            download.stop()
                    if reason == "finished":  # (another worker's late responses are its own to parse)
                        parse.halt()
                    else:
                        parse.stop()
                watchers.cancel_scope.cancel("done")
            for writer in background.writers:
                writer.close()
        if said := stages.pace.describe():
            logger.info("%s", said)
        if outer.cancel_scope.cancelled_caught and not self._forced:
            logger.warning(
                "crawl.drain_timeout (%g s) passed: the work still in flight was cancelled and handed back "
                "to its queue (the job's next run, or another worker, does it)",
                crawl.drain_timeout,
            )
        return reason

    def _drain(self, reason: StopReason, scope: anyio.CancelScope) -> None:
        """The run is over: every part drains, within `crawl.drain_timeout` seconds from now."""
        self._life.move(ENGINE, "draining", cause=reason)
        self._life.move_all("draining", among=("active",), cause=reason)
        scope.deadline = min(scope.deadline, anyio.current_time() + self._crawl.drain_timeout)

    async def _stage(self, name: str, run: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run one stage as the part `name`: `stopped` once it returns (or is cancelled), else `failed`."""
        self._life.move(name, "active")
        try:
            await run(*args)
        except Exception as exc:
            self._life.move(name, "failed", cause=f"{name}: {describe_error(exc)}")
            raise
        finally:
            self._life.move(name, "stopped")  # nothing when it failed

    async def _watch_signals(self, force: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            draining = False
            async for signum in signals:
                if draining:
                    logger.warning("second %s: stopping now", signal.Signals(signum).name)
                    self._forced = True
                    force.cancel("forced stop")
                    return
                logger.warning("%s: draining (send it again to stop now)", signal.Signals(signum).name)
                draining = True
                self._interrupt()


async def report_progress(
    queue: ActivityQueue,
    topics: Sequence[str],
    stats: Stats,
    outage: Outage,
    progress: Callable[[Progress], Any],
    interval: float,
) -> None:
    """Call `progress` every `interval` seconds with the stats and the depths of `topics`, until cancelled."""
    queued: dict[str, int] = {}
    while True:
        await anyio.sleep(interval)
        snapshot = stats.snapshot()
        try:
            queued = {topic: await queue.pending(topic) for topic in topics}
        except TRANSIENT as exc:  # the broker is out of reach: report the last counts
            outage.failed(exc, "counting queued messages")
        progress(Progress(stats=snapshot, queued=queued))
