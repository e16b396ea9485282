"""`DirectProducer`: produce requests sent from the calling task, one request per broker at a time.

aiokafka's producer hands a batch to a sender task, which starts a task per request and resolves the
batch's future from there: about seven event-loop hops per produce, several milliseconds inside a busy
worker, on every hop of a crawl over Kafka (publish a follow-up, record a lease, record an ack). Here the
caller builds the record batch and sends the request on the client's connection itself. Produces to
partitions led by one broker that are made while its request is in flight share the next request
(`Gather`), so a produce costs one round trip and a hop or two, and a busy process sends few requests.
A partition's records keep their order: one request per broker is in flight, and records of one
partition in one request form one batch, in call order.
"""

from __future__ import annotations

import bisect
from functools import partial
from typing import TYPE_CHECKING

import anyio

from ..._gather import Gather
from ._driver import driver_errors, new_record_batch, produce_request, topic_partition

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._driver import Client, Out, TopicPartition

__all__ = ("DirectProducer",)

_Call = tuple["TopicPartition", "Sequence[Out]"]


class _Part:
    """The records of one partition in one gathered produce, cut into record batches."""

    __slots__ = ("bases", "batches", "error", "records")

    def __init__(self) -> None:
        self.records: list[Out] = []
        self.batches: list[tuple[int, bytearray]] = []  # (index of its first record, the batch)
        self.bases: list[int] = []  # the offset the broker gave the first record of each batch written
        self.error: BaseException | None = None

    def end_of(self, index: int) -> int | BaseException:
        """The offset after record `index` if its batch was written, else the error that stopped it."""
        at = bisect.bisect_right(self.batches, index, key=lambda batch: batch[0]) - 1
        if at < len(self.bases):
            return self.bases[at] + index - self.batches[at][0] + 1
        assert self.error is not None
        return self.error


class DirectProducer:
    """Appends records to partitions with produce requests of its own (see the module docstring).

    Args:
        client: A bootstrapped aiokafka client (connections and metadata).
        timeout: Seconds a request may take (the broker's own timeout too).
        max_batch: Bytes of one record batch at most (the broker's `message.max.bytes`).
    """

    def __init__(self, client: Client, *, timeout: float, max_batch: int = 1 << 20) -> None:
        self._client = client
        self._timeout = timeout
        self._max_batch = max_batch
        self._nodes: dict[int, Gather[_Call, int | BaseException]] = {}

    async def produce(self, topic: str, partition: int, records: Sequence[Out]) -> int:
        """Append `records` to one partition, in order; returns the offset after the last one.

        Raises the driver's error (a connection error, a timeout, a partition error such as
        `NotLeaderForPartitionError`); the caller decides what to retry. Records of a call larger than
        one batch go in several requests: a failure after the first leaves the first ones written.
        """
        if not records:
            raise ValueError("nothing to produce")
        tp = topic_partition(topic, partition)
        node = await self._leader(tp)
        gather = self._nodes.get(node)
        if gather is None:
            gather = self._nodes[node] = Gather(partial(self._send, node))
        end = await gather((tp, records))
        if isinstance(end, BaseException):
            raise end
        return end

    async def _leader(self, tp: TopicPartition) -> int:
        node = self._client.cluster.leader_for_partition(tp)
        if node is None or node < 0:
            await self._client.add_topic(tp.topic)
            await self._client.force_metadata_update()
            node = self._client.cluster.leader_for_partition(tp)
            if node is None:
                raise driver_errors.UnknownTopicOrPartitionError(f"{tp.topic}@{tp.partition}")
            if node < 0:
                raise driver_errors.LeaderNotAvailableError(f"{tp.topic}@{tp.partition}")
        return node

    async def _send(self, node: int, calls: list[_Call]) -> list[int | BaseException]:
        """One gathered produce: each call's end offset, or the error that stopped its records."""
        parts: dict[TopicPartition, _Part] = {}
        ends: list[tuple[_Part, int]] = []  # per call: its partition, the index of its last record
        for tp, records in calls:
            part = parts.get(tp)
            if part is None:
                part = parts[tp] = _Part()
            part.records.extend(records)
            ends.append((part, len(part.records) - 1))
        for part in parts.values():
            self._cut(part)
        with anyio.CancelScope(shield=True):  # every member waits for this request: it ends for them all
            await self._write(node, parts)
        return [part.end_of(index) for part, index in ends]

    def _cut(self, part: _Part) -> None:
        """Cut a partition's records into batches of `max_batch` bytes; a larger record gets one alone."""
        batch, first, count = new_record_batch(self._max_batch), 0, 0
        for index, (key, value, headers) in enumerate(part.records):
            if batch.append(count, None, key, value, headers) is None:  # full (never on its first record)
                part.batches.append((first, batch.build()))
                batch, first, count = new_record_batch(self._max_batch), index, 0
                batch.append(0, None, key, value, headers)
            count += 1
        part.batches.append((first, batch.build()))

    async def _write(self, node: int, parts: dict[TopicPartition, _Part]) -> None:
        """Send the batches, a request per round (the next batch of each partition), until all are out."""
        while True:
            round = {
                tp: part
                for tp, part in parts.items()
                if part.error is None and len(part.bases) < len(part.batches)
            }
            if not round:
                return
            topics: dict[str, list[tuple[int, bytearray]]] = {}
            for tp, part in round.items():
                topics.setdefault(tp.topic, []).append((tp.partition, part.batches[len(part.bases)][1]))
            request = produce_request(list(topics.items()), timeout_ms=int(self._timeout * 1000))
            try:
                with anyio.fail_after(self._timeout):
                    response = await self._client.send(node, request)
            except (
                Exception
            ) as exc:  # the connection or the request failed: none of the round is known written
                self._stale(exc)
                for part in round.values():
                    part.error = exc
                return
            unanswered = set(round)
            for topic, answers in response.topics:
                for answer in answers:
                    tp = topic_partition(topic, answer[0])
                    if tp not in round:
                        continue
                    part = round[tp]
                    unanswered.discard(tp)
                    error = driver_errors.for_code(answer[1])
                    if error is driver_errors.NoError:
                        part.bases.append(answer[2])
                    else:
                        part.error = error(f"producing to {topic}@{answer[0]}")
                        self._stale(part.error)
            for tp in unanswered:
                round[tp].error = driver_errors.KafkaError(f"no answer for {tp.topic}@{tp.partition}")

    def _stale(self, exc: BaseException) -> None:
        """After a leadership or connection error, refresh the metadata (in the background)."""
        if getattr(exc, "invalid_metadata", False) or isinstance(exc, driver_errors.KafkaConnectionError):
            self._client.force_metadata_update()
