"""`FanIn`: the ledger of open work per (run, node) that starts a fan-in node once its upstream is done."""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING

from ..http import Response
from ..modules import Task
from ..queue._fence import Fence

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..modules import CompiledModule
    from ..queue import Delivery
    from ._router import TaskRouter
    from ._runbook import RunBook

__all__ = ("FanIn", "open_units", "unit_claim")

logger = logging.getLogger(__name__)


class FanIn:
    """Closes finished units of work and starts the fan-in nodes whose upstream is now done.

    Bookkeeping is done only for modules that have fan-in nodes; a stage reports a finished unit with
    `unit_done` *before* acknowledging it, so counts never dip to zero while work is still on its way.
    Units are opened where work is queued (`open_units`, by `TaskRouter` and `Admission`).
    """

    def __init__(self, runbook: RunBook, router: TaskRouter) -> None:
        self._runbook = runbook
        self._router = router

    async def unit_done(
        self, module: CompiledModule, run: str | None, account: str | None, node: str, delivery: Delivery
    ) -> None:
        """One unit of `node` finished: close it, then start any fan-in node whose upstream is now done.

        The unit is the message of `delivery` (`unit_claim`): closing it again, as a stale claim or a
        redelivery does, changes nothing.
        """
        if not module.fan_in or run is None:
            return
        runbook = self._runbook
        if not await runbook.closed(run, node, unit_claim(delivery)):
            return
        for fan_in in module.fan_in:
            upstream = module.upstream(fan_in)
            if node not in upstream or not await runbook.all_closed(run, upstream - {node}):
                continue
            if await runbook.is_stopped(run) or not await runbook.fire_fan_in_once(run, fan_in):
                continue
            inputs = await runbook.inputs(run, fan_in)
            logger.debug("fan-in %s/%s of run %s fires with %d inputs", module.name, fan_in, run, len(inputs))
            await self._router.publish(
                [
                    Task(module=module.name, node=fan_in, meta=inputs[0] if inputs else {}, run=run,
                         account=account, inputs=inputs)
                ]
            )  # fmt: skip


async def open_units(runbook: RunBook, units: Sequence[tuple[str | None, str | None]]) -> None:
    """Count queued units of work, given as (run, `module/node` or node), as open in their run."""
    counts: Counter[tuple[str, str]] = Counter()
    for run, node_path in units:
        if run is not None and node_path is not None:
            counts[(run, node_path.rpartition("/")[2])] += 1
    for (run, node), count in counts.items():
        await runbook.opened(run, node, count)


def unit_claim(delivery: Delivery) -> str:
    """The unit of work `delivery` closes: its message, or for a queued response the request downloaded.

    Example:
        >>> from mocra_core.http import Request, Response
        >>> from mocra_core.queue import Delivery
        >>> page = Response("https://a.test/", 200, [], b"", Request("https://a.test/"))
        >>> page.fence = Fence("request/7", 2)
        >>> unit_claim(Delivery("3", "response:books", page, None, 0, 1, 0.0))
        'request/7'
        >>> unit_claim(Delivery("7", "request", None, None, 0, 1, 0.0))
        'request/7'
    """
    payload = delivery.payload
    if isinstance(payload, Response) and payload.fence is not None:
        return payload.fence.claim
    return Fence.of(delivery).claim
