"""`RunGuard`: one holder per run id, via a renewed lease whose token fences the holder's writes."""

from __future__ import annotations

import logging
import uuid
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from ._clock import SystemClock
from ._errors import RunAlreadyActive, StaleToken
from ._groups import raise_single

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ._clock import Clock
    from ._lease import Lease, LeaseStore

__all__ = ("RunGuard",)

logger = logging.getLogger(__name__)


class RunGuard:
    """Makes sure a run id executes in one place at a time.

    `hold(run_id)` takes the run's lease (or raises `RunAlreadyActive`), renews it in the background every
    `ttl / 3` seconds while the body runs, and releases it at the end. If a renewal finds the lease lost
    (this process paused longer than `ttl` and another took the run over) the body is cancelled and
    `StaleToken` is raised. The lease's token fences every write of the holder (see `RunStateStore`).

    Args:
        leases: Where leases live: a `MemoryLeaseStore` guards one process, an `LmdbLeaseStore` all the
            processes of one host.
        ttl: Seconds a lease lives without renewal: how long a crashed holder blocks its run.
        clock: Paces renewals (a `ManualClock` in tests).

    Example:
        >>> import anyio
        >>> from mocra_dag import MemoryLeaseStore, RunAlreadyActive
        >>> async def main():
        ...     guard = RunGuard(MemoryLeaseStore(), ttl=30)
        ...     async with guard.hold("nightly-2024-05-01") as lease:
        ...         try:
        ...             async with guard.hold("nightly-2024-05-01"):
        ...                 pass
        ...         except RunAlreadyActive:
        ...             print("already running, token", lease.token)
        >>> anyio.run(main)
        already running, token 1
    """

    __slots__ = ("_clock", "_leases", "ttl")

    def __init__(self, leases: LeaseStore, *, ttl: float = 30.0, clock: Clock | None = None) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be > 0 seconds, got {ttl!r}")
        self._leases = leases
        self._clock = clock or SystemClock()
        self.ttl = ttl

    @property
    def leases(self) -> LeaseStore:
        """The lease store."""
        return self._leases

    @asynccontextmanager
    async def hold(self, run_id: str) -> AsyncIterator[Lease]:
        """Hold the lease of `run_id` while the body runs, renewing it in the background.

        Raises:
            RunAlreadyActive: Another holder has an unexpired lease on `run_id`.
            StaleToken: The lease was lost while the body ran (the body was cancelled).
        """
        lease = await self._leases.acquire(run_id, owner=uuid.uuid4().hex, ttl=self.ttl)
        if lease is None:
            raise RunAlreadyActive(run_id, await self._leases.holder(run_id))
        lost: list[BaseException] = []
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._renew, lease, lost, tg.cancel_scope, name=f"renew lease {run_id}")
                try:
                    yield lease
                finally:
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # the body's error, wrapped by the task group
            raise_single(group)
        finally:
            with anyio.CancelScope(shield=True):
                await self._leases.release(lease)
        if lost:
            raise lost[0]

    async def _renew(self, lease: Lease, lost: list[BaseException], scope: anyio.CancelScope) -> None:
        while True:
            await self._clock.sleep(self.ttl / 3)
            try:
                lease = await self._leases.renew(lease, ttl=self.ttl)
            except StaleToken as exc:
                logger.warning("run %s: lease lost (%s); cancelling the run", lease.name, exc)
                lost.append(exc)
                scope.cancel()
                return
