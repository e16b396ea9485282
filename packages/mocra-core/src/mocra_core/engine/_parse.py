"""`ParseStage`: response queue → the node's parse callback → items to sinks, follow-ups to the frontier."""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Any

import anyio

from ..modules import Ctx
from ._items import SinkWriteFailed

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..http import Response
    from ..middleware import MiddlewareChain
    from ..modules import Module
    from ..observe import Stats
    from ..queue import Delivery, QueueBackend
    from ._frontier import Frontier
    from ._items import ItemWriter

__all__ = ("ParseStage",)

logger = logging.getLogger(__name__)

_RESPONSES = "response"


class ParseStage:
    """Runs parse workers.

    A response is acknowledged only after its items are written and its follow-ups are in the request
    queue; a callback that raises sends the response to the dead-letter queue with the traceback, and the
    crawl goes on.
    """

    def __init__(
        self,
        queue: QueueBackend,
        modules: Mapping[str, Module],
        writers: Mapping[str, ItemWriter],
        frontier: Frontier,
        chain: MiddlewareChain,
        stats: Stats,
    ) -> None:
        self._queue = queue
        self._modules = modules
        self._writers = writers
        self._frontier = frontier
        self._chain = chain
        self._stats = stats
        self._stopping = False

    def stop(self) -> None:
        """Return once the response queue is empty (call after the download stage has stopped)."""
        self._stopping = True

    async def run(self, workers: int) -> None:
        """Run the workers until `stop` is called and no response is left."""
        async with anyio.create_task_group() as tg:
            for index in range(workers):
                tg.start_soon(self._worker, name=f"parse-{index}")

    async def _worker(self) -> None:
        while True:
            deliveries = await self._queue.consume(_RESPONSES, group="parse", max_messages=1, wait=0.2)
            if not deliveries and self._stopping:
                return
            for delivery in deliveries:
                await self._handle(delivery)

    async def _handle(self, delivery: Delivery) -> None:
        response: Response = delivery.payload  # type: ignore[assignment]
        node_id = response.request.node or ""
        module_name = node_id.partition("/")[0]
        ctx: Ctx[Any] = Ctx(response)
        try:
            module = self._modules[module_name]
            await module.node(node_id).parse(response, ctx)
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(5, shield=True):
                await self._queue.nack(delivery, delay=0, reason="worker cancelled")
            raise
        except Exception as exc:  # the user's callback failed: record it, keep crawling
            self._stats.errors += 1
            self._stats.dead_lettered += 1
            logger.error(
                "parse of %s failed in %s: %s",
                response.url,
                node_id,
                exc,
                exc_info=exc,
                extra={"mocra_module": module_name, "url": response.url},
            )
            await self._queue.dead_letter(delivery, reason="".join(traceback.format_exception(exc)).strip())
            return
        if ctx.invalid:
            self._stats.drop("invalid_url", len(ctx.invalid))
            for problem in ctx.invalid:
                logger.debug("not following from %s: %s", response.url, problem)
        items = ctx.items
        if items and self._chain.has_data:
            items, dropped = await self._chain.process_items(items, response)
            if dropped:
                self._stats.drop("item_middleware", dropped)
        await self._frontier.submit(ctx.requests)
        if items:
            try:
                await self._writers[module_name].submit(items)
            except SinkWriteFailed as exc:
                self._stats.dead_lettered += 1
                await self._queue.dead_letter(delivery, reason=str(exc))
                return
        await self._queue.ack([delivery])
