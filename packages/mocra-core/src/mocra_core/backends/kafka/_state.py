"""`State` and `StateLog`: what a `KafkaQueue` member leased and finished of a partition, kept in Kafka.

A group's committed offset says only that every record before it is done. Acks come out of order, so a
member that dies also leaves records above it that are done, and records it leased and never finished;
the next owner of the partition must skip the first (or work is done twice) and hand the second out with
`attempt + 1` (the engine re-queues the follow-ups of a redelivered message past dedup, and a message that
kills its worker must end in the DLQ). So each member writes a `State` of every partition it changed to
the partition of the same number of a *state topic* (`<lane topic>.acks.<group>`, compacted, one record
per write): before `consume` returns a lease (so no lease is ever handed out unrecorded), and in the
background after acks. The next owner reads the last record of that partition when the partition is
assigned to it. An ack the background write had not recorded yet is delivered again: at least once.
"""

from __future__ import annotations

import bisect
import logging
from typing import TYPE_CHECKING

import anyio
import msgspec

from ._driver import topic_partition

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ._driver import Consumer, TopicPartition
    from ._wire import Names, Wire

__all__ = ("DONE", "LOST", "NEW", "State", "StateLog")

logger = logging.getLogger(__name__)

DONE, LOST, NEW = 0, 1, 2
"""What a `State` says of a record: finished, leased by a member that left without finishing it, or new."""

_KEY = b"state"


class State(msgspec.Struct, array_like=True, forbid_unknown_fields=False):
    """A partition as one member left it.

    Records before `base` are done; of those in [`base`, `next`) the ones in a `done` run are done and
    the `lost` ones were leased (or inherited as lost) and not finished; the rest were waiting. What this
    member had not fetched (from `next` on) is as the previous owner's state (`inherited`) says, or new.

    Example:
        >>> state = State(base=10, next=20, done=[12, 15], lost=[10], inherited=None)
        >>> [state.verdict(offset) for offset in (9, 10, 11, 13, 16, 25)] == [DONE, LOST, NEW, DONE, NEW, NEW]
        True
    """

    base: int
    next: int
    done: list[int]  # runs [start, end) of done offsets, flattened: [start0, end0, start1, end1, ...]
    lost: list[int]  # sorted
    inherited: State | None = None

    def verdict(self, offset: int) -> int:
        """`DONE`, `LOST` or `NEW` for the record at `offset`."""
        if offset < self.base:
            return DONE
        if offset >= self.next:
            return self.inherited.verdict(offset) if self.inherited is not None else NEW
        index = bisect.bisect_right(self.done, offset)
        if index % 2:  # inside a run
            return DONE
        at = bisect.bisect_left(self.lost, offset)
        return LOST if at < len(self.lost) and self.lost[at] == offset else NEW

    def end(self) -> int:
        """The offset from which every record is `NEW`."""
        inner = self.inherited.end() if self.inherited is not None else 0
        return max(self.next if self.lost or self.done else self.base, inner)

    @classmethod
    def of(cls, offsets: Sequence[int], next: int, lost: Iterable[int], inherited: State | None) -> State:
        """The state of a partition fetched up to `next`.

        `offsets` are its records not done, ascending; `lost` those of them leased now or inherited as
        lost. Costs the records up to the last gap, not the whole window: the unleased tail of a window is
        one contiguous run.
        """
        done: list[int] = []
        count = len(offsets)
        if count:
            base, last, i = offsets[0], offsets[-1], 0
            while last - offsets[i] != count - 1 - i:  # a gap somewhere after offsets[i]
                if offsets[i + 1] != offsets[i] + 1:
                    done += (offsets[i] + 1, offsets[i + 1])
                i += 1
            if last + 1 < next:
                done += (last + 1, next)
        else:
            base = next
        if inherited is not None and inherited.end() <= next:
            inherited = None
        return cls(base=base, next=next, done=done, lost=sorted(lost), inherited=inherited)


_decoder = msgspec.msgpack.Decoder(State)


class StateLog:
    """Writes and reads the `State` records of one consumer group's partitions (see the module docstring).

    Args:
        wire: The queue's producer and admin client.
        names: The queue's Kafka names.
        group: The queue-level group name (the state topics carry it).
        fetch_wait: Seconds a fetch waits at the broker (tansu answers only after this).
    """

    def __init__(self, wire: Wire, names: Names, group: str, *, fetch_wait: float) -> None:
        self._wire = wire
        self._names = names
        self._group = group
        self._fetch_wait_ms = max(1, int(fetch_wait * 1000))
        self._consumer: Consumer | None = None

    async def _topic(self, lane_topic: str) -> str:
        name = self._names.acks(lane_topic, self._group)
        if name not in self._wire.topics:
            partitions = self._wire.topics.get(lane_topic) or await self._wire.ensure(lane_topic, 1)
            await self._wire.ensure(name, partitions, {"cleanup.policy": "compact"})
        return name

    async def write(self, states: dict[TopicPartition, State]) -> None:
        """Append the state of each partition to its state topic (concurrently)."""

        async def write_one(tp: TopicPartition, state: State) -> None:
            name = await self._topic(tp.topic)
            await self._wire.produce(name, tp.partition, [(_KEY, msgspec.msgpack.encode(state), [])])

        if len(states) == 1:
            [(tp, state)] = states.items()
            await write_one(tp, state)
            return
        async with anyio.create_task_group() as tg:
            for tp, state in states.items():
                tg.start_soon(write_one, tp, state)

    async def read(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, State]:
        """The last state written of each partition that has one."""
        wanted = {}
        for tp in tps:
            wanted[topic_partition(await self._topic(tp.topic), tp.partition)] = tp
        if not wanted:
            return {}
        consumer = await self._started()
        order = sorted(wanted)
        ends = await self._wire.retrying("reading state offsets", lambda: consumer.end_offsets(order))
        todo = [stp for stp in order if ends[stp] > 0]
        found: dict[TopicPartition, State] = {}
        if not todo:
            return found
        consumer.assign(todo)
        for stp in todo:
            consumer.seek(stp, ends[stp] - 1)  # tansu may report the end short of the last batch's end
        last: dict[TopicPartition, bytes] = {}
        try:
            with anyio.move_on_after(self._wire.request_timeout) as scope:
                while len(last) < len(todo) or any([await consumer.position(s) < ends[s] for s in todo]):
                    batches = await consumer.getmany(*todo, timeout_ms=self._fetch_wait_ms * 2)
                    for stp, records in batches.items():
                        for record in records:
                            if record.value is not None:
                                last[stp] = record.value
            if scope.cancelled_caught:
                logger.warning("kafka: read %d of %d state records in time", len(last), len(todo))
        finally:
            consumer.unsubscribe()
        for stp, value in last.items():
            try:
                found[wanted[stp]] = _decoder.decode(value)
            except msgspec.DecodeError as exc:
                logger.warning("kafka: unreadable state record in %s: %s", stp.topic, exc)
        return found

    async def _started(self) -> Consumer:
        if self._consumer is None:
            consumer = self._wire.consumer(fetch_max_wait_ms=self._fetch_wait_ms)
            try:
                await self._wire.retrying("starting a consumer", consumer.start)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await consumer.stop()
                raise
            self._consumer = consumer
        return self._consumer

    async def aclose(self) -> None:
        """Stop the reading consumer."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            with anyio.move_on_after(5, shield=True):
                await consumer.stop()
