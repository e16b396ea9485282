"""`GenerateStage`: task queue → the node's `generate` → requests, items and routes."""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Any

import anyio

from ...modules import Task, TaskCtx
from ...topics import TASKS
from .._feeder import Feeder
from .._transient import TRANSIENT, retry_later
from ._sitemaps import SITEMAP_NODE

if TYPE_CHECKING:
    from ..._errors import InvalidURL
    from ...control import Hold
    from ...observe import Stats
    from ...queue import Delivery, QueueBackend
    from .._admission import Admission
    from .._fan_in import FanIn
    from .._module_table import ModuleTable
    from .._outage import Outage
    from .._router import TaskRouter
    from .._runbook import RunBook
    from ..parse import ItemWriter
    from ._sitemaps import SitemapTasks

__all__ = ("GenerateStage",)

logger = logging.getLogger(__name__)

_REJECTED_KEPT = 100  # invalid seeded URLs kept for the run's result
_REJECTED_LOGGED = 10  # ... and logged, per task


class GenerateStage:
    """Turns tasks into requests (and items and routes).

    A URL `generate` seeds that cannot be crawled is left out, logged and counted as dropped
    (`invalid_url`); the first ones are kept in `rejected`. The task's other requests are queued.

    A task whose `generate` raises on a non-entry node re-injects, once per run, the request whose parse
    sent it (the fallback gate); otherwise it goes to the dead-letter queue with the traceback.

    Args:
        queue: The queue tasks come from.
        modules: The modules this worker runs.
        runbook: The runs' stop signals and gates.
        admission: Queues the requests a task produced.
        router: Queues the tasks it routed to.
        fan_in: Told of each finished task.
        writers: Each module's sink writer, by module name.
        stats: The run's counters.
        outage: The broker outage tracker, if any.
        sitemaps: Runs sitemap tasks (node `SITEMAP_NODE`) and queues those a spider's `start` seeded.
        hold: The run's pause gate: while held, no task is leased.
    """

    def __init__(
        self,
        queue: QueueBackend,
        modules: ModuleTable,
        runbook: RunBook,
        admission: Admission,
        router: TaskRouter,
        fan_in: FanIn,
        writers: dict[str, ItemWriter],
        stats: Stats,
        outage: Outage | None = None,
        sitemaps: SitemapTasks | None = None,
        *,
        hold: Hold | None = None,
    ) -> None:
        self._queue = queue
        self._modules = modules
        self._runbook = runbook
        self._admission = admission
        self._router = router
        self._fan_in = fan_in
        self._writers = writers
        self._stats = stats
        self._stopping = False
        self._outage = outage
        self._sitemaps = sitemaps
        self.rejected: list[str] = []  # the first invalid URLs seeded (for the run's result)
        self._feeder = Feeder(queue, TASKS, "generate", lambda: self._stopping, outage=outage, hold=hold)

    def stop(self) -> None:
        """Take no new tasks."""
        self._stopping = True

    def halt(self) -> None:
        """Take no new tasks, now: a lease in progress is cancelled; the task in hand is finished."""
        self._stopping = True
        self._feeder.halt()

    async def run(self) -> None:
        """Handle tasks until `stop` is called."""
        await self._feeder.run(1, self._handle)

    async def _handle(self, delivery: Delivery) -> None:
        task = delivery.payload
        assert isinstance(task, Task)
        module = self._modules.find(task.module, task.generation)
        if module is None:
            return await self._modules.foreign(delivery, task.module, task.generation)
        runbook = self._runbook
        if await runbook.is_stopped(task.run):
            self._stats.drop("stopped")
            await self._fan_in.unit_done(module, task.run, task.account, task.node, delivery)
            await self._queue.ack([delivery])
            return
        if task.node == SITEMAP_NODE and self._sitemaps is not None:
            return await self._sitemaps.handle(delivery, module, task)
        ctx: TaskCtx[Any] = TaskCtx(task, f"{module.name}/{task.node}", inputs=task.inputs)
        try:
            await module.node(task.node).generate(ctx)
            await self._admission.admit(module, ctx.requests, ctx.routing, redelivered=delivery.attempt > 1)
            if ctx.sitemaps and self._sitemaps is not None:
                await self._sitemaps.seed(module, task, ctx.sitemaps)
            await self._router.route(
                module, task.node, ctx.routes, run=task.run, account=task.account, origin=task.origin
            )
            if ctx.items:
                await self._writers[module.name].submit(ctx.items)
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(5, shield=True):
                await self._queue.nack(delivery, delay=0, reason="worker cancelled")
            raise
        except TRANSIENT as exc:  # the seen set, coordination store or broker is out of reach for now
            await retry_later(self._queue, delivery, exc, self._stats, self._outage)
            return
        except Exception as exc:
            await self._failed(delivery, task, exc)
            return
        if ctx.stop_reason is not None:
            await runbook.stop(task.run, ctx.stop_reason)
        for message in ctx.errors:
            self._stats.error("reported")
            logger.warning("%s/%s: %s", task.module, task.node, message)
        if ctx.invalid:
            self._reject(task, ctx.invalid)
        await self._fan_in.unit_done(module, task.run, task.account, task.node, delivery)
        await self._queue.ack([delivery])

    def _reject(self, task: Task, invalid: list[InvalidURL]) -> None:
        """Count and log URLs `generate` seeded that cannot be crawled; the task's other requests go on."""
        self._stats.drop("invalid_url", len(invalid))
        room = _REJECTED_KEPT - len(self.rejected)
        self.rejected.extend(str(problem) for problem in invalid[:room])
        for problem in invalid[:_REJECTED_LOGGED]:
            logger.warning("%s/%s: not seeded: %s", task.module, task.node, problem)
        if len(invalid) > _REJECTED_LOGGED:
            logger.warning(
                "%s/%s: ... and %d more invalid URLs not seeded",
                task.module, task.node, len(invalid) - _REJECTED_LOGGED,
            )  # fmt: skip

    async def _failed(self, delivery: Delivery, task: Task, exc: Exception) -> None:
        module = self._modules.module_of(task.module, task.generation)
        origin = task.origin.split() if task.origin is not None else None
        fallback = (
            task.node != module.entry
            and origin is not None
            and await self._runbook.fallback_once(task.run, f"{task.node}:{origin.request.fingerprint.hex()}")
        )
        if fallback and origin is not None:
            logger.warning(
                "generate of %s/%s failed (%s); re-injecting the request that led here, once: %s",
                task.module, task.node, exc, origin.request.url,
            )  # fmt: skip
            await self._admission.reinject(module, origin)
            self._stats.retries += 1
            await self._fan_in.unit_done(module, task.run, task.account, task.node, delivery)
            await self._queue.ack([delivery])
            return
        self._stats.error("generate")
        logger.error("generate of %s/%s failed: %s", task.module, task.node, exc, exc_info=exc)
        await self._fan_in.unit_done(module, task.run, task.account, task.node, delivery)
        await self._queue.dead_letter(delivery, reason="".join(traceback.format_exception(exc)).strip())
