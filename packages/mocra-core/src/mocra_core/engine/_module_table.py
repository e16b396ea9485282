"""`ModuleTable`: the modules this worker runs, found by the `module/node` path of a message."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from ..modules import CompiledModule
    from ..queue import Delivery, QueueBackend

__all__ = ("ModuleTable",)

logger = logging.getLogger(__name__)


class ModuleTable:
    """The run's modules by name; a message of a module this worker lacks goes to the dead-letter queue."""

    def __init__(self, modules: Mapping[str, CompiledModule], queue: QueueBackend) -> None:
        self._modules = modules
        self._queue = queue
        self._foreign: set[str] = set()  # modules of messages this worker does not run, warned of once

    def __contains__(self, name: object) -> bool:
        return name in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def get(self, name: str) -> CompiledModule | None:
        """The module named `name`; None if this worker has no such module."""
        return self._modules.get(name)

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
