"""A job's generations in its coordination store: read them, register a worker, activate by CAS."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import msgspec

from .._errors import ConfigError
from ._code import UNKNOWN_HASH
from ._errors import DeployConflict
from ._record import JobGenerations, ModuleGenerations, decode, encode

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..coordination import Coordination

__all__ = ("GENERATIONS", "MODULES", "activate", "read_generations", "recorded_names", "register", "retire")

GENERATIONS = "generations"
"""Coordination key of the job's `JobGenerations` (JSON)."""
MODULES = "modules"
"""Coordination key of the names of the job's modules (JSON list): what jobs recorded before generations,
kept written for the commands and workers of those versions."""


async def read_generations(coordination: Coordination) -> tuple[bytes | None, JobGenerations | None]:
    """The job's record as stored (the bytes a compare-and-set expects) and decoded; (None, None) if none.

    A job recorded before generations (only its module names) reads as generation 1 of each module;
    its bytes are then None (the record is not stored yet).
    """
    raw = await coordination.get(GENERATIONS)
    if raw is not None:
        return raw, decode(raw)
    names = await coordination.get(MODULES)
    return None, None if names is None else decode(names)


async def recorded_names(coordination: Coordination) -> list[str]:
    """The names of the job's modules, sorted ([] if none were recorded)."""
    _, record = await read_generations(coordination)
    return [] if record is None else sorted(record.modules)


async def activate(
    coordination: Coordination,
    targets: Mapping[str, str | int | None],
    *,
    seen: JobGenerations | None,
    job: str,
    shapes: Mapping[str, tuple[str, ...]] | None = None,
    now: float | None = None,
) -> JobGenerations:
    """Activate, in one compare-and-set, a generation of each module in `targets`; return the new record.

    A target is the hash of new code (a new generation, or an earlier one of that code again), a
    generation number (a rollback), or None (the module left the code: its active generation drains).
    `seen` is the record the deploy prepared against: if another deploy changed one of these modules
    since, nothing is activated. `shapes` are the item shapes a verify saw of the new code, per module.

    Raises:
        DeployConflict: another deploy changed one of these modules' generations since `seen`.
        KeyError: a generation number the module does not have.

    Example:
        >>> import anyio
        >>> from mocra_core.coordination import LocalCoordination
        >>> async def main() -> dict[str, int]:
        ...     store = LocalCoordination()
        ...     first = await activate(store, {"news": "a1"}, seen=None, job="j")
        ...     return (await activate(store, {"news": "b2"}, seen=first, job="j")).active()
        >>> anyio.run(main)
        {'news': 2}
    """
    when = time.time() if now is None else now
    while True:
        raw, current = await read_generations(coordination)
        record = current or JobGenerations()
        before = seen.modules if seen is not None else {}
        moved = sorted(name for name in targets if record.modules.get(name) != before.get(name))
        if moved:
            raise DeployConflict(job, moved)
        for name, target in targets.items():
            shape = (shapes or {}).get(name, ())
            record = record.with_module(name, _target(record.modules.get(name), target, when, shape))
        if await _store(coordination, raw, current, record):
            return record


def _target(
    gens: ModuleGenerations | None, target: str | int | None, now: float, shape: tuple[str, ...]
) -> ModuleGenerations:
    if target is None:
        if gens is None:
            raise KeyError("a module the job does not have")
        return gens.remove()
    if isinstance(target, int):
        if gens is None:
            raise KeyError(target)
        return gens.activate_number(target, now=now)
    if gens is None:
        return ModuleGenerations.new(target, now=now, shape=shape)
    return gens.activate(target, now=now, shape=shape)


async def retire(coordination: Coordination, name: str, number: int) -> bool:
    """Retire the draining generation `number` of `name` (its work is done); False if it is not draining.

    Example:
        >>> import anyio
        >>> from mocra_core.coordination import LocalCoordination
        >>> async def main() -> list[str]:
        ...     store = LocalCoordination()
        ...     first = await activate(store, {"news": "a1"}, seen=None, job="j")
        ...     await activate(store, {"news": "b2"}, seen=first, job="j")
        ...     await retire(store, "news", 1)
        ...     _, record = await read_generations(store)
        ...     return [g.state for g in record.modules["news"].generations]
        >>> anyio.run(main)
        ['retired', 'active']
    """
    while True:
        raw, current = await read_generations(coordination)
        gens = None if current is None else current.modules.get(name)
        found = None if gens is None else gens.number(number)
        if current is None or gens is None or found is None or found.state != "draining":
            return False
        if await _store(coordination, raw, current, current.with_module(name, gens.retire(number))):
            return True


