"""`DeadLetters`: the DLQ topics of a `KafkaQueue`, read back through one group-less consumer.

A DLQ topic (`ns.<topic>.dlq`, one partition, `cleanup.policy=compact`) holds one record per dead letter,
keyed by the message id; `replay` writes a tombstone (a record with no value) for each id it sends back,
so reading the log from the beginning and applying records in order yields what is still dead, oldest
first, and compaction can drop what was replayed. The same consumer answers offset queries for `pending`,
and a second one reads the last record of partitions: tansu 0.6 reports the end offset of a partition as
one past the *first* offset of its last record batch, so `exact_ends` checks where that batch ends.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from ..._errors import PoisonMessage
from ...queue._delivery import DeadLetter
from ...queue._envelope import Envelope, pack, unpack
from ._driver import topic_partition
from ._wire import RAW

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...queue._codec import Codec
    from ._driver import Consumer, Out, Record, TopicPartition
    from ._lanes import Lanes
    from ._wire import Names, Wire

__all__ = ("DeadLetters",)

logger = logging.getLogger(__name__)


class _View:
    __slots__ = ("entries", "next", "tp")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.next = 0  # offset after the last record applied
        self.entries: dict[str, tuple[Envelope, bool]] = {}  # id -> (envelope, raw), oldest first

    def apply(self, record: Record) -> None:
        if record.offset < self.next or record.key is None:
            return
        self.next = record.offset + 1
        id = record.key.decode()
        self.entries.pop(id, None)
        if record.value is None:
            return  # replayed
        try:
            env = unpack(record.value)
        except PoisonMessage as exc:
            logger.warning("kafka: unreadable record %d in %s: %s", record.offset, self.tp.topic, exc.reason)
            return
        self.entries[id] = (env, any(name == RAW for name, _ in record.headers))


class DeadLetters:
    """Reads DLQ topics (see the module docstring); one instance per queue."""

    def __init__(self, wire: Wire, names: Names, codec: Codec, *, fetch_wait: float) -> None:
        self._wire = wire
        self._names = names
        self._codec = codec
        self._fetch_wait_ms = max(1, int(fetch_wait * 1000))
        self._consumer: Consumer | None = None
        self._peeker: Consumer | None = None
        self._views: dict[str, _View] = {}
        self._lock = anyio.Lock()
        self._closed = False

    async def _started(self) -> Consumer:
        if self._consumer is None:
            self._consumer = await self._start()
        return self._consumer

    async def _start(self) -> Consumer:
        if self._closed:
            raise anyio.ClosedResourceError
        consumer = self._wire.consumer(fetch_max_wait_ms=self._fetch_wait_ms)
        try:
            await self._wire.retrying("starting a consumer", consumer.start)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await consumer.stop()
            raise
        return consumer

    async def exact_ends(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """End offsets, checked by reading the last record of every partition that has any."""
        ends = await self.end_offsets(tps)
        todo = [tp for tp in tps if ends[tp] > 0]
        if not todo:
            return ends
        async with self._lock:
            if self._peeker is None:
                self._peeker = await self._start()
            peeker = self._peeker
            peeker.assign(todo)
            for tp in todo:
                peeker.seek(tp, ends[tp] - 1)
            seen: set[TopicPartition] = set()
            with anyio.move_on_after(max(1.0, self._fetch_wait_ms / 100)):
                while len(seen) < len(todo):
                    batches = await peeker.getmany(*todo, timeout_ms=self._fetch_wait_ms * 2)
                    for tp, records in batches.items():
                        if records:
                            seen.add(tp)
                            ends[tp] = max(ends[tp], records[-1].offset + 1)
            peeker.unsubscribe()
        return ends

    async def end_offsets(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The offsets after the last record of each partition."""
        consumer = await self._started()
        found: dict[TopicPartition, int] = await self._wire.retrying(
            "reading end offsets", lambda: consumer.end_offsets(tps)
        )
        return found

    async def beginning_offsets(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The offsets of the first record each partition still has."""
        consumer = await self._started()
        found: dict[TopicPartition, int] = await self._wire.retrying(
            "reading start offsets", lambda: consumer.beginning_offsets(tps)
        )
        return found

    async def entries(self, topic: str) -> dict[str, tuple[Envelope, bool]]:
        """What is dead in `topic`'s DLQ now (id -> (envelope, raw)), oldest first."""
        name = self._names.dlq(topic)
        async with self._lock:
            view = self._views.get(topic)
            if view is None:
                if name not in self._wire.topics and name not in await self._wire.list_topics(name):
                    return {}
                consumer = await self._started()
                view = self._views[topic] = _View(topic_partition(name, 0))
                consumer.assign([v.tp for v in self._views.values()])
                for other in self._views.values():
                    consumer.seek(other.tp, other.next)
            await self._catch_up(view)
            return view.entries

    async def _catch_up(self, view: _View) -> None:
        consumer = await self._started()
        [end] = (await self.end_offsets([view.tp])).values()
        while view.next < end:
            batches = await self._wire.retrying(
                "reading a DLQ",
                lambda: consumer.getmany(view.tp, timeout_ms=self._fetch_wait_ms * 5, max_records=1000),
            )
            records = batches.get(view.tp, ())
            for record in records:
                view.apply(record)
            if not records and await consumer.position(view.tp) >= end:
                break  # the rest is gone (compacted) or not records (markers)

    def letter(self, topic: str, env: Envelope, raw: bool) -> DeadLetter:
        """The `DeadLetter` of a DLQ entry; its payload is the raw bytes if the codec cannot read it."""
        payload: object = env.body
        if not raw:
            try:
                payload = self._codec.decode(env.body)
            except Exception:  # documented: undecodable payloads come back as bytes
                payload = env.body
        return DeadLetter(
            env.id,
            topic,
            payload,
            env.key,
            env.attempt,
            env.reason or "",
            env.failed_at or 0.0,
            env.priority,
            env.created,
        )

    async def replay(self, topic: str, ids: Sequence[str] | None, lanes: Lanes) -> int:
        """Republish dead letters of `topic` (all, or those of `ids`) through `lanes` with attempt 1.

        The attempts each had used are added to its `prior_attempts` (its fence keeps rising).

        Then write a tombstone per id to the DLQ and drop them from the view; returns how many.
        """
        entries = await self.entries(topic)
        chosen = list(entries) if ids is None else [i for i in dict.fromkeys(ids) if i in entries]
        if not chosen:
            return 0
        batches: dict[tuple[int, str | None], list[Out]] = {}
        for id in chosen:
            env, raw = entries[id]
            prior = env.prior_attempts + env.attempt  # its fence goes on rising (`Fence`)
            again = Envelope(
                id=env.id, topic=topic, body=env.body, created=env.created, key=env.key,
                priority=env.priority, prior_attempts=prior,
            )  # fmt: skip
            record_key = env.key.encode() if env.key is not None else None
            value = env.body if raw else pack(again)
            batches.setdefault((env.priority, env.key), []).append((record_key, value, []))
        for (lane, key), records in batches.items():
            await lanes.send(topic, lane, key, records)
        tombstones: list[Out] = [(id.encode(), None, []) for id in chosen]
        await self._wire.produce(self._names.dlq(topic), 0, tombstones)
        view = self._views.get(topic)
        if view is not None:
            for id in chosen:
                view.entries.pop(id, None)
        return len(chosen)

    async def aclose(self) -> None:
        """Stop the consumers."""
        self._closed = True
        consumers = [c for c in (self._consumer, self._peeker) if c is not None]
        self._consumer = self._peeker = None
        with anyio.move_on_after(5, shield=True):
            for consumer in consumers:
                await consumer.stop()
