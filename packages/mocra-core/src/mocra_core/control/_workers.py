"""`WorkerRegistry`: the live workers of a job, from the heartbeats they leave in its coordination store.

Each worker writes its `WorkerInfo` under `workers/<id>` every `HEARTBEAT` seconds with a `WORKER_TTL`
expiry, and its id once in the list `workers` (the coordination protocol lists no keys). A reader takes
the list and keeps the ids whose key is still there: a worker killed with `kill -9` vanishes after the
TTL, one that ends its run deletes its key at once.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
from typing import TYPE_CHECKING

import anyio
import msgspec

from .._errors import BackendError
from ..coordination import CoordinationError
from ._snapshot import WorkerInfo

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..coordination import Coordination

__all__ = ("HEARTBEAT", "WORKERS_KEY", "WORKER_TTL", "WorkerRegistry", "new_worker_id")

logger = logging.getLogger(__name__)

HEARTBEAT = 1.0
"""Seconds between two heartbeats of a worker."""
WORKER_TTL = 5.0
"""Seconds a heartbeat stays: a worker that missed this long is gone."""
WORKERS_KEY = "workers"
"""The list of the ids of every worker that joined the job."""
_KEPT = 1_000  # ids read at most (the latest): a job restarted more often shows its latest workers
_OUT_OF_REACH = (BackendError, CoordinationError, TimeoutError)
_numbers = itertools.count(1)


def new_worker_id() -> str:
    """`<host>:<pid>:<n>`, unique per engine of this process.

    Example:
        >>> host, pid, n = new_worker_id().rsplit(":", 2)
        >>> int(pid) == os.getpid(), int(n) > 0
        (True, True)
    """
    return f"{socket.gethostname()}:{os.getpid()}:{next(_numbers)}"


class WorkerRegistry:
    """The heartbeats of a job's workers in its coordination store.

    Args:
        coordination: The job's coordination store.
        ttl: Seconds a heartbeat stays.
        interval: Seconds between two heartbeats (`beat_every`).

    Example:
        >>> import anyio, time
        >>> from mocra_core.coordination import LocalCoordination
        >>> async def main() -> list[str]:
        ...     async with LocalCoordination() as store:
        ...         workers = WorkerRegistry(store)
        ...         now = time.time()
        ...         info = WorkerInfo(id="h:1:1", host="h", pid=1, started=now, seen=now, state="active")
        ...         await workers.join(info.id)
        ...         await workers.beat(info)
        ...         return [worker.id for worker in await workers.live()]
        >>> anyio.run(main)
        ['h:1:1']
    """

    def __init__(
        self, coordination: Coordination, *, ttl: float = WORKER_TTL, interval: float = HEARTBEAT
    ) -> None:
        self._coordination = coordination
        self._ttl = ttl
        self._interval = interval

    async def join(self, worker: str) -> None:
        """Add `worker` to the job's list of workers (once per run)."""
        await self._coordination.append(WORKERS_KEY, worker.encode())

    async def beat(self, info: WorkerInfo) -> None:
        """Say that `info.id` is alive, as `info` describes it, for the next `ttl` seconds."""
        await self._coordination.set(_key(info.id), msgspec.json.encode(info), ttl=self._ttl)

    async def leave(self, worker: str) -> None:
        """`worker` ended its run: gone from `live` at once."""
        await self._coordination.delete(_key(worker))

    async def live(self) -> list[WorkerInfo]:
        """The job's workers whose heartbeat is fresh, in the order they joined."""
        ids = list(dict.fromkeys(await self._coordination.items(WORKERS_KEY)))[-_KEPT:]
        found: list[WorkerInfo] = []
        for raw in ids:
            value = await self._coordination.get(_key(raw.decode()))
            if value is not None:
                found.append(msgspec.json.decode(value, type=WorkerInfo))
        return found

    async def beat_every(self, worker: str, describe: Callable[[], WorkerInfo]) -> None:
        """Join, then beat every `interval` seconds with `describe()` until cancelled; then leave.

        A heartbeat that fails (the store out of reach) is logged and tried again next time.
        """
        joined = False
        try:
            while True:
                try:
                    if not joined:
                        await self.join(worker)
                        joined = True
                    await self.beat(describe())
                except _OUT_OF_REACH as exc:
                    logger.debug("heartbeat of %s failed, next time: %s", worker, exc)
                await anyio.sleep(self._interval)
        finally:
            if joined:
                with anyio.move_on_after(2.0, shield=True):
                    try:
                        await self.leave(worker)
                    except _OUT_OF_REACH as exc:  # gone after its TTL instead
                        logger.debug("%s could not leave: %s", worker, exc)


def _key(worker: str) -> str:
    return f"workers/{worker}"
