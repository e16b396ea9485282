"""`ModuleTable`: the modules this worker runs, by name and generation, found from a message's routing."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from ..generations import JobGenerations
    from ..modules import CompiledModule
    from ..queue import Delivery, QueueBackend

__all__ = ("LACKING_TIMEOUT", "LEAVE_DELAY", "ModuleTable")

logger = logging.getLogger(__name__)

LACKING_TIMEOUT = 60.0
"""Seconds a message of a generation no live worker has waits before it is dead-lettered."""
LEAVE_DELAY = 2.0
"""Seconds before a message left for the workers that have its generation is leased again."""


class ModuleTable:
    """The run's modules by name and by (name, generation); new work is stamped with `stamp(name)`.

    A message finds the code of its generation (`find`): a generation this worker loaded runs on it;
    generation 0 (made before generations), a retired one, or one the job never recorded runs on the
    current one (`stamp`); a live generation this worker lacks is left for the workers that have it
    (`foreign`), and dead-lettered once no live worker has had it for `lacking_timeout` seconds. A
    message of a module this worker does not run is dead-lettered.

    Example:
        >>> from mocra_core.modules import Spider, compile_module
        >>> from mocra_core.queue import MemoryQueue
        >>> class News(Spider[dict[str, str]]):
        ...     name = "news"
        ...     async def parse(self, response, ctx): ...
        >>> table = ModuleTable({"news": compile_module(News())}, MemoryQueue(), generations={"news": 2})
        >>> table.stamp("news"), table.find("news/spider", 2).name, table.find("news/spider", 3)
        (2, 'news', None)
    """

    def __init__(
        self,
        modules: Mapping[str, CompiledModule],
        queue: QueueBackend,
        *,
        generations: Mapping[str, int] | None = None,
        lacking_timeout: float = LACKING_TIMEOUT,
    ) -> None:
        self._modules = dict(modules)  # the current module of each name (what new work is stamped with)
        self._queue = queue
        self._stamp = {name: (generations or {}).get(name, 0) for name in modules}
        self._by_gen = {(name, self._stamp[name]): module for name, module in modules.items()}
        self._live: set[tuple[str, int]] = set()  # the generations the job's record has, not retired
        self._latest: dict[str, int] = dict(self._stamp)  # the latest generation the job's record has
        self._timeout = lacking_timeout
        self.lacking: dict[tuple[str, int], float] = {}  # generations met and lacked: since when
        self.elsewhere: set[tuple[str, int]] = set()  # generations some live worker has (its heartbeat)
        self._foreign: set[str] = set()  # modules of messages this worker does not run, warned of once

    def __contains__(self, name: object) -> bool:
        return name in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def get(self, name: str) -> CompiledModule | None:
        """The current module named `name`; None if this worker has no such module."""
        return self._modules.get(name)

    def module_of(self, node_path: str | None, generation: int = 0) -> CompiledModule:
        """The module a `module/node` path of a message of `generation` belongs to (it must be found)."""
        module = self.find(node_path, generation)
        assert module is not None, node_path
        return module

    def find(self, node_path: str | None, generation: int = 0) -> CompiledModule | None:
        """The code that runs a message of `module/node` made by `generation`; None: see `foreign`."""
        name = (node_path or "").partition("/")[0]
        if generation:
            module = self._by_gen.get((name, generation))
            if module is not None:
                return module
            if self._lacks(name, generation):
                return None
        return self._modules.get(name)

    def _lacks(self, name: str, generation: int) -> bool:
        """A live generation (or one newer than this worker has heard of) that it has no code of."""
        if name not in self._modules:
            return False
        return generation > self._latest.get(name, 0) or (name, generation) in self._live

    def stamp(self, name: str) -> int:
        """The generation new work of module `name` is stamped with (0: unknown)."""
        return self._stamp.get(name, 0)

    def load(self, name: str, generation: int, module: CompiledModule) -> None:
        """Add the code of `generation` of `name` (a reload); it becomes current if the record says active."""
        self._by_gen[(name, generation)] = module
        self._latest[name] = max(self._latest.get(name, 0), generation)
        self.lacking.pop((name, generation), None)

    def loaded(self) -> dict[str, list[int]]:
        """The generations of each module this worker has code of (what its heartbeat tells)."""
        found: dict[str, list[int]] = {}
        for name, number in sorted(self._by_gen):
            found.setdefault(name, []).append(number)
        return found

    def follow(self, record: JobGenerations) -> dict[str, int]:
        """Take the job's record: retired generations, and the active one as current where it is loaded.

        Returns the modules whose active generation this worker lacks (name → number): a reload's work.
        """
        missing: dict[str, int] = {}
        for name, gens in record.modules.items():
            if name not in self._modules:
                continue
            self._latest[name] = max(self._latest.get(name, 0), gens.generations[-1].number)
            for gen in gens.generations:
                if gen.state == "retired":
                    self._live.discard((name, gen.number))
                else:
                    self._live.add((name, gen.number))
            active = gens.active
            if active is None:
                continue
            module = self._by_gen.get((name, active.number))
            if module is None:
                missing[name] = active.number
            elif self._stamp[name] != active.number:
                self._modules[name], self._stamp[name] = module, active.number
                logger.info("%s: new work runs on generation %d", name, active.number)
        return missing

    async def foreign(self, delivery: Delivery, node_path: str | None, generation: int = 0) -> None:
        """Handle a message `find` found no code for: another generation's, or another module's.

        Of a live generation this worker lacks: sent back (republished with a delay, spending no attempt)
        for the workers that have it; dead-lettered once none has had it for `lacking_timeout` seconds.
        Of a module this worker does not run: dead-lettered (`mocra dlq replay` puts it back once a
        worker with that module runs).
        """
        name = (node_path or "").partition("/")[0]
        if name in self._modules:
            await self._leave(delivery, name, generation)
            return
        reason = f"no module {name!r} in this worker (it runs {', '.join(sorted(self._modules))})"
        if name not in self._foreign:
            self._foreign.add(name)
            logger.error(
                "%s: its messages are dead-lettered; run every worker of a job with the same spiders", reason
            )
        await self._queue.dead_letter(delivery, reason=reason)

    async def _leave(self, delivery: Delivery, name: str, generation: int) -> None:
        key, now = (name, generation), time.monotonic()
        if key in self.elsewhere or key not in self.lacking:
            if key not in self.lacking:
                logger.warning(
                    "%s: generation %d is not loaded here (it has %s): its work is left to the workers "
                    "that have it", name, generation, self.loaded().get(name),
                )  # fmt: skip
            self.lacking[key] = now
        if now - self.lacking[key] < self._timeout:
            await self._queue.publish(
                delivery.topic, [delivery.payload], key=delivery.key, priority=delivery.priority,
                delay=LEAVE_DELAY,
            )  # fmt: skip
            await self._queue.ack([delivery])
            return
        reason = (
            f"generation {generation} of {name!r} runs on no live worker of the job (none had it for "
            f"{self._timeout:.0f}s; this one has {self.loaded().get(name)}): deploy it again or start a "
            "worker with its code, then `mocra dlq replay`"
        )
        await self._queue.dead_letter(delivery, reason=reason)
