"""`GenerateStage`: task queue → the node's `generate` → requests into the frontier."""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING

import anyio

from ..modules import Seeds, Task

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..modules import Module
    from ..observe import Stats
    from ..queue import Delivery, QueueBackend
    from ._frontier import Frontier

__all__ = ("TASKS", "GenerateStage")

logger = logging.getLogger(__name__)

TASKS = "task"


class GenerateStage:
    """Turns tasks into requests. A task whose `generate` raises goes to the dead-letter queue."""

    def __init__(
        self, queue: QueueBackend, modules: Mapping[str, Module], frontier: Frontier, stats: Stats
    ) -> None:
        self._queue = queue
        self._modules = modules
        self._frontier = frontier
        self._stats = stats
        self._stopping = False

    def stop(self) -> None:
        """Take no new tasks."""
        self._stopping = True

    async def run(self) -> None:
        """Handle tasks until `stop` is called."""
        while not self._stopping:
            for delivery in await self._queue.consume(TASKS, group="generate", max_messages=16, wait=0.2):
                await self._handle(delivery)

    async def _handle(self, delivery: Delivery) -> None:
        task = delivery.payload
        assert isinstance(task, Task)
        node_id = task.node if task.node == task.module else f"{task.module}/{task.node}"
        seeds = Seeds(node_id)
        try:
            await self._modules[task.module].node(node_id).generate(task, seeds)
            await self._frontier.submit(seeds.requests)
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(5, shield=True):
                await self._queue.nack(delivery, delay=0, reason="worker cancelled")
            raise
        except Exception as exc:
            self._stats.errors += 1
            self._stats.dead_lettered += 1
            logger.error("generate of %s/%s failed: %s", task.module, task.node, exc, exc_info=exc)
            await self._queue.dead_letter(delivery, reason="".join(traceback.format_exception(exc)).strip())
            return
        await self._queue.ack([delivery])
