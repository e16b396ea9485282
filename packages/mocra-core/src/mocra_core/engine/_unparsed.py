"""`UnparsedMarks`: which attempts of a request ended before its response reached a parse worker.

With direct parse a request's delivery stays leased through the parse of its response, so a redelivered
request (`attempt > 1`) may have been parsed already: some of its follow-ups may have been recorded as
seen without reaching the queue, and the frontier must queue its seen links once more (see `Frontier`).
Most redeliveries are download retries (a 503, a timeout), which never reached parse; re-queueing for
them would refetch pages for nothing. So the download stage counts, in the job's coordination store,
every attempt it hands back itself, and a request counts as redelivered only if some earlier attempt is
not accounted for that way (a worker died holding it, or its parse failed). Any doubt (the store out of
reach) counts as redelivered: at least once, never lost.

A redelivered request's response may also go through its module's response queue (no parse worker was
idle): that response is a new message, on its first attempt, so its parse asks about the request it
was downloaded for, named by the response's `Fence` (`request_redelivered`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ._transient import TRANSIENT

if TYPE_CHECKING:
    from ..coordination import Coordination
    from ..queue import Delivery, Fence

__all__ = ("UnparsedMarks",)


class UnparsedMarks:
    """Counts per request message the attempts the download stage handed back (never parsed).

    Example:
        >>> import anyio
        >>> from mocra_core.coordination import LocalCoordination
        >>> from mocra_core.queue import Delivery
        >>> async def main() -> tuple[bool, bool]:
        ...     marks = UnparsedMarks(LocalCoordination())
        ...     first = Delivery("7", "request", "https://example.com/", None, 0, 1, 0.0)
        ...     await marks.note(first)  # a 503: back to the queue, never parsed
        ...     second = Delivery("7", "request", "https://example.com/", None, 0, 2, 0.0)
        ...     return await marks.redelivered(first), await marks.redelivered(second)
        >>> anyio.run(main)
        (False, False)
    """

    __slots__ = ("_coordination",)

    def __init__(self, coordination: Coordination) -> None:
        self._coordination = coordination

    @staticmethod
    def _key(delivery: Delivery) -> str:
        return _key_of(f"{delivery.topic}/{delivery.id}")  # the message's claim (`Fence.claim`)

    async def note(self, delivery: Delivery) -> None:
        """Record that this attempt ends unparsed (call before handing the delivery back)."""
        with contextlib.suppress(*TRANSIENT):  # unrecorded: the next attempt counts as redelivered
            await self._coordination.incr(self._key(delivery))

    async def redelivered(self, delivery: Delivery) -> bool:
        """Whether an earlier attempt of this request may have reached parse."""
        return await self._parsed_before(self._key(delivery), delivery.attempt)

    async def request_redelivered(self, fence: Fence) -> bool:
        """Whether an earlier attempt of the request a queued response was fetched for may have been parsed.

        `fence` is the response's (`Response.fence`): the request's claim, and as its attempt the token,
        which also counts the attempts the request used before a replay from the dead-letter queue, so
        after a replay the answer leans to yes.

        Example:
            >>> import anyio
            >>> from mocra_core.coordination import LocalCoordination
            >>> from mocra_core.queue import Delivery, Fence
            >>> async def main() -> tuple[bool, bool]:
            ...     marks = UnparsedMarks(LocalCoordination())
            ...     # attempt 1 was parsed directly by a worker that died; attempt 2's response was queued
            ...     died = await marks.request_redelivered(Fence("request/7", 2))
            ...     await marks.note(Delivery("8", "request", "https://x.org/", None, 0, 1, 0.0))  # a 503
            ...     return died, await marks.request_redelivered(Fence("request/8", 2))
            >>> anyio.run(main)
            (True, False)
        """
        return await self._parsed_before(_key_of(fence.claim), fence.token)

    async def _parsed_before(self, key: str, attempt: int) -> bool:
        """Whether fewer attempts before `attempt` were handed back unparsed than were made."""
        if attempt <= 1:
            return False
        try:
            unparsed = await self._coordination.incr(key, 0)
        except TRANSIENT:
            return True
        return unparsed < attempt - 1

    async def forget(self, delivery: Delivery) -> None:
        """Drop the count of a request that is done (only retried requests have one)."""
        if delivery.attempt > 1:
            with contextlib.suppress(*TRANSIENT):
                await self._coordination.delete(self._key(delivery))

    async def forget_request(self, fence: Fence) -> None:
        """Drop the count of the request whose queued response (of claim `fence`) is done."""
        if fence.token > 1:
            with contextlib.suppress(*TRANSIENT):
                await self._coordination.delete(_key_of(fence.claim))


def _key_of(claim: str) -> str:
    """The coordination counter of a request message's unparsed attempts, by its claim (`topic/id`)."""
    return f"unparsed/{claim}"
