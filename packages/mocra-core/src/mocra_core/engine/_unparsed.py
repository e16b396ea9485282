"""`UnparsedMarks`: which attempts of a request ended before its response reached a parse worker.

With direct parse a request's delivery stays leased through the parse of its response, so a redelivered
request (`attempt > 1`) may have been parsed already: some of its follow-ups may have been recorded as
seen without reaching the queue, and the frontier must queue its seen links once more (see `Frontier`).
Most redeliveries are download retries (a 503, a timeout), which never reached parse; re-queueing for
them would refetch pages for nothing. So the download stage counts, in the job's coordination store,
every attempt it hands back itself, and a request counts as redelivered only if some earlier attempt is
not accounted for that way (a worker died holding it, or its parse failed). Any doubt (the store out of
reach) counts as redelivered: at least once, never lost.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ._transient import TRANSIENT

if TYPE_CHECKING:
    from ..coordination import Coordination
    from ..queue import Delivery

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
        return f"unparsed/{delivery.topic}/{delivery.id}"

    async def note(self, delivery: Delivery) -> None:
        """Record that this attempt ends unparsed (call before handing the delivery back)."""
        with contextlib.suppress(*TRANSIENT):  # unrecorded: the next attempt counts as redelivered
            await self._coordination.incr(self._key(delivery))

    async def redelivered(self, delivery: Delivery) -> bool:
        """Whether an earlier attempt of this request may have reached parse."""
        if delivery.attempt <= 1:
            return False
        try:
            unparsed = await self._coordination.incr(self._key(delivery), 0)
        except TRANSIENT:
            return True
        return unparsed < delivery.attempt - 1

    async def forget(self, delivery: Delivery) -> None:
        """Drop the count of a request that is done (only retried requests have one)."""
        if delivery.attempt > 1:
            with contextlib.suppress(*TRANSIENT):
                await self._coordination.delete(self._key(delivery))
