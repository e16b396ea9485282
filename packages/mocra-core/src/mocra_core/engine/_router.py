"""`Router`: turns what a node produced into queued work — requests, tasks, gates, fan-ins, stops."""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..modules import Task
from ..topics import TASKS
from ._frontier import seen_scope

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from ..http import Request, RequestRecord
    from ..modules import CompiledModule, Route
    from ..observe import Stats
    from ..queue import Delivery, QueueBackend
    from ._frontier import Frontier
    from ._runbook import RunBook

__all__ = ("RouteError", "Router")

logger = logging.getLogger(__name__)


class RouteError(Exception):
    """A node routed to a node or module that does not exist (a bug in the module)."""


class Router:
    """Queues the requests and tasks a node produced, applying gates and fan-in bookkeeping.

    Bookkeeping of open work per (run, node) is done only for modules that have fan-in nodes; a stage
    reports a finished unit with `unit_done` *before* acknowledging it, so counts never dip to zero while
    work is still on its way. `affinity` maps an account's `module:account` to the queue partition key its
    tasks and requests are published with (None: no key).
    """

    def __init__(
        self,
        queue: QueueBackend,
        modules: Mapping[str, CompiledModule],
        frontier: Frontier,
        runbook: RunBook,
        stats: Stats,
        *,
        affinity: Callable[[str], str | None] | None = None,
    ) -> None:
        self._affinity = affinity
        self._queue = queue
        self._modules = modules
        self._frontier = frontier
        self._runbook = runbook
        self._stats = stats
        self._foreign: set[str] = set()  # modules of messages this worker does not run, warned of once

    @property
    def runbook(self) -> RunBook:
        """The per-run shared state."""
        return self._runbook

    def module_of(self, node_path: str | None) -> CompiledModule:
        """The module a `module/node` path belongs to."""
        return self._modules[(node_path or "").partition("/")[0]]

    def find(self, node_path: str | None) -> CompiledModule | None:
        """The module a `module/node` path of a message belongs to; None if this worker has no such module."""
        return self._modules.get((node_path or "").partition("/")[0])

    async def foreign(self, delivery: Delivery, node_path: str | None) -> None:
        """Dead-letter a message of a module this worker does not run (a worker started with other spiders).

        `mocra dlq replay` puts it back once a worker with that module runs.
        """
        name = (node_path or "").partition("/")[0]
        reason = f"no module {name!r} in this worker (it runs {', '.join(sorted(self._modules))})"
        if name not in self._foreign:
            self._foreign.add(name)
            logger.error(
                "%s: its messages are dead-lettered; run every worker of a job with the same spiders", reason
            )
        await self._queue.dead_letter(delivery, reason=reason)

    async def admit(
        self, module: CompiledModule, requests: Sequence[Request], *, redelivered: bool = False
    ) -> None:
        """Queue requests (depth, dedup) and count them as open work of their node.

        `redelivered`: they come from a redelivered task or response, so dedup cannot tell whether they
        reached the queue the first time; they are queued anyway (see `Frontier.submit`).
        """
        if not requests:
            return
        if module.downloader is not None:
            for request in requests:
                if request.downloader is None:
                    request.downloader = module.downloader
        first = requests[0]
        scope = seen_scope(module, first)
        key = self._key(module.name, first.account)
        admitted = await self._frontier.submit(requests, scope=scope, redelivered=redelivered, key=key)
        if module.fan_in and admitted:
            await self._open(module, [(r.run, r.node) for r in admitted])

    async def route(
        self,
        module: CompiledModule,
        node: str,
        routes: Sequence[Route],
        *,
        run: str | None,
        account: str | None,
        origin: RequestRecord | None,
    ) -> None:
        """Queue the tasks asked for by `routes` from `node` (a bare node id)."""
        tasks: list[Task] = []
        for route in routes:
            if route.module is not None:
                target = self._modules.get(route.module)
                if target is None:
                    raise RouteError(f"{module.name}/{node} started unknown module {route.module!r}")
                tasks.append(
                    Task(module=target.name, node=target.entry, meta=route.meta, account=account,
                         run=f"{target.name}:{account or '-'}:from:{run}", origin=origin)
                )  # fmt: skip
                continue
            if route.node is not None:
                if route.node not in module.graph:
                    raise RouteError(f"{module.name}/{node} routed to unknown node {route.node!r}")
                targets: Sequence[str] = (route.node,)
            else:
                targets = module.successors(node)
            for target_node in targets:
                if target_node in module.fan_in and run is not None:
                    await self._runbook.gather(run, target_node, route.meta)
                    continue
                tasks.append(
                    Task(module=module.name, node=target_node, meta=route.meta, run=run, account=account,
                         origin=origin)
                )  # fmt: skip
        await self._publish(tasks)

    async def advance(
        self,
        module: CompiledModule,
        node: str,
        meta: dict[str, Any],
        *,
        run: str | None,
        account: str | None,
        origin: RequestRecord | None,
    ) -> None:
        """The advance gate: `node` produced nothing, so start each (non fan-in) successor once per run."""
        if not module.node(node).advance:
            return
        tasks = []
        for successor in module.successors(node):
            if successor in module.fan_in:
                continue  # a fan-in starts when its upstream is done
            if await self._runbook.advance_once(run, node, successor):
                tasks.append(
                    Task(
                        module=module.name, node=successor, meta=meta, run=run, account=account, origin=origin
                    )
                )
        await self._publish(tasks)

    async def unit_done(
        self, module: CompiledModule, run: str | None, account: str | None, node: str
    ) -> None:
        """One unit of `node` finished: close it, then start any fan-in node whose upstream is now done."""
        if not module.fan_in or run is None:
            return
        await self._runbook.closed(run, node)
        for fan_in in module.fan_in:
            upstream = module.upstream(fan_in)
            if node not in upstream or not await self._runbook.all_closed(run, upstream):
                continue
            if await self._runbook.is_stopped(run) or not await self._runbook.fire_fan_in_once(run, fan_in):
                continue
            inputs = await self._runbook.inputs(run, fan_in)
            logger.debug("fan-in %s/%s of run %s fires with %d inputs", module.name, fan_in, run, len(inputs))
            await self._publish(
                [
                    Task(module=module.name, node=fan_in, meta=inputs[0] if inputs else {}, run=run,
                         account=account, inputs=inputs)
                ]
            )  # fmt: skip

    async def seed(self, tasks: Sequence[Task]) -> None:
        """Queue start tasks."""
        await self._publish(tasks)

    async def reinject(self, module: CompiledModule, request: Request) -> None:
        """Queue `request` again, past dedup (the fallback gate)."""
        request.dont_filter = True
        await self.admit(module, [request])

    async def _publish(self, tasks: Sequence[Task]) -> None:
        if not tasks:
            return
        by_module: Counter[str] = Counter(t.module for t in tasks)
        for name in by_module:
            module = self._modules[name]
            if module.fan_in:
                await self._open(module, [(t.run, f"{t.module}/{t.node}") for t in tasks if t.module == name])
        if self._affinity is None:
            await self._queue.publish(TASKS, tasks)
            return
        by_key: dict[str | None, list[Task]] = {}
        for task in tasks:
            by_key.setdefault(self._key(task.module, task.account), []).append(task)
        for key, batch in by_key.items():
            await self._queue.publish(TASKS, batch, key=key)

    def _key(self, module: str, account: str | None) -> str | None:
        if self._affinity is None or account is None:
            return None
        return self._affinity(f"{module}:{account}")

    async def _open(self, module: CompiledModule, units: Sequence[tuple[str | None, str | None]]) -> None:
        counts: Counter[tuple[str, str]] = Counter()
        for run, node_path in units:
            if run is not None and node_path is not None:
                counts[(run, node_path.rpartition("/")[2])] += 1
        for (run, node), count in counts.items():
            await self._runbook.opened(run, node, count)
