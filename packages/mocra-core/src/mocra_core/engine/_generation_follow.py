"""`GenerationFollow`: a worker in step with its job's generations — follows activations, retires, reloads.

Beside the stages, about once a second: it adds this worker's counts of open work to the job's
(`OpenWork`), reads the job's record of generations (new work goes to the active generation once this
worker has its code), retires a draining generation whose open work is down to 0, and, with `--reload`,
loads the active generation from the worker's own file once that file holds its code (a job of one
worker deploys its file itself when it changes). The trust model: a worker only ever loads the file it
was started with, imported apart first; never code from the job's store.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

import anyio

from ..control import WorkerRegistry
from ..generations import DeployConflict, DeployRefused, active_in_file, deploy, load_file, retire
from ..generations._record import decode
from ..generations._store import GENERATIONS
from ..modules import compile_module
from ._open_work import open_key
from ._transient import TRANSIENT

if TYPE_CHECKING:
    from ..coordination import Coordination
    from ..generations import JobGenerations
    from ..scope import ScopeStrategy
    from ._module_table import ModuleTable
    from ._open_work import OpenWork

__all__ = ("RETIRE_GRACE", "GenerationFollow")

logger = logging.getLogger(__name__)

RETIRE_GRACE = 5.0
"""Seconds a generation drains at least: the job's workers all stamp new work with the active one by then."""
_ELSEWHERE_EVERY = 3.0  # seconds between two reads of the heartbeats, while some work lacks its generation


class GenerationFollow:
    """Keeps a worker's `ModuleTable` in step with its job's generations; retires drained ones; reloads.

    Args:
        table: The worker's modules by generation.
        open_work: Its counts of queued and settled messages per generation.
        coordination: The job's coordination store.
        job: The job, for people (`job 'news'`).
        scope: The settings' `crawl.scope` (for a module loaded by a reload).
        reload: The file the worker was started with (`--reload`), or None.
        shared: Other workers may share the job: a changed file is loaded once deployed, never deployed here.
        interval: Seconds between two steps.
    """

    def __init__(
        self,
        table: ModuleTable,
        open_work: OpenWork,
        coordination: Coordination,
        *,
        job: str,
        scope: ScopeStrategy,
        reload: str | None = None,
        shared: bool = False,
        interval: float = 1.0,
    ) -> None:
        self._table, self._open, self._store = table, open_work, coordination
        self._job, self._scope, self._reload, self._shared = job, scope, reload, shared
        self._interval = interval
        self._raw: bytes | None = None
        self._record: JobGenerations | None = None
        self._draining: dict[tuple[str, int], float] = {}  # since when this worker saw each draining
        self._tried: tuple[int, tuple[int, int]] | None = None  # the last reload tried: epoch, file
        self._file = self._stat()  # the file as last deployed (or as it was at the start)
        self._seen_file = self._file  # ... as last seen
        self._elsewhere_read = 0.0

    async def start(self) -> None:
        """Read the job's record before the stages start (messages of a draining generation wait for it)."""
        await self._follow()

    async def run(self) -> None:
        """Step every `interval` seconds until cancelled; then add this worker's last counts to the job's."""
        try:
            while True:
                await anyio.sleep(self._interval)
                try:
                    await self.step()
                except TRANSIENT as exc:
                    logger.debug("generations: the store is out of reach, next time: %s", exc)
        finally:
            with anyio.move_on_after(2.0, shield=True):
                try:
                    await self._open.flush(self._store)
                except TRANSIENT as exc:
                    logger.debug("generations: the last counts were not saved: %s", exc)

    async def step(self) -> None:
        """Count, follow, retire, reload (and deploy this worker's changed file, alone on its job)."""
        await self._open.flush(self._store)
        await self._follow()
        if self._record is not None:
            await self._retire(self._record)
        if self._reload is not None and not self._shared:
            await self._deploy_changed(self._reload)
        if self._table.lacking:
            await self._read_elsewhere()

    async def _follow(self) -> None:
        raw = await self._store.get(GENERATIONS)
        if raw is None:
            return
        if raw != self._raw:
            self._raw, self._record = raw, decode(raw)
        assert self._record is not None
        missing = self._table.follow(self._record)
        if missing and self._reload is not None:
            await self._load(self._reload, self._record, missing)

    async def _load(self, path: str, record: JobGenerations, missing: dict[str, int]) -> None:
        """Load the active generations this worker lacks from its file, if the file holds their code."""
        attempt = (record.epoch, self._stat())
        if attempt == self._tried:
            return
        self._tried = attempt
        in_file = await active_in_file(path, record)  # imported apart: a broken file touches nothing here
        wanted = {name: number for name, number in missing.items() if in_file.get(name) == number}
        for name in sorted(set(missing) - set(wanted)):
            logger.info("%s: %s is not generation %d's code: not loaded", name, path, missing[name])
        if not wanted:
            return
        expected = {}
        for name in wanted:
            active = record.modules[name].active
            assert active is not None
            expected[name] = active.hash
        try:
            loaded = load_file(path, expected)
        except Exception as exc:
            logger.error("reloading %s failed: %s", path, exc, exc_info=exc)
            return
        for name, source in loaded.items():
            self._table.load(name, wanted[name], compile_module(source).with_default_scope(self._scope))
            logger.info("%s: generation %d loaded from %s", name, wanted[name], path)
        self._table.follow(record)

    async def _retire(self, record: JobGenerations) -> None:
        now = time.monotonic()
        for name, gens in record.modules.items():
            if name not in self._table:
                continue
            for gen in gens.generations:
                key = (name, gen.number)
                if gen.state != "draining":
                    self._draining.pop(key, None)
                    continue
                if now - self._draining.setdefault(key, now) < RETIRE_GRACE:
                    continue
                if await self._store.incr(open_key(name, gen.number), 0) <= 0 and await retire(
                    self._store, name, gen.number
                ):
                    logger.info("%s: generation %d retired: its work is done", name, gen.number)

    async def _deploy_changed(self, path: str) -> None:
        """Deploy the file once it changed and then stayed the same for a step (a save is complete)."""
        seen = self._stat()
        settled = seen == self._seen_file
        self._seen_file = seen
        if not settled or seen == self._file:
            return
        self._file = seen
        try:
            done = await deploy(path, self._store, job=self._job, spiders=list(self._table))
        except (DeployRefused, DeployConflict) as exc:
            logger.warning("%s", exc)
            return
        for name, number in done.activated.items():
            logger.info("%s: %s changed: generation %d activated", name, path, number)

    async def _read_elsewhere(self) -> None:
        now = time.monotonic()
        if now - self._elsewhere_read < _ELSEWHERE_EVERY:
            return
        self._elsewhere_read = now
        live = await WorkerRegistry(self._store).live()
        self._table.elsewhere = {
            (name, number) for w in live for name, numbers in w.generations.items() for number in numbers
        }

    def _stat(self) -> tuple[int, int]:
        if self._reload is None:
            return (0, 0)
        try:
            stat = os.stat(self._reload)
        except OSError:
            return (0, 0)
        return (stat.st_mtime_ns, stat.st_size)
