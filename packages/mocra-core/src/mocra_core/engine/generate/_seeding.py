"""Seeding: each autostart module's start tasks, queued once per job whichever worker gets there first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...control import WorkerRegistry
from ...generations import code_hash, recorded_names, register
from ...modules import Task

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from ...coordination import Coordination
    from ...modules import CompiledModule, Start
    from .._router import TaskRouter

__all__ = ("all_seeded", "check_modules", "recorded_modules", "seed_once", "start_tasks")


def _seeded_at_start(module: CompiledModule) -> bool:
    """A module seeded when the run starts: autostart, with starts not on a cron schedule."""
    return module.autostart and bool(module.starts)


def _hashes(modules: Mapping[str, CompiledModule]) -> dict[str, str]:
    return {name: code_hash(module.source) for name, module in modules.items()}


async def check_modules(
    modules: Mapping[str, CompiledModule], coordination: Coordination, job: str, *, shared: bool = False
) -> dict[str, int]:
    """Record the modules of `job` and their code's generations; refuse a worker missing one of them.

    The job's queues may hold messages of every module it runs, which a worker without that module
    cannot handle. A run with more modules widens the record (a spider added to a job). Each module's
    code is a generation of it (`mocra_core.generations`): new code starts a new generation when this
    worker is the job's only one (a job dir, memory, or a shared job none of whose workers is alive), and
    is refused while other workers of a shared job run, until it is deployed. Returns the generation
    number of each module of this worker.

    Raises:
        ConfigError: this run lacks a module the job has, or runs code not deployed to a job whose other
            workers are running.
    """
    alone = not shared or not await WorkerRegistry(coordination).live()
    return await register(coordination, _hashes(modules), job=job, shared=not alone)


async def recorded_modules(coordination: Coordination) -> list[str]:
    """The names of the modules `check_modules` recorded in a job's coordination store, sorted; [] if none.

    What tells the commands looking into a job (`mocra status`, `mocra dlq`) its modules' response queues.

    Example:
        >>> import anyio
        >>> from mocra_core.coordination import LocalCoordination
        >>> from mocra_core.modules import compile_module, Spider
        >>> class News(Spider[dict[str, str]]):
        ...     name = "news"
        ...     async def parse(self, response, ctx): ...
        >>> async def main() -> list[str]:
        ...     store = LocalCoordination()
        ...     await check_modules({"news": compile_module(News())}, store, "job 'j'")
        ...     return await recorded_modules(store)
        >>> anyio.run(main)
        ['news']
    """
    return await recorded_names(coordination)


async def seed_once(
    modules: Mapping[str, CompiledModule],
    router: TaskRouter,
    coordination: Coordination,
    *,
    holder: str,
    seeded: Callable[[list[Task]], Awaitable[None]] | None = None,
) -> bool:
    """Queue each autostart module's start tasks exactly once per job, whichever worker gets there first.

    The flag `seeded/<module>` is set after the tasks are queued, under a lock, so a worker that dies
    mid-seed leaves the job unseeded (another worker seeds it: duplicates are dropped by dedup) rather
    than seeded with nothing. `holder` names this worker as the lock's holder; `seeded` hears of the
    tasks it queued (the run records). Returns whether every flag is known set (False while another
    worker is still seeding a module).
    """
    known = True
    for name, module in modules.items():
        if not _seeded_at_start(module):
            continue
        flag = f"seeded/{name}"
        if await coordination.get(flag) is not None:
            continue
        token = await coordination.acquire_lock(f"seeding/{name}", holder, ttl=60.0)
        if token is None:
            known = False  # another worker is seeding it; `EndCheck.until_over` waits for its flag
            continue
        try:
            if await coordination.get(flag) is None:
                tasks = start_tasks(module, "1")
                await router.seed(tasks)
                await coordination.set(flag, b"1")
                if seeded is not None:
                    await seeded(tasks)
        finally:
            await coordination.release_lock(f"seeding/{name}", holder, token)
    return known


async def all_seeded(modules: Mapping[str, CompiledModule], coordination: Coordination) -> bool:
    """True when every module seeded at start has its `seeded/<module>` flag (by any worker)."""
    for name, module in modules.items():
        if _seeded_at_start(module) and await coordination.get(f"seeded/{name}") is None:
            return False
    return True


def start_tasks(module: CompiledModule, generation: str, starts: Sequence[Start] | None = None) -> list[Task]:
    """One start task per start (`module.starts` unless given), each its own run, highest priority first.

    Each task's meta is its start's (the module's `config`, with a store row's config over it).
    """
    ordered = sorted(module.starts if starts is None else starts, key=lambda start: -start.priority)
    return [
        Task(
            module=module.name,
            node=module.entry,
            account=start.account,
            run=f"{module.name}:{start.account or '-'}:{generation}",
            meta=dict(start.meta),
        )
        for start in ordered
    ]
