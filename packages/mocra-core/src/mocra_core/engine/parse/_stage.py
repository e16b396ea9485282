"""`ParseStage`: each module's response queue → the node's parse → items to sinks, follow-ups onward."""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Any

import anyio

from ...http import RoutedRecord
from ...modules import Ctx
from ...queue._fence import Fence
from ...topics import is_response_topic
from .._transient import TRANSIENT, retry_later
from ._acker import Acker
from ._items import SinkWriteFailed
from ._lanes import ParseLanes

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ...http import Response
    from ...middleware import MiddlewareChain
    from ...modules import CompiledModule
    from ...observe import Stats
    from ...queue import Delivery, QueueBackend
    from .._admission import Admission
    from .._fan_in import FanIn
    from .._module_table import ModuleTable
    from .._outage import Outage
    from .._router import TaskRouter
    from .._runbook import RunBook
    from .._unparsed import UnparsedMarks
    from ._items import ItemWriter

__all__ = ("ParseStage",)

logger = logging.getLogger(__name__)


class ParseStage:
    """Runs parse workers: `parse_workers` per module, each module's fed from its own response topic.

    A module's slow parse or sink holds only its own lane (see `ParseLanes`); `writers` holds each
    module's sink writer by module name, and names the lanes.

    Items are written under the claim of the download that made the response (`Response.fence`, set on
    a response queued on its topic), else of the delivery parsed (a response handed over directly is
    its request's delivery): a response of a download whose lease had expired loses to the newer one's.
    The parse claims of one queued response share its download's fence (their items come from the same
    bytes), so between them the last write wins.

    A response is acknowledged only after its items are written and its follow-ups and tasks are queued,
    in batches by an `Acker` while the worker goes on with the next response;
    one the download stage handed over directly (`hand`) is the request's delivery with the response as
    its payload, so acknowledging it acknowledges the request (and a failure dead-letters the request);
    a callback that raises sends the response to the dead-letter queue with the traceback, and the crawl
    goes on. When a module node's parse yields nothing to continue with, the advance gate may start its
    successors.

    Args:
        queue: The queue responses come from.
        modules: The modules this worker runs.
        runbook: The runs' stop signals and gates.
        admission: Queues the follow-up requests of a parse.
        router: Queues the tasks a parse routed to (and the advance gate's).
        fan_in: Told of each finished response.
        writers: Each module's sink writer, by module name (names the lanes).
        chain: The middlewares (item middleware).
        stats: The run's counters.
        unparsed: With direct parse, whether a redelivered request reached parse before.
        outage: The broker outage tracker, if any.
    """

    def __init__(
        self,
        queue: QueueBackend,
        modules: ModuleTable,
        runbook: RunBook,
        admission: Admission,
        router: TaskRouter,
        fan_in: FanIn,
        writers: Mapping[str, ItemWriter],
        chain: MiddlewareChain,
        stats: Stats,
        unparsed: UnparsedMarks | None = None,
        outage: Outage | None = None,
    ) -> None:
        self._queue = queue
        self._modules = modules
        self._runbook = runbook
        self._admission = admission
        self._router = router
        self._fan_in = fan_in
        self._writers = writers
        self._chain = chain
        self._stats = stats
        self._unparsed = unparsed  # with direct parse: whether a redelivered request reached parse before
        self._stopping = False
        self._outage = outage
        self._lanes = ParseLanes(queue, writers, lambda: self._stopping, outage=outage)
        self._acker: Acker | None = None  # while running
        self.parsed = 0  # responses parsed whose items were written and follow-ups queued, in this run

    def stop(self) -> None:
        """Return once the response queues are empty (call after the download stage has stopped)."""
        self._stopping = True
        self._lanes.stop()

    def halt(self) -> None:
        """Take no new responses, now (no drain); workers finish the one they hold."""
        self._stopping = True
        self._lanes.halt()

    async def hand(self, delivery: Delivery) -> bool:
        """Have `delivery` (its payload a `Response`) parsed by an idle worker of its module's lane.

        Never waits: False (nothing done) when no worker of the lane is idle, or once stopped; the
        caller then queues the response on the module's topic.
        """
        node: str | None = delivery.payload.routing.node  # type: ignore[attr-defined]
        return await self._lanes.hand((node or "").partition("/")[0], delivery)

    async def run(self, workers: int) -> None:
        """Run `workers` workers per module until `stop` is called and no response is left, then ack."""
        limit = workers * (len(self._lanes) + 1)  # every lane's workers, the legacy one's too
        self._acker = acker = Acker(self._queue, limit=limit, after=self._acked, outage=self._outage)
        async with anyio.create_task_group() as tg:
            tg.start_soon(acker.run, name="parse-acker")
            try:
                await self._lanes.run(workers, self._handle)
            finally:
                acker.close()

    async def _acked(self, deliveries: Sequence[Delivery]) -> None:
        if self._unparsed is not None:
            for delivery in deliveries:
                if _handed_over(delivery):
                    await self._unparsed.forget(delivery)
                elif (fence := delivery.payload.fence) is not None:  # type: ignore[attr-defined]
                    await self._unparsed.forget_request(fence)

    async def _handle(self, delivery: Delivery) -> None:
        response: Response = delivery.payload  # type: ignore[assignment]
        routing = response.routing
        module = self._modules.find(routing.node, routing.generation)
        if module is None:
            return await self._modules.foreign(delivery, routing.node, routing.generation)
        node = (routing.node or "").rpartition("/")[2]
        if await self._runbook.is_stopped(routing.run):
            self._stats.drop("stopped")
            await self._fan_in.unit_done(module, routing.run, routing.account, node, delivery)
            await self._queue.ack([delivery])
            return
        ctx: Ctx[Any] = Ctx(response, carry_meta=module.carry_meta)
        try:
            await module.node(node).parse(response, ctx)
            items = await self._items(ctx, response)
            await self._continue(module, node, ctx, redelivered=await self._redelivered(delivery))
            if items:
                await self._writers[module.name].submit(items, response.fence or Fence.of(delivery))
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(5, shield=True):
                await self._queue.nack(delivery, delay=0, reason="worker cancelled")
            raise
        except SinkWriteFailed as exc:
            self._stats.error("sink")
            await self._dead_letter(delivery, module, node, str(exc))
            return
        except TRANSIENT as exc:  # the seen set, coordination store or broker is out of reach for now
            await retry_later(self._queue, delivery, exc, self._stats, self._outage)
            return
        except Exception as exc:  # the user's callback (or routing) failed: record it, keep crawling
            self._stats.error("parse")
            logger.error(
                "parse of %s failed in %s: %s", response.url, routing.node, exc, exc_info=exc,
                extra={"mocra_module": module.name, "url": response.url},
            )  # fmt: skip
            await self._dead_letter(delivery, module, node, "".join(traceback.format_exception(exc)).strip())
            return
        await self._fan_in.unit_done(module, routing.run, routing.account, node, delivery)
        self.parsed += 1
        assert self._acker is not None
        await self._acker.ack(delivery)

    async def _redelivered(self, delivery: Delivery) -> bool:
        """Whether an earlier attempt may have parsed this response (its follow-ups may be lost).

        With direct parse, a queued response on its first attempt may still be one: its request was
        downloaded again after an earlier attempt reached a parse worker directly (which died, or failed
        to queue the follow-ups), and no worker was idle for the new response.
        """
        if self._unparsed is None:
            return delivery.attempt > 1
        if _handed_over(delivery):
            return await self._unparsed.redelivered(delivery)
        if delivery.attempt > 1:
            return True
        fence: Fence | None = delivery.payload.fence  # type: ignore[attr-defined]
        return fence is not None and await self._unparsed.request_redelivered(fence)

    async def _items(self, ctx: Ctx[Any], response: Response) -> list[Any]:
        if ctx.ruled_out:
            self._stats.drop("rules", ctx.ruled_out)
        if ctx.invalid:
            self._stats.drop("invalid_url", len(ctx.invalid))
            for problem in ctx.invalid:
                logger.debug("not following from %s: %s", response.url, problem)
        items = ctx.items
        if items and self._chain.has_data:
            items, dropped = await self._chain.process_items(items, response)
            if dropped:
                self._stats.drop("item_middleware", dropped)
        return items

    async def _continue(self, module: CompiledModule, node: str, ctx: Ctx[Any], *, redelivered: bool) -> None:
        response = ctx.response
        routing = response.routing
        await self._admission.admit(
            module, ctx.requests, ctx.routing, origin=response.url, redelivered=redelivered
        )
        has_successors = module.graph.successors(node) or ctx.routes
        origin = RoutedRecord.join(response.request, routing) if has_successors else None
        if ctx.routes:
            await self._router.route(
                module, node, ctx.routes, run=routing.run, account=routing.account, origin=origin
            )
        elif not ctx.requests and module.successors(node):
            await self._router.advance(
                module, node, ctx.meta, run=routing.run, account=routing.account, origin=origin
            )
        if ctx.stop_reason is not None:
            await self._runbook.stop(routing.run, ctx.stop_reason)
        for message in ctx.errors:
            self._stats.error("reported")
            logger.warning("%s: %s (%s)", routing.node, message, response.url)

    async def _dead_letter(self, delivery: Delivery, module: CompiledModule, node: str, reason: str) -> None:
        routing = delivery.payload.routing  # type: ignore[attr-defined]
        await self._fan_in.unit_done(module, routing.run, routing.account, node, delivery)
        await self._queue.dead_letter(delivery, reason=reason)


def _handed_over(delivery: Delivery) -> bool:
    """Whether `delivery` is a request the download stage handed over directly (its payload the response)."""
    return not is_response_topic(delivery.topic)
