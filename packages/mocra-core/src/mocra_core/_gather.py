"""`Gather`: concurrent calls of one kind share a broker round trip (group commit)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

import anyio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

__all__ = ("Gather",)

A = TypeVar("A")
B = TypeVar("B")


class _Abandoned(Exception):
    """The task sending a batch was cancelled mid-call: its members call again."""


class _Batch(Generic[A, B]):
    __slots__ = ("_done", "error", "finished", "gone", "items", "ready", "results", "sender")

    def __init__(self, *, ready: bool) -> None:
        self.items: list[A] = []
        self.gone: set[int] = set()  # members cancelled before the batch returned
        self.results: dict[int, B] = {}
        self.error: BaseException | None = None
        # set when the batch before it returned (a member may send this one); None: ready at once
        self.ready: anyio.Event | None = None if ready else anyio.Event()
        self.finished = False
        # made when a member has to wait for the batch to return (a lone sender never does)
        self._done: anyio.Event | None = None
        self.sender = False

    async def wait_finished(self) -> None:
        if not self.finished:
            if self._done is None:
                self._done = anyio.Event()
            await self._done.wait()

    def finish(self) -> None:
        self.finished = True
        if self._done is not None:
            self._done.set()


class Gather(Generic[A, B]):
    """Concurrent calls share one `send`: while one batch is in flight, later calls gather into the next.

    A call with nothing in flight is sent at once, alone; calls made meanwhile form the next batch, which
    one of its members sends as soon as the batch in flight returns. So N tasks calling together cost
    about two round trips, not N, and a lone caller pays nothing extra.

    `send(items)` returns one result per item, in order; if it raises, every member of the batch gets
    the exception. A member cancelled before its batch is sent is left out of it; one cancelled later
    gets no result, which goes to `orphan` instead (e.g. to keep what was leased for it). If the member
    sending a batch is cancelled mid-call, the other members call again.
    """

    __slots__ = ("_inflight", "_next", "_orphan", "_send")

    def __init__(
        self,
        send: Callable[[list[A]], Awaitable[Sequence[B]]],
        orphan: Callable[[B], None] | None = None,
    ) -> None:
        self._send = send
        self._orphan = orphan
        self._inflight: _Batch[A, B] | None = None
        self._next: _Batch[A, B] | None = None

    async def __call__(self, item: A) -> B:
        """Send `item` with whatever other calls are gathering; returns its result."""
        while True:
            batch = self._join(item)
            index = len(batch.items) - 1
            try:
                if batch.ready is not None and not batch.ready.is_set():
                    await batch.ready.wait()
                if not batch.sender:
                    await self._deliver(batch)
                await batch.wait_finished()
            except BaseException:
                self._leave(batch, index)
                raise
            if isinstance(batch.error, _Abandoned):
                continue
            if batch.error is not None:
                raise batch.error
            return batch.results[index]

    def _join(self, item: A) -> _Batch[A, B]:
        batch = self._inflight
        if batch is None:
            batch = self._inflight = _Batch(ready=True)
        elif batch.sender:  # in flight: gather the next one
            batch = self._next if self._next is not None else _Batch(ready=False)
            self._next = batch
        batch.items.append(item)
        return batch

    async def _deliver(self, batch: _Batch[A, B]) -> None:
        batch.sender = True
        live = [i for i in range(len(batch.items)) if i not in batch.gone]
        try:
            results = await self._send([batch.items[i] for i in live])
        except BaseException as exc:
            batch.error = _Abandoned() if isinstance(exc, anyio.get_cancelled_exc_class()) else exc
            self._finish(batch)
            raise
        batch.results = dict(zip(live, results, strict=True))
        self._finish(batch)
        if self._orphan is not None:
            for index in batch.gone & batch.results.keys():
                self._orphan(batch.results[index])

    def _finish(self, batch: _Batch[A, B]) -> None:
        batch.finish()
        self._inflight, self._next = self._next, None
        if self._inflight is not None and self._inflight.ready is not None:
            self._inflight.ready.set()

    def _leave(self, batch: _Batch[A, B], index: int) -> None:
        """A member was cancelled: leave it out of the batch, or hand its result to `orphan`."""
        if batch.finished:
            if index in batch.results and self._orphan is not None:
                self._orphan(batch.results[index])
            return
        batch.gone.add(index)
        if batch.sender or len(batch.gone) < len(batch.items):
            return  # the sender leaves it out, or hands its result to `orphan`
        if batch is self._next:  # nobody is left to send it
            self._next = None
        elif batch is self._inflight:
            self._finish(batch)
