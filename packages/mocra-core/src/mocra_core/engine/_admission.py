"""`Admission`: the follow-up requests a node produced, queued through the frontier (scope, depth, dedup)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from ..download._proxy_route import PROXY_META
from ._fan_in import open_units
from ._frontier import seen_scope

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..http import Request, Routed, Routing
    from ..modules import CompiledModule
    from ..observe import Stats
    from ._frontier import Frontier
    from ._router import TaskRouter
    from ._runbook import RunBook

__all__ = ("Admission",)

logger = logging.getLogger(__name__)

_SEEDS_LOGGED = 10  # out-of-scope seeds warned about one by one, per process


class Admission:
    """Queues requests through the `Frontier`, keyed like their account's tasks, opening fan-in units.

    Before the frontier, each request must be in its module's `scope` (relative to `origin`, the URL of
    the page it was found on) and pass the module's `rules`: one out of scope is dropped and counted
    (`dropped["offsite"]`, its host in `offsite_hosts`), a link the rules deny too (`dropped["rules"]`; rules
    sift links found on pages, not seeds).
    `dont_filter` requests skip both checks (as they skip dedup; Scrapy's offsite rule does the same).
    """

    def __init__(self, frontier: Frontier, runbook: RunBook, router: TaskRouter, stats: Stats) -> None:
        self._frontier = frontier
        self._runbook = runbook
        self._router = router
        self._stats = stats
        self._seeds_logged = 0

    async def admit(
        self,
        module: CompiledModule,
        requests: Sequence[Request],
        routing: Routing,
        *,
        origin: str | None = None,
        redelivered: bool = False,
    ) -> None:
        """Queue requests (scope, depth, dedup) beside `routing`, counted as open work of their node.

        They are stamped with their module's current generation (`ModuleTable.stamp`): the work of a
        draining generation makes work of the active one.

        `origin`: the URL of the page they were found on (a response's final URL); `None` for seeds and
        requests a node generates, which are then held to the scope's `allowed_domains` only (and a seed
        out of it is warned about). `redelivered`: they come from a redelivered task or response, so dedup
        cannot tell whether they reached the queue the first time; they are queued anyway (see
        `Frontier.submit`).
        """
        if not requests:
            return
        requests = self._in_scope(module, requests, origin)
        if not requests:
            return
        if module.downloader is not None:
            for request in requests:
                if request.downloader is None:
                    request.downloader = module.downloader
        if module.proxy is not None:
            for request in requests:
                if PROXY_META not in request.meta:
                    request.meta[PROXY_META] = module.proxy  # each request owns its meta dict
        stamp = self._router.stamp(module.name)
        if routing.generation != stamp:  # new work runs on the module's current generation
            routing = msgspec.structs.replace(routing, generation=stamp)
        scope = seen_scope(module, routing)
        key = self._router.key(module.name, routing.account)
        admitted = await self._frontier.submit(
            requests, routing, scope=scope, redelivered=redelivered, key=key
        )
        if module.fan_in and admitted:
            await open_units(self._runbook, [(routing.run, routing.node)] * len(admitted))

    def _in_scope(
        self, module: CompiledModule, requests: Sequence[Request], origin: str | None
    ) -> Sequence[Request]:
        scope = module.scope
        rules = module.rules if origin is not None else None  # rules sift found links, not seeds
        if rules is None and scope.admits_everything(origin):
            return requests
        kept: list[Request] = []
        for request in requests:
            url = request.url
            if request.dont_filter:
                kept.append(request)
            elif not scope.allows(url, origin=origin):
                self._stats.offsite(url)
                if origin is None and self._seeds_logged < _SEEDS_LOGGED:
                    self._seeds_logged += 1
                    logger.warning(
                        "%s: not seeded, out of the crawl's scope (%r): %s", module.name, scope, url
                    )
            elif rules is not None and not rules.allows(url):
                self._stats.drop("rules")
            else:
                kept.append(request)
        return kept

    async def reinject(self, module: CompiledModule, routed: Routed) -> None:
        """Queue a request again beside its routing, past dedup (the fallback gate)."""
        routed.request.dont_filter = True
        await self.admit(module, [routed.request], routed.routing)
