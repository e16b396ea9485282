"""`GenerationWatch`: a worker's eye on its job's generations, and whether its file is the active code."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import anyio

from ._deploy import prepare
from ._errors import DeployRefused
from ._record import decode
from ._store import GENERATIONS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ..coordination import Coordination
    from ._record import JobGenerations

__all__ = ("GenerationWatch", "active_in_file")


class GenerationWatch:
    """Polls a job's coordination store and yields its generations each time they change (a new epoch).

    What a worker started with `--reload` follows: an activation (a deploy, a rollback) shows up within
    `interval` seconds.

    Example:
        >>> import anyio
        >>> from mocra_core.coordination import LocalCoordination
        >>> from mocra_core.generations import activate
        >>> async def main() -> dict[str, int]:
        ...     store = LocalCoordination()
        ...     await activate(store, {"news": "a1"}, seen=None, job="j")
        ...     async for record in GenerationWatch(store, interval=0.01).changes():
        ...         if record.active() == {"news": 2}:
        ...             return record.active()
        ...         await activate(store, {"news": "b2"}, seen=record, job="j")  # a deploy meanwhile
        ...     return {}
        >>> anyio.run(main)
        {'news': 2}
    """

    def __init__(self, coordination: Coordination, *, interval: float = 1.0) -> None:
        self._coordination = coordination
        self._interval = interval

    async def changes(self) -> AsyncIterator[JobGenerations]:
        """The record as it is now (once there is one), then each time its epoch moves on."""
        epoch: int | None = None
        while True:
            raw = await self._coordination.get(GENERATIONS)
            if raw is not None:
                record = decode(raw)
                if record.epoch != epoch:
                    epoch = record.epoch
                    yield record
            await anyio.sleep(self._interval)


async def active_in_file(
    path: str, record: JobGenerations, *, python: str = sys.executable
) -> dict[str, int]:
    """The modules of the file `path` whose code (as it is now, imported apart) is their active generation.

    A worker with `--reload` re-imports its file only for these (the trust model: it loads only the file
    it was started with, never code from the store, and only once that file is what was activated);
    empty when the file fails to import or holds other code.
    """
    try:
        probe = await prepare(path, python=python)
    except DeployRefused:
        return {}
    found: dict[str, int] = {}
    for name, code in probe.modules.items():
        gens = record.modules.get(name)
        active = None if gens is None else gens.active
        if active is not None and active.hash == code:
            found[name] = active.number
    return found
