"""`Lanes`: the lane topics a `KafkaQueue` writes to, and how a publish picks its partitions."""

from __future__ import annotations

import itertools
import math
import secrets
import time
from typing import TYPE_CHECKING

import anyio

from ...queue._envelope import Envelope, pack
from ._driver import partition_for, topic_partition
from ._wire import due_header

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ._driver import Out, TopicPartition
    from ._wire import Names, Wire

__all__ = ("Lanes",)

SPREAD = 100
"""An unkeyed publish of more messages than this is split across partitions (contiguous runs)."""


class Lanes:
    """Creates lane topics on first use and writes messages to them; remembers what it wrote.

    A keyed message goes to the key's partition (murmur2, as Kafka's Java client); an unkeyed publish goes
    to one partition, round robin over calls, so a batch keeps its order, unless it is larger than
    `SPREAD`. Every message gets a `created` time later than any this object gave out before, which is
    how a reader orders messages of one lane across partitions.

    The first use of a topic creates its `eager` lanes too, so that consumers subscribe to them from
    the start: a lane created later makes every consumer group of the topic rebalance (on tansu the
    consumers stand still for half the session timeout).

    Args:
        wire: The queue's producer and admin client.
        names: The queue's Kafka names.
        partitions: Partitions of each lane topic created.
        on_new_lane: Called with (topic, Kafka topic, lane) when a lane topic is first used.
        eager: Lanes created with the topic.
    """

    def __init__(
        self,
        wire: Wire,
        names: Names,
        partitions: int,
        on_new_lane: Callable[[str, str, int], None],
        eager: Sequence[int] = (0,),
    ) -> None:
        self._wire = wire
        self._names = names
        self._partitions = partitions
        self._on_new_lane = on_new_lane
        self._eager = tuple(dict.fromkeys(eager))
        self._opened: set[str] = set()  # topics whose eager lanes exist
        self.published: dict[TopicPartition, int] = {}  # offset after what was written, by partition
        self._known: dict[str, int] = {}  # lane topic -> partitions
        self._round_robin = itertools.count()
        self._ids = map(f"{secrets.token_hex(6)}.{{:x}}".format, itertools.count(1))
        self._last_created = 0.0

    async def ensure(self, topic: str, lane: int) -> tuple[str, int]:
        """The Kafka topic of a lane (created if needed, with the topic's eager lanes) and its partitions."""
        name = self._names.lane(topic, lane)
        partitions = self._known.get(name)
        if partitions is None and topic not in self._opened:
            for other in self._eager:
                if other != lane:
                    await self.ensure_one(topic, other)
            self._opened.add(topic)
        if partitions is None:
            partitions = await self.ensure_one(topic, lane)
        return name, partitions

    async def ensure_one(self, topic: str, lane: int) -> int:
        """Create one lane topic unless this object knows it; its partition count."""
        name = self._names.lane(topic, lane)
        partitions = self._known.get(name)
        if partitions is None:
            partitions = self._known[name] = await self._wire.ensure(name, self._partitions)
            self._on_new_lane(topic, name, lane)
        return partitions

    def records(
        self, topic: str, bodies: Sequence[bytes], key: str | None, lane: int, delay: float
    ) -> list[Out]:
        """New messages (fresh ids) as records to produce."""
        created = max(time.time(), self._last_created + 1e-6)
        self._last_created = created + (len(bodies) - 1) * 1e-6
        headers = due_header(delay)
        key_bytes = key.encode() if key is not None else None
        ids = self._ids
        return [
            (
                key_bytes,
                pack(
                    Envelope(
                        id=next(ids), topic=topic, body=b, created=created + i * 1e-6, key=key, priority=lane
                    )
                ),
                headers,
            )
            for i, b in enumerate(bodies)
        ]

    async def send(self, topic: str, lane: int, key: str | None, records: list[Out]) -> None:
        """Write `records` (all with `key`) to a lane, in order."""
        name, partitions = await self.ensure(topic, lane)
        if key is not None:
            await self.produce(name, partition_for(key, partitions), records)
            return
        start = next(self._round_robin)
        if len(records) <= SPREAD:
            await self.produce(name, start % partitions, records)
            return
        size = math.ceil(len(records) / min(partitions, math.ceil(len(records) / SPREAD)))
        async with anyio.create_task_group() as tg:
            for n, i in enumerate(range(0, len(records), size)):
                tg.start_soon(self.produce, name, (start + n) % partitions, records[i : i + size])

    async def produce(self, name: str, partition: int, records: list[Out]) -> None:
        """Write `records` to one partition and remember how far this queue wrote."""
        end = await self._wire.produce(name, partition, records)
        tp = topic_partition(name, partition)
        self.published[tp] = max(self.published.get(tp, 0), end)
