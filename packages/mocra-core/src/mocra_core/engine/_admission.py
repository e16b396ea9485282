"""`Admission`: the follow-up requests a node produced, queued through the frontier (depth, dedup)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._fan_in import open_units
from ._frontier import seen_scope

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..http import Request, Routed, Routing
    from ..modules import CompiledModule
    from ._frontier import Frontier
    from ._router import TaskRouter
    from ._runbook import RunBook

__all__ = ("Admission",)


class Admission:
    """Queues requests through the `Frontier`, keyed like their account's tasks, opening fan-in units."""

    def __init__(self, frontier: Frontier, runbook: RunBook, router: TaskRouter) -> None:
        self._frontier = frontier
        self._runbook = runbook
        self._router = router

    async def admit(
        self,
        module: CompiledModule,
        requests: Sequence[Request],
        routing: Routing,
        *,
        redelivered: bool = False,
    ) -> None:
        """Queue requests (depth, dedup), each beside `routing`, and count them as open work of their node.

        `redelivered`: they come from a redelivered task or response, so dedup cannot tell whether they
        reached the queue the first time; they are queued anyway (see `Frontier.submit`).
        """
        if not requests:
            return
        if module.downloader is not None:
            for request in requests:
                if request.downloader is None:
                    request.downloader = module.downloader
        scope = seen_scope(module, routing)
        key = self._router.key(module.name, routing.account)
        admitted = await self._frontier.submit(
            requests, routing, scope=scope, redelivered=redelivered, key=key
        )
        if module.fan_in and admitted:
            await open_units(self._runbook, [(routing.run, routing.node)] * len(admitted))

    async def reinject(self, module: CompiledModule, routed: Routed) -> None:
        """Queue a request again beside its routing, past dedup (the fallback gate)."""
        request, routing = routed
        request.dont_filter = True
        await self.admit(module, [request], routing)
