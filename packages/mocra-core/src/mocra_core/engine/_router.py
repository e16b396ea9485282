"""`TaskRouter`: the tasks a node asked for (routes, the advance gate, seeds), queued by account affinity."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ..modules import Task
from ..topics import TASKS
from ._fan_in import open_units

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..http import RoutedRecord
    from ..modules import CompiledModule, Route
    from ..queue import QueueBackend
    from ._module_table import ModuleTable
    from ._runbook import RunBook

__all__ = ("RouteError", "TaskRouter")


class RouteError(Exception):
    """A node routed to a node or module that does not exist (a bug in the module)."""


class TaskRouter:
    """Queues the tasks a node produced, applying gates and opening fan-in units of work.

    `affinity` maps an account's `module:account` to the queue partition key its tasks and requests are
    published with (None: no key).
    """

    def __init__(
        self,
        queue: QueueBackend,
        modules: ModuleTable,
        runbook: RunBook,
        *,
        affinity: Callable[[str], str | None] | None = None,
    ) -> None:
        self._queue = queue
        self._modules = modules
        self._runbook = runbook
        self._affinity = affinity

    async def route(
        self,
        module: CompiledModule,
        node: str,
        routes: Sequence[Route],
        *,
        run: str | None,
        account: str | None,
        origin: RoutedRecord | None,
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
        await self.publish(tasks)

    async def advance(
        self,
        module: CompiledModule,
        node: str,
        meta: dict[str, Any],
        *,
        run: str | None,
        account: str | None,
        origin: RoutedRecord | None,
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
        await self.publish(tasks)

    async def seed(self, tasks: Sequence[Task]) -> None:
        """Queue start tasks."""
        await self.publish(tasks)

    async def publish(self, tasks: Sequence[Task]) -> None:
        """Queue `tasks`, each counted as open work of its node (modules with fan-in) and keyed by account.

        A task without a generation is stamped with its module's current one (`ModuleTable.stamp`).
        """
        if not tasks:
            return
        for task in tasks:
            if not task.generation:
                task.generation = self._modules.stamp(task.module)
        by_module: Counter[str] = Counter(t.module for t in tasks)
        for name in by_module:
            if self._modules.module_of(name).fan_in:
                units = [(t.run, f"{t.module}/{t.node}") for t in tasks if t.module == name]
                await open_units(self._runbook, units)
        if self._affinity is None:
            await self._queue.publish(TASKS, tasks)
            return
        by_key: dict[str | None, list[Task]] = {}
        for task in tasks:
            by_key.setdefault(self.key(task.module, task.account), []).append(task)
        for key, batch in by_key.items():
            await self._queue.publish(TASKS, batch, key=key)

    def key(self, module: str, account: str | None) -> str | None:
        """The queue partition key of `account`'s work in `module` (None without affinity or account)."""
        if self._affinity is None or account is None:
            return None
        return self._affinity(f"{module}:{account}")

    def stamp(self, module: str) -> int:
        """The generation new work of `module` is stamped with (`ModuleTable.stamp`)."""
        return self._modules.stamp(module)
