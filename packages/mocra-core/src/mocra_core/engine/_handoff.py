"""`Handoff`: an unbuffered handover from producers to workers that serves the highest priority first.

An anyio memory stream of size 0 serves blocked senders first come, first served: when every worker is
busy, a request of the crawl's spine (a higher lane: the next listing page) waits behind every page
downloaded before it. Here a free worker takes the waiting offer with the highest priority (first come
first within a priority), so priority holds inside a process as it does in the queue.

A `put` or `get` that finds its counterpart waiting hands over without yielding to the event loop (it
still raises if cancelled): on the crawl's hot path a pass of the loop per page is a task wake-up per page.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

__all__ = ("Handoff",)

T = TypeVar("T")


class _Offer(Generic[T]):
    __slots__ = ("item", "taken", "withdrawn")

    def __init__(self, item: T) -> None:
        self.item = item
        self.taken = anyio.Event()
        self.withdrawn = False


class _Claim(Generic[T]):
    __slots__ = ("filled", "item", "ready")

    def __init__(self) -> None:
        self.ready = anyio.Event()
        self.filled = False
        self.item: T | None = None


class Handoff(Generic[T]):
    """Hands items from `put` to `get` one at a time, highest priority first; `put` waits for a taker.

    Example:
        >>> import anyio
        >>> async def main() -> list[str]:
        ...     handoff: Handoff[str] = Handoff()
        ...     got: list[str] = []
        ...     async with anyio.create_task_group() as tg:
        ...         tg.start_soon(handoff.put, "low", 0)
        ...         tg.start_soon(handoff.put, "high", 5)
        ...         await anyio.sleep(0.01)  # both wait: no worker yet
        ...         got += [await handoff.get(), await handoff.get()]
        ...     return got
        >>> anyio.run(main)
        ['high', 'low']
    """

    def __init__(self) -> None:
        self._offers: list[tuple[int, int, _Offer[T]]] = []  # heap of waiting puts: (-priority, seq, offer)
        self._claims: deque[_Claim[T]] = deque()  # waiting gets, oldest first
        self._seq = itertools.count()
        self._closed = False

    def close(self) -> None:
        """Refuse further puts; gets take the offers still waiting, then raise `anyio.EndOfStream`."""
        self._closed = True
        if not self._offers:
            for claim in self._claims:
                claim.ready.set()  # unfilled: end of stream
            self._claims.clear()

    def put_nowait(self, item: T) -> None:
        """Hand `item` to a waiting worker without yielding; `anyio.WouldBlock` if none waits.

        Handing out a batch this way costs one pass of the event loop for the batch, not one per item.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        while self._claims:
            claim = self._claims.popleft()
            if not claim.ready.is_set():  # not given up by a cancelled worker
                claim.item, claim.filled = item, True
                claim.ready.set()
                return
        raise anyio.WouldBlock

    async def put(self, item: T, priority: int = 0) -> None:
        """Hand `item` to a worker, waiting for one; `anyio.ClosedResourceError` once closed.

        Cancelled while waiting, the item is withdrawn, unless a worker took it in the meantime (it
        is then the worker's: the cancellation is raised all the same).
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        try:
            self.put_nowait(item)
        except anyio.WouldBlock:
            pass
        else:
            return  # handed over: no pass of the event loop (the worker runs when this task next waits)
        offer = _Offer(item)
        heapq.heappush(self._offers, (-priority, next(self._seq), offer))
        try:
            await offer.taken.wait()
        except BaseException:
            offer.withdrawn = not offer.taken.is_set()
            raise

    async def get(self) -> T:
        """The waiting offer of highest priority, or the next one put; `anyio.EndOfStream` at the end."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        while self._offers:
            _, _, offer = heapq.heappop(self._offers)
            if not offer.withdrawn:
                offer.taken.set()
                return offer.item  # no pass of the event loop: the crawl's hot path (a wake-up a page)
        if self._closed:
            raise anyio.EndOfStream
        claim: _Claim[T] = _Claim()
        self._claims.append(claim)
        try:
            await claim.ready.wait()
        except BaseException:
            claim.ready.set()  # a put passes it by; an item given meanwhile stays with the caller's owner
            raise
        if not claim.filled:
            raise anyio.EndOfStream
        return claim.item  # type: ignore[return-value]
