"""Seeding: each autostart module's start tasks, queued once per job whichever worker gets there first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..modules import Task

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..coordination import Coordination
    from ..modules import CompiledModule
    from ._router import Router

__all__ = ("all_seeded", "seed_once", "start_tasks")


def _seeded_at_start(module: CompiledModule) -> bool:
    """A module seeded when the run starts: autostart and not on a cron schedule."""
    return module.autostart and module.cron is None


async def seed_once(
    modules: Mapping[str, CompiledModule], router: Router, coordination: Coordination, *, holder: str
) -> None:
    """Queue each autostart module's start tasks exactly once per job, whichever worker gets there first.

    The flag `seeded/<module>` is set after the tasks are queued, under a lock, so a worker that dies
    mid-seed leaves the job unseeded (another worker seeds it: duplicates are dropped by dedup) rather
    than seeded with nothing. `holder` names this worker as the lock's holder.
    """
    for name, module in modules.items():
        if not _seeded_at_start(module):
            continue
        flag = f"seeded/{name}"
        if await coordination.get(flag) is not None:
            continue
        token = await coordination.acquire_lock(f"seeding/{name}", holder, ttl=60.0)
        if token is None:
            continue  # another worker is seeding it; `EndCheck.until_over` waits for its flag
        try:
            if await coordination.get(flag) is None:
                await router.seed(start_tasks(module, "1"))
                await coordination.set(flag, b"1")
        finally:
            await coordination.release_lock(f"seeding/{name}", holder, token)


async def all_seeded(modules: Mapping[str, CompiledModule], coordination: Coordination) -> bool:
    """True when every module seeded at start has its `seeded/<module>` flag (by any worker)."""
    for name, module in modules.items():
        if _seeded_at_start(module) and await coordination.get(f"seeded/{name}") is None:
            return False
    return True


def start_tasks(module: CompiledModule, generation: str) -> list[Task]:
    """One start task per account (one anonymous task without accounts), each its own run."""
    accounts: list[str | None] = [account.name for account in module.accounts] or [None]
    return [
        Task(
            module=module.name,
            node=module.entry,
            account=name,
            run=f"{module.name}:{name or '-'}:{generation}",
        )
        for name in accounts
    ]