async def register(
    coordination: Coordination, hashes: Mapping[str, str], *, job: str, shared: bool, now: float | None = None
) -> dict[str, int]:
    """Record a starting worker's modules; return the generation of each that its code is.

    A module new to the job starts at generation 1; a job recorded before generations learns its code's
    hashes from its first worker. A worker whose code is the active or a draining generation runs it. New
    code (no such generation) on a job this worker runs alone (`shared=False`: a job dir, memory, or a
    shared job with no other live worker) is activated, the generation before retired (this process takes
    its queued work); while other workers of a shared job run, it is refused: deploy it first.

    Raises:
        ConfigError: the worker lacks a module the job runs, or (shared) its code is no generation of it.
    """
    when = time.time() if now is None else now
    while True:
        raw, current = await read_generations(coordination)
        record = current or JobGenerations()
        _check_missing(record, hashes, job)
        for name, code in hashes.items():
            record = record.with_module(name, _registered(record, name, code, job, shared, when))
        if await _store(coordination, raw, current, record):
            return {name: _number(record.modules[name], code) for name, code in hashes.items()}


def _check_missing(record: JobGenerations, hashes: Mapping[str, str], job: str) -> None:
    running = {name for name, gens in record.modules.items() if gens.active is not None}
    mine = set(hashes)
    missing = running - mine
    if missing:
        raise ConfigError(
            "spiders",
            f"{job} runs {_listed(running)}; this run has {_listed(mine)}, without {_listed(missing)}: "
            "start every worker of a job with the same spiders, or name another job (--job, --job-dir)",
            source="mocra run",
        )


def _registered(
    record: JobGenerations, name: str, code: str, job: str, shared: bool, now: float
) -> ModuleGenerations:
    gens = record.modules.get(name)
    if gens is None:
        return ModuleGenerations.new(code, now=now)
    active = gens.active
    if active is not None and active.hash == UNKNOWN_HASH:  # recorded before generations: its code is ours
        return ModuleGenerations(
            generations=tuple(
                msgspec.structs.replace(g, hash=code) if g is active else g for g in gens.generations
            )
        )
    found = gens.find_hash(code)
    if found is not None and found.state != "retired":
        return gens
    if not shared:
        return gens.activate(code, now=now, previous="retired")
    shown = "none (removed by a deploy)" if active is None else f"generation {active.number} ({active.hash})"
    raise ConfigError(
        "spiders",
        f"{job}: the code of {name!r} here ({code}) is no live generation of the job (active: {shown}): "
        "deploy it first (`mocra deploy FILE --queue URL --job NAME`), start this worker with the "
        "active code, or start it once the job's other workers have stopped",
        source="mocra run",
    )


def _number(gens: ModuleGenerations, code: str) -> int:
    found = gens.find_hash(code)
    assert found is not None
    return found.number


async def _store(
    coordination: Coordination, raw: bytes | None, current: JobGenerations | None, record: JobGenerations
) -> bool:
    """Compare-and-set the record (`raw` is what was read), then widen the names list for older readers."""
    if raw is not None and record is current:
        return True
    if not await coordination.compare_and_set(GENERATIONS, raw, encode(record)):
        return False
    await _widen_names(coordination, set(record.modules))
    return True


async def _widen_names(coordination: Coordination, names: set[str]) -> None:
    while True:
        raw = await coordination.get(MODULES)
        theirs = set(msgspec.json.decode(raw, type=list[str])) if raw is not None else set()
        if raw is not None and names <= theirs:
            return
        if await coordination.compare_and_set(MODULES, raw, msgspec.json.encode(sorted(theirs | names))):
            return


def _listed(names: set[str]) -> str:
    return ", ".join(repr(name) for name in sorted(names))
