"""`Consumers`: the consuming side of a `NatsJetStreamQueue` — its pullers, leases, and how leases end.

A `Puller` per (topic, group) gets the messages; `Leases` turns them into deliveries; `ack`, `nack` and
`dead_letter` end them on the server (see `_queue.py` for how the contract maps onto JetStream).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import anyio

from ..._gather import Gather
from ...queue._checks import check_max_messages
from ._lease import Lease, Leases
from ._pull import Puller
from ._wire import check_stored, check_topic

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from nats.aio.client import Client
    from nats.js import JetStreamContext

    from ...queue._codec import Codec
    from ...queue._delivery import Delivery
    from ._connection import Api
    from ._dlq import DeadLetterStore
    from ._wire import Names, Raw, Replies

__all__ = ("Consumers", "Link")


class Link(NamedTuple):
    """The open connection of a queue: what its consumers call."""

    nc: Client
    js: JetStreamContext
    replies: Replies
    dlq: DeadLetterStore


class Consumers:
    """The consuming side of one `NatsJetStreamQueue` (see the module docstring).

    Args:
        link: Returns the queue's open connection; raises `anyio.ClosedResourceError` once it is closed.
        names: The queue's names.
        codec: Turns payloads back into objects.
        api: Runs JetStream API calls, retrying outages.
        url: The queue's URL, for errors.
        visibility_timeout: Seconds a delivery may stay unacked before it comes back.
        ack_wait: The server's lease, which the lease keeper renews while the queue lives.
        max_attempts: Deliveries of one message before it is dead-lettered.
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        link: Callable[[], Link],
        names: Names,
        codec: Codec,
        api: Api,
        *,
        url: str,
        visibility_timeout: float,
        ack_wait: float,
        max_attempts: int,
        clock: Callable[[], float],
    ) -> None:
        self._link = link
        self._names = names
        self._api = api
        self._url = url
        self._vis = visibility_timeout
        self._ack_wait = ack_wait
        self._max_attempts = max_attempts
        self._clock = clock
        self.pullers: dict[tuple[str, str], Puller] = {}
        self._starting: dict[tuple[str, str], anyio.Lock] = {}
        self._leases = Leases(
            codec,
            visibility_timeout=visibility_timeout,
            ack_wait=ack_wait,
            max_attempts=max_attempts,
            clock=clock,
        )
        self._acks: Gather[list[Lease], None] = Gather(self._ack_all)  # concurrent acks share a batch

    async def renew(self) -> None:
        """Extend the server's lease of every message this process holds whose renewal is due (one batch)."""
        replies = self._link().replies
        now = self._clock()
        raws = self._leases.to_renew(now, [puller.buffer for puller in self.pullers.values()])
        if raws:
            await replies.request_all([(raw.ack, b"+WPI", None) for raw in raws], self._api.timeout)
            for raw in raws:
                raw.renewed = now

    def reconnected(self) -> None:
        """The connection came back: every puller asks the server again."""
        for puller in self.pullers.values():
            puller.reconnected()

    async def close(self) -> list[Raw]:
        """Stop every puller and forget the leases; returns the buffered messages (hand them back)."""
        handed_back: list[Raw] = []
        for puller in self.pullers.values():
            handed_back += await puller.close()
        self.pullers.clear()
        self._leases.clear()
        return handed_back

    async def _puller(self, topic: str, group: str) -> Puller:
        link = self._link()
        puller = self.pullers.get((topic, group))
        if puller is not None:
            return puller
        check_topic(topic)
        if any(t == topic for t, _ in self.pullers):
            other = next(g for t, g in self.pullers if t == topic)
            raise ValueError(f"topic {topic!r} is consumed by group {other!r}, not {group!r}")
        lock = self._starting.setdefault((topic, group), anyio.Lock())
        async with lock:
            puller = self.pullers.get((topic, group))
            if puller is None:
                puller = Puller(
                    link.nc,
                    link.js,
                    self._names,
                    topic,
                    group,
                    visibility_timeout=self._vis,
                    ack_wait=self._ack_wait,
                    clock=self._clock,
                    call=self._api,
                )
                await puller.start()
                self.pullers[(topic, group)] = puller
        return puller

    async def consume(self, topic: str, group: str, max_messages: int, wait: float) -> Sequence[Delivery]:
        """Lease up to `max_messages` messages of `topic` (see `QueueBackend.consume`)."""
        check_max_messages(max_messages)
        puller = await self._puller(topic, group)
        deadline = anyio.current_time() + wait
        generation = puller.generation
        raws = await puller.fetch(max_messages)
        while True:
            self._link()
            found = await self._admit(puller, raws)
            if found or anyio.current_time() >= deadline:
                return found
            if puller.generation == generation and not await puller.wait(deadline):
                return []
            if puller.generation != generation:  # new lanes or keys, or a reconnect: ask the server
                generation = puller.generation
                raws = await puller.fetch(max_messages)
            else:
                raws = puller.take_buffered(max_messages)

    async def _admit(self, puller: Puller, raws: list[Raw]) -> list[Delivery]:
        """Turn delivered messages into deliveries; poison, overdue and not-yet-due ones are dealt with."""
        if not raws:
            return []
        nc = self._link().nc
        admitted = self._leases.admit(puller, raws)
        try:
            for raw, delay in admitted.held:  # the first delivery of a delayed message: back until due
                await nc.publish(raw.ack, f'-NAK {{"delay": {int(delay * 1e9)}}}'.encode())
            if admitted.dead:
                await self._bury(puller.topic, admitted.dead)
        except BaseException:
            self._leases.undo(admitted.deliveries)
            raise
        return admitted.deliveries

    def _end(self, delivery: Delivery) -> Lease | None:
        self._link()
        return self._leases.end(delivery)

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Finish `deliveries`; stale ones are ignored. Concurrent acks share one round trip."""
        self._link()
        leases = [lease for lease in map(self._end, deliveries) if lease is not None]
        if leases:
            await self._acks(leases)
        for lease in leases:
            if lease.raw.kt is not None:
                lease.puller.key_released(lease.raw.kt, more=lease.raw.info.pending > 0)

    async def _ack_all(self, batches: list[list[Lease]]) -> list[None]:
        replies = self._link().replies
        acks = [(lease.raw.ack, b"+ACK", None) for leases in batches for lease in leases]
        await replies.request_all(acks, self._api.timeout)
        return [None] * len(batches)

    async def nack(self, delivery: Delivery, delay: float, reason: str) -> None:
        """Hand `delivery` back for a later attempt, or to the DLQ (see `QueueBackend.nack`)."""
        replies = self._link().replies
        lease = self._end(delivery)
        if lease is None:
            return
        if lease.attempt >= self._max_attempts:
            why = f"{reason or 'nacked'} on attempt {lease.attempt} of {self._max_attempts}"
            await self._bury(delivery.topic, [(lease.raw, lease.attempt, why)])
        else:
            body = f'-NAK {{"delay": {int(delay * 1e9)}}}'.encode() if delay > 0 else b"-NAK"
            await replies.request_all([(lease.raw.ack, body, None)], self._api.timeout)
        if lease.raw.kt is not None:
            lease.puller.key_released(lease.raw.kt, more=delay <= 0)  # a delayed nack keeps the key

    async def dead_letter(self, delivery: Delivery, reason: str) -> None:
        """Move `delivery` to its topic's DLQ (see `QueueBackend.dead_letter`)."""
        lease = self._end(delivery)
        if lease is None:
            return
        await self._bury(delivery.topic, [(lease.raw, lease.attempt, reason)])
        if lease.raw.kt is not None:
            lease.puller.key_released(lease.raw.kt, more=lease.raw.info.pending > 0)

    async def _bury(self, topic: str, dead: list[tuple[Raw, int, str]]) -> None:
        """Publish DLQ entries, then ack the originals."""
        link = self._link()
        replies = link.replies
        requests = [link.dlq.entry(topic, raw, attempt, reason) for raw, attempt, reason in dead]
        check_stored(self._url, await replies.request_all(requests, self._api.timeout, keep=True))
        await replies.request_all([(raw.ack, b"+ACK", None) for raw, _, _ in dead], self._api.timeout)
