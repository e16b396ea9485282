"""`ParseLanes`: a lane of parse workers per module, each fed from the module's own response topic.

A parse worker waits until its items are written before it takes the next response, so a module whose
sink takes a second per write keeps its workers waiting. With one pool for every module, that module's
responses would soon hold every worker and stall the others; with a lane per module it holds only its
own, and its feeder stops *leasing* its responses (a feeder leases only for idle workers), while the
other lanes go on. A direct hand-over from the download stage goes to an idle worker of the module's
lane; when none is idle, the download stage queues the response on the module's topic, up to as many
as the lane has workers (counted until a worker of this process leases one back). Past that the
download worker waits for the lane: the module's responses no longer pile up in memory faster than it
parses them (back-pressure on that module's downloads only; the crawl benchmark's peak RSS went from
72 MB to 110 MB without it), while the other modules' download workers go on.

Responses queued by a version before lanes sit in the legacy `response` topic (a job dir or a broker
job written then, a dead letter replayed there, a worker of the previous version during a rolling
update): the lanes look at it at start and every `LEGACY_POLL` seconds, and once it holds any, a lane
for it parses them for the rest of the run, whatever their module.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from ...topics import RESPONSES, response_topic
from .._feeder import Feeder
from .._transient import TRANSIENT

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from ...queue import Delivery, QueueBackend
    from .._outage import Outage

__all__ = ("LEGACY_POLL", "ParseLanes")

logger = logging.getLogger(__name__)

LEGACY_POLL = 5.0
"""Seconds between two looks at the legacy `response` topic while it is empty."""


class ParseLanes:
    """Feeds the parse workers of each module from its response topic (and the legacy topic, if used).

    Args:
        queue: Where the responses are queued.
        modules: The names of the run's modules: one lane each.
        should_stop: Asked by each lane's feeder; once True a lane stops when its topic has nothing
            ready (the lanes drain).
        outage: Where an unreachable broker is noted (see `Feeder`).
        legacy_poll: Seconds between two looks at the legacy topic.
    """

    def __init__(
        self,
        queue: QueueBackend,
        modules: Iterable[str],
        should_stop: Callable[[], bool],
        *,
        outage: Outage | None = None,
        legacy_poll: float = LEGACY_POLL,
    ) -> None:
        self._queue = queue
        self._should_stop = should_stop
        self._outage = outage
        self._legacy_poll = legacy_poll

        def feeder(topic: str) -> Feeder:
            return Feeder(queue, topic, "parse", should_stop, drain=True, outage=outage)

        self._lanes = {name: feeder(response_topic(name)) for name in modules}
        self._queued = dict.fromkeys(self._lanes, 0)  # responses this process queued per lane, not leased
        self._backlog = 0  # how many a lane may have queued before a hand-over waits: its workers
        self._legacy = feeder(RESPONSES)
        self._wake = anyio.Event()  # set by `stop` and `halt`: the legacy watch looks once more
        self._halted = False

    def __len__(self) -> int:
        """The number of module lanes."""
        return len(self._lanes)

    def stop(self) -> None:
        """`should_stop` turned True: the legacy watch looks at its topic once more, then returns."""
        self._wake.set()

    def halt(self) -> None:
        """Lease nothing more, now, in any lane; the workers finish what they hold."""
        self._halted = True
        for feeder in (*self._lanes.values(), self._legacy):
            feeder.halt()
        self._wake.set()

    async def hand(self, module: str, delivery: Delivery) -> bool:
        """Hand `delivery` to a worker of `module`'s lane; False (nothing done): queue it on its topic.

        An idle worker takes it at once. Otherwise False while the lane has fewer than its workers'
        number of responses queued by this process, else this waits for a worker (False if stopped).
        """
        lane = self._lanes.get(module)
        if lane is None:
            return False
        if await lane.hand(delivery, wait=False):
            return True
        if self._queued[module] < self._backlog:
            self._queued[module] += 1
            return False
        return await lane.hand(delivery, wait=True)

    async def run(self, workers: int, handle: Callable[[Delivery], Awaitable[None]]) -> None:
        """Run `workers` workers per lane calling `handle` until every lane has stopped."""
        self._backlog = workers
        async with anyio.create_task_group() as tg:
            for name, feeder in self._lanes.items():
                tg.start_soon(feeder.run, workers, self._counted(name, handle), name=f"parse-lane-{name}")
            await self._watch_legacy(workers, handle)

    def _counted(
        self, module: str, handle: Callable[[Delivery], Awaitable[None]]
    ) -> Callable[[Delivery], Awaitable[None]]:
        """`handle`, counting the module's responses leased back from its topic (see `hand`)."""
        topic = response_topic(module)
        queued = self._queued

        async def counted(delivery: Delivery) -> None:
            if delivery.topic == topic and queued[module]:
                queued[module] -= 1
            await handle(delivery)

        return counted

    async def _watch_legacy(self, workers: int, handle: Callable[[Delivery], Awaitable[None]]) -> None:
        """Run a lane on the legacy topic once it holds messages; return when stopped and it holds none."""
        while not self._halted:
            stopping = self._should_stop()  # read first: a message queued before it is seen below
            if await self._legacy_pending():
                logger.info(
                    "parsing the responses of the legacy %r topic (queued by an earlier mocra)", RESPONSES
                )
                await self._legacy.run(workers, handle)
                return
            if stopping:
                return
            with anyio.move_on_after(self._legacy_poll):
                await self._wake.wait()

    async def _legacy_pending(self) -> int:
        try:
            return await self._queue.pending(RESPONSES)
        except TRANSIENT as exc:  # the broker is out of reach: look again later
            if self._outage is None:
                raise
            self._outage.failed(exc, f"counting the legacy {RESPONSES!r} messages")
            return 0
