"""Hand results from pysyncobj's thread to tasks waiting on the event loop, without blocking either side.

pysyncobj calls a replicated command's `callback(result, error)` on its own Raft thread. That thread
must never wait for the event loop (a busy or closing loop would stall elections), and the event loop
must never wait on a thread lock for a commit. So a `Pending` is an `anyio.Event` plus a result
slot: the Raft thread fills the slot and asks the loop to set the event with
`loop.call_soon_threadsafe`, which only appends to the loop's ready queue and wakes its selector.
`anyio.from_thread.run_sync` is not used because it blocks the calling thread until the loop has run
the call; a `BlockingPortal` would block the same way. `call_soon_threadsafe` exists on asyncio only,
so the Raft plane runs on anyio's asyncio backend (`LoopBridge()` says so when created elsewhere).

A waiter that gives up (timeout, cancellation) just stops waiting; a late result fills a slot nobody
reads, which is harmless.
"""

from __future__ import annotations

import asyncio

import anyio

from ._errors import ClusterError

__all__ = ("LoopBridge", "Pending")


class Pending:
    """One result that the Raft thread delivers and one task awaits.

    Example:
        >>> import threading
        >>> async def main() -> tuple[object, int | None]:
        ...     pending = LoopBridge().pending()
        ...     threading.Thread(target=pending.resolve, args=("done", 0)).start()
        ...     return await pending.wait()
        >>> anyio.run(main)
        ('done', 0)
    """

    __slots__ = ("_done", "_error", "_loop", "_value")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._done = anyio.Event()
        self._value: object = None
        self._error: int | None = None

    def resolve(self, value: object, error: int | None) -> None:
        """Deliver `value` and pysyncobj's error code; called on the Raft thread, never blocks."""
        self._value = value
        self._error = error
        try:
            self._loop.call_soon_threadsafe(self._done.set)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    async def wait(self) -> tuple[object, int | None]:
        """Wait for the delivery; cancelling the wait leaves the Raft thread unaffected."""
        await self._done.wait()
        return self._value, self._error


class LoopBridge:
    """Creates `Pending` results bound to the running asyncio event loop.

    Raises:
        ClusterError: not called from a task on anyio's asyncio backend.
    """

    def __init__(self) -> None:
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            raise ClusterError(
                "the Raft control plane needs anyio's asyncio backend (it wakes the event loop from "
                "pysyncobj's thread with loop.call_soon_threadsafe)"
            ) from None

    def pending(self) -> Pending:
        """Return a new, empty result slot."""
        return Pending(self._loop)
