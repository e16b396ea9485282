"""`deploy`: prepare a file's code in a fresh interpreter, verify it, activate it on a job by CAS."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import TYPE_CHECKING

import anyio
import msgspec

from ._errors import DeployRefused
from ._probe import Probe
from ._shapes import shape_changes
from ._store import activate, read_generations

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..coordination import Coordination
    from ._record import JobGenerations

__all__ = ("Deployed", "activate_number", "deploy", "prepare")

_PROBE = "import sys; from mocra_core.generations._probe import main; sys.exit(main(sys.argv[1:]))"
PREPARE_TIMEOUT = 120.0
"""Seconds the import (and verify) of a deploy's file may take."""


class Deployed(msgspec.Struct, kw_only=True):
    """What a deploy did.

    Attributes:
        record: The job's generations after it.
        activated: Per module whose active generation changed, its new number.
        unchanged: The modules whose code is already active.
        new: Modules the job did not have.
        removed: Modules of the job the file no longer defines (their active generation drains).
        verified: Per module, what its verify saw (`responses`, `items`), when verified.
    """

    record: JobGenerations
    activated: dict[str, int] = {}
    unchanged: list[str] = []
    new: list[str] = []
    removed: list[str] = []
    verified: dict[str, str] = {}


async def prepare(path: str, *, verify: str | None = None, python: str = sys.executable) -> Probe:
    """Import `path` in a fresh interpreter; return its modules' code hashes (and verify, given a dir).

    Raises:
        DeployRefused: the file is missing, fails to import, defines no module, or takes too long.
    """
    command = [python, "-c", _PROBE, *_paths(path, verify)]
    try:
        with anyio.fail_after(PREPARE_TIMEOUT):
            done = await anyio.run_process(command, check=False, stdin=subprocess.DEVNULL)
    except TimeoutError:
        raise DeployRefused(path, f"importing it took over {PREPARE_TIMEOUT:.0f}s") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise DeployRefused(path, said[-1] if said else f"importing it exited {done.returncode}")
    probe = msgspec.json.decode(done.stdout, type=Probe)
    if not probe.modules:
        raise DeployRefused(path, "it defines no Spider or Module subclass with a name")
    return probe


def _paths(path: str, verify: str | None) -> list[str]:
    file = pathlib.Path(path)
    if not file.is_file():
        raise DeployRefused(path, "no such file")
    if verify is not None and not pathlib.Path(verify).is_dir():
        raise DeployRefused(path, f"no responses dir {verify!r} to verify with")
    return [str(file.resolve())] + ([] if verify is None else [str(pathlib.Path(verify).resolve())])


async def deploy(
    path: str,
    coordination: Coordination,
    *,
    job: str,
    verify: str | None = None,
    spiders: Sequence[str] = (),
    python: str = sys.executable,
) -> Deployed:
    """Deploy the code of `path` to a job: prepare (import it apart), verify, activate by compare-and-set.

    Its modules (or those named in `spiders`) get their code's generation activated: new code is a new
    generation, code the job ran before is its generation again; the generation active before drains.
    Modules of the job the file no longer defines (when no `spiders` are named) drain too. With `verify`
    (a dir of recorded responses, see `RecordedResponse`), each spider's callbacks run over them first:
    a parse that raises, or items of another shape than the active generation's verify recorded, refuse
    the deploy.

    Raises:
        DeployRefused: the file fails to import or to verify: nothing was activated.
        DeployConflict: another deploy activated first: nothing was activated.
    """
    raw, seen = await read_generations(coordination)
    probe = await prepare(path, verify=verify, python=python)
    unknown = sorted(set(spiders) - set(probe.modules))
    if unknown:
        raise DeployRefused(
            path, f"it defines no {', '.join(map(repr, unknown))} (it has {sorted(probe.modules)})"
        )
    chosen = {name: code for name, code in probe.modules.items() if not spiders or name in spiders}
    before = seen.modules if seen is not None else {}
    removed = (
        [] if spiders else sorted(n for n, g in before.items() if n not in chosen and g.active is not None)
    )
    _check_verified(path, probe, chosen, seen)
    targets: dict[str, str | int | None] = {**chosen, **dict.fromkeys(removed)}
    shapes = {name: probe.verified[name].shape for name in chosen if name in probe.verified}
    record = await activate(coordination, targets, seen=seen, job=job, shapes=shapes)
    unchanged = sorted(n for n, code in chosen.items() if _active_hash(seen, n) == code)
    return Deployed(
        record=record,
        activated={n: record.active()[n] for n in sorted(chosen) if n not in unchanged},
        unchanged=unchanged,
        new=sorted(n for n in chosen if n not in before),
        removed=removed,
        verified={n: f"{v.responses} responses, {v.items} items" for n, v in probe.verified.items()},
    )


def _active_hash(record: JobGenerations | None, name: str) -> str | None:
    gens = None if record is None else record.modules.get(name)
    active = None if gens is None else gens.active
    return None if active is None else active.hash


def _check_verified(path: str, probe: Probe, chosen: dict[str, str], seen: JobGenerations | None) -> None:
    problems: list[str] = []
    for name in sorted(chosen):
        result = probe.verified.get(name)
        if result is None or result.skipped is not None:
            continue
        problems += [f"{name}: parse failed on {error}" for error in result.errors]
        gens = None if seen is None else seen.modules.get(name)
        active = None if gens is None else gens.active
        if active is not None and active.shape and result.responses:
            changes = shape_changes(active.shape, result.shape)
            if changes:
                differs = f"its items' shape differs from generation {active.number}'s"
                problems.append(f"{name}: {differs}: {', '.join(changes)}")
    if problems:
        raise DeployRefused(path, "verify failed: " + "; ".join(problems))


async def activate_number(
    coordination: Coordination, number: int, *, job: str, spiders: Sequence[str] = ()
) -> JobGenerations:
    """Activate generation `number` again (a rollback) of `spiders`, else of every module that has it.

    Raises:
        DeployRefused: no such module or generation.
        DeployConflict: another deploy changed these modules' generations meanwhile.
    """
    _, seen = await read_generations(coordination)
    modules = {} if seen is None else seen.modules
    names = list(spiders) or [name for name, gens in modules.items() if gens.number(number) is not None]
    lacking = [name for name in names if name not in modules or modules[name].number(number) is None]
    if lacking:
        raise DeployRefused(job, f"{', '.join(map(repr, lacking))} has no generation {number}")
    if not names:
        has = ", ".join(f"{name} {gens.generations[-1].number}" for name, gens in sorted(modules.items()))
        raise DeployRefused(job, f"no module has a generation {number} (the latest: {has or 'none'})")
    return await activate(coordination, dict.fromkeys(names, number), seen=seen, job=job)
