"""`LeaseKeeper`: the background task that keeps a networked queue's leases alive while it is open.

A worker killed with SIGKILL cannot hand its leases back; what tells the others it is gone is that its
keeper stops: on Redis its heartbeat lapses (the others claim its leases at once), on NATS its leases stop
being extended (the server redelivers them within the short `ack_wait`). Both take `liveness_timeout`
seconds, far less than the visibility timeout.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio

from .._errors import BackendError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from anyio.abc import TaskStatus

__all__ = ("LeaseKeeper", "check_liveness")

logger = logging.getLogger(__name__)


def check_liveness(liveness_timeout: float) -> None:
    """Raise `ValueError` unless `liveness_timeout` is a positive number of seconds."""
    if not isinstance(liveness_timeout, int | float) or not liveness_timeout > 0:
        raise ValueError(f"liveness_timeout must be > 0 seconds, got {liveness_timeout!r}")


class LeaseKeeper:
    """Calls `keep()` every `every` seconds from `start` until `stop`, in a task group of its own.

    A failing call (the broker is away) is logged and tried again at the next tick: the leases it would
    have kept then lapse as if the worker were dead, which is what the others can tell of it anyway.

    Example:
        >>> import anyio
        >>> async def main():
        ...     ticks = []
        ...     async def keep():
        ...         ticks.append(1)
        ...     keeper = LeaseKeeper(keep, every=0.01, what="example")
        ...     await keeper.start()
        ...     await anyio.sleep(0.1)
        ...     await keeper.stop()
        ...     return len(ticks) > 2
        >>> anyio.run(main)
        True
    """

    def __init__(self, keep: Callable[[], Awaitable[None]], *, every: float, what: str) -> None:
        self._keep = keep
        self.every = every
        self._what = what
        self._stack: AsyncExitStack | None = None
        self._scope: anyio.CancelScope | None = None

    async def start(self) -> None:
        """Start ticking; the first call runs at once."""
        stack = AsyncExitStack()
        outer = await stack.enter_async_context(anyio.create_task_group())
        # the ticking task's own scope: cancelling the outer group's would cancel the caller's code too
        self._scope = await outer.start(self._host, name=f"lease keeper of {self._what}")
        self._stack = stack

    async def _host(self, *, task_status: TaskStatus[anyio.CancelScope]) -> None:
        with anyio.CancelScope() as scope:
            task_status.started(scope)
            await self._run()

    def cancel(self) -> None:
        """Stop ticking (the task group is left by `stop`)."""
        if self._scope is not None:
            self._scope.cancel()

    async def stop(self) -> None:
        """Stop ticking and leave the task group; call it from the task that called `start`."""
        self.cancel()
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _run(self) -> None:
        failing = False
        while True:
            try:
                await self._keep()
            except anyio.ClosedResourceError:
                return
            except Exception as exc:  # never raise: it would cancel the task that opened the queue
                if not failing:
                    logger.warning("could not keep the leases of %s alive: %s", self._what, exc,
                                   exc_info=not isinstance(exc, BackendError))  # fmt: skip
                failing = True
            else:
                if failing:
                    logger.info("keeping the leases of %s alive again", self._what)
                failing = False
            await anyio.sleep(self.every)
