"""`Reader`: one `KafkaQueue` consumer-group member for one (topic, group), run by a background task.

The task fetches the partitions the group assigns to this member into a `Window` (`_window.py`),
republishes expired leases, dead-letters poison records, and commits: the group's offsets (each
partition's oldest record not done), then the `State` of each partition changed (`_state.py`). A
member that takes a partition over reads its last `State`: it skips the records above the committed
offset that were done, and delivers the ones the previous member leased and did not finish (it crashed,
or closed) with `attempt + 1`. Joining, rebalances and commits are its base class's, `Member`
(`_member.py`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import anyio
import msgspec

from ..._errors import BackendError, PoisonMessage
from ...queue._codec import decode_problem
from ...queue._envelope import Envelope, pack, unpack
from ._driver import kafka_error, rebalance_listener, set_fetch_wait
from ._fetch_wait import PartitionLag
from ._member import POLL, Member
from ._state import DONE, LOST
from ._window import PREFETCH, Held, Part
from ._wire import ATTEMPT, DUE, RAW, due_header

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from ...queue._codec import Codec
    from ._driver import Consumer, Out, Record, TopicPartition
    from ._fetch_wait import FetchWait
    from ._wire import Names, Wire

__all__ = ("Reader", "dlq_record", "lanes_of")

logger = logging.getLogger(__name__)

LANE_REFRESH = 5.0  # seconds between looks for lanes other processes created
FETCH_RECORDS = 500  # records one fetch hands over at most
PARTITION_FETCH_BYTES = 64 * 1024  # bytes one fetch asks of a partition (aiokafka's default: 1 MiB)
# Smaller answers keep the lanes moving: aiokafka sends no new fetch for a partition whose last answer
# is not handed over yet, and drops what it holds of a partition the window pauses (fetched again
# later). A record batch larger than this still comes whole (Kafka fetch v3+); see the tests.


def dlq_record(env: Envelope, reason: str, *, raw: bool) -> Out:
    """The DLQ record of a message: keyed by its id, the envelope with `reason` and `failed_at`."""
    letter = msgspec.structs.replace(env, reason=reason, failed_at=time.time())
    return env.id.encode(), pack(letter), [(RAW, b"1")] if raw else []


def lanes_of(names: Names, topic: str, kafka_topics: Iterable[str]) -> dict[str, int]:
    """The lane topics of `topic` among `kafka_topics`, with their lanes."""
    return {name: lane for name in kafka_topics if (lane := names.lane_of(topic, name)) is not None}


@rebalance_listener
class Reader(Member):
    """Consumes one topic for one group; see the module docstring."""

    def __init__(
        self,
        topic: str,
        group: str,
        *,
        wire: Wire,
        names: Names,
        codec: Codec,
        visibility_timeout: float,
        max_attempts: int,
        session_timeout: float,
        fetch_wait: float,
        waits: FetchWait,
        published: dict[TopicPartition, int],
    ) -> None:
        super().__init__(
            topic,
            group,
            wire=wire,
            names=names,
            visibility_timeout=visibility_timeout,
            fetch_wait=fetch_wait,
            published=published,
        )
        self._codec = codec
        self._max_attempts = max_attempts
        self._session_ms = max(1000, int(session_timeout * 1000))
        self._wait = waits
        self._tuning = True  # False once aiokafka refused a new wait (`set_fetch_wait`)
        self._tune_at = 0.0  # monotonic time of the next look at the lag (at most one per `fetch_wait_min`)
        self._poison: list[Held] = []
        self._expiry = f"lease expired (visibility timeout {visibility_timeout:g} s)"

    # ------------------------------------------------------------------ ends of a lease that publish

    async def requeue(self, held: Held, delay: float) -> None:
        """Publish `held` again with `attempt + 1` (held back `delay` seconds), then finish it."""
        env = msgspec.structs.replace(held.env, attempt=held.env.attempt + 1)
        key = env.key.encode() if env.key is not None else None
        tp = held.part.tp
        headers = [(ATTEMPT, str(env.attempt).encode()), *due_header(delay)]
        end = await self._wire.produce(tp.topic, tp.partition, [(key, pack(env), headers)])
        self._published[tp] = max(self._published.get(tp, 0), end)
        self.finish(held)

    async def bury(self, held: Held, reason: str, *, leased: bool = True) -> None:
        """Publish `held` to the topic's DLQ with `reason`, then finish it."""
        name = self._names.dlq(self.topic)
        await self._wire.ensure(name, 1, {"cleanup.policy": "compact"})
        await self._wire.produce(name, 0, [dlq_record(held.env, reason, raw=held.raw)])
        self.finish(held, leased=leased)

    # ------------------------------------------------------------------ the background task

    async def run(self) -> None:
        """Fetch and commit until cancelled; the consumers are started (retrying outages) and stopped here."""
        consumer = await self._start(
            lambda: self._wire.consumer(
                group_id=self.group_id,
                session_timeout_ms=self._session_ms,
                heartbeat_interval_ms=max(100, self._session_ms // 4),
                fetch_max_wait_ms=max(1, round(self._wait.seconds * 1000)),
                max_poll_records=FETCH_RECORDS,
                metadata_max_age_ms=int(LANE_REFRESH * 1000),
                max_partition_fetch_bytes=PARTITION_FETCH_BYTES,
            )
        )
        try:
            self._consumer = consumer
            consumer.subscribe(topics=sorted(self.lanes), listener=self)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._commits, consumer)
                await self._fetch(consumer)
        finally:
            self._consumer = None
            if not self._committing and not self._rebalancing:
                await _closing(f"the final commit of {self.group_id}", self._commit(consumer))
            await _closing(f"stopping the consumer of {self.group_id}", consumer.stop())
            await _closing(f"stopping the state reader of {self.group_id}", self._log.aclose())

    async def _start(self, new: Callable[[], Consumer]) -> Consumer:
        while True:
            consumer = new()
            try:
                with anyio.fail_after(self._wire.request_timeout):
                    await consumer.start()
                return consumer
            except BaseException as exc:
                with anyio.CancelScope(shield=True):
                    await consumer.stop()
                if not isinstance(exc, (kafka_error, OSError, TimeoutError)):
                    raise
                logger.warning("kafka: cannot start a consumer of %s: %r; retrying", self.group_id, exc)
            await anyio.sleep(POLL)

    async def _fetch(self, consumer: Consumer) -> None:
        refresh_at = time.monotonic() + LANE_REFRESH
        while True:
            try:
                batches: dict[TopicPartition, list[Record]] = {}
                with anyio.CancelScope() as self._wake:
                    timeout_ms = int(self.next_timer(self._poll_limit()) * 1000) + 1
                    batches = await consumer.getmany(timeout_ms=timeout_ms, max_records=FETCH_RECORDS)
                if self._assigned is not None:
                    await self._settle(consumer)
                if batches:
                    self._add(consumer, batches)
                if self._tuning and self._assigned is None and time.monotonic() >= self._tune_at:
                    self._tune_at = time.monotonic() + self._wait.low
                    self._tune(consumer)
                while self._poison:  # not an envelope, undecodable, or lost too often: to the DLQ
                    held = self._poison[0]
                    if not held.part.dropped:
                        await self.bury(held, held.reason, leased=False)
                    del self._poison[0]
                self.release_due()
                for held in self.expired():
                    await self._expire(held)
                if time.monotonic() >= refresh_at:
                    refresh_at = time.monotonic() + LANE_REFRESH
                    found = await self._wire.list_topics(self._names.prefix(self.topic))
                    self.add_lanes(lanes_of(self._names, self.topic, found))
            except (kafka_error, OSError, TimeoutError, BackendError) as exc:
                logger.warning("kafka: consuming %s: %r; retrying", self.group_id, exc)
                await anyio.sleep(POLL)
            finally:
                self.progressed()

    def _poll_limit(self) -> float:
        """Seconds the fetch loop waits at most: shorter while a partition is far behind.

        aiokafka wakes `getmany` only for records, so fetches answering empty would otherwise go
        unseen for `POLL` each, and the wait would take seconds to grow (`FetchWait`).
        """
        return min(POLL, max(0.05, 4 * self._wait.seconds)) if self._wait.behind else POLL

    def _tune(self, consumer: Consumer) -> None:
        """Set the wait of the next fetches from the lag of the partitions fetched (`FetchWait`)."""
        assigned = consumer.assignment()
        lags = {
            tp: PartitionLag(consumer.highwater(tp), consumer.last_poll_timestamp(tp), part.next)
            for tp, part in self.parts.items()
            if tp in assigned and not part.paused
        }
        before = self._wait.seconds
        wait = self._wait.observe(lags)
        if wait != before:
            logger.debug("kafka: %s fetches wait %g s now", self.group_id, wait)
            if not set_fetch_wait(consumer, wait):
                self._tuning = False
                logger.warning("kafka: this aiokafka cannot change a consumer's fetch wait; it stays fixed")

    def _add(self, consumer: Consumer, batches: dict[TopicPartition, list[Record]]) -> None:
        now = time.time()
        fresh = 0
        for tp, records in batches.items():
            part = self.parts.get(tp)
            if part is None:
                continue
            for record in records:
                if record.offset < part.next:
                    continue  # fetched again after a rebalance: held or done already
                part.next = record.offset + 1
                verdict = part.inherited.verdict(record.offset) if part.inherited is not None else None
                if verdict == DONE:
                    continue  # finished by the previous owner after its last commit
                held = self._decode(part, record, lost=verdict == LOST)
                if held.lost:
                    part.lost.add(held.offset)
                if held.reason:
                    part.live[held.offset] = held
                    self._poison.append(held)
                elif self.file(held, now):
                    fresh += 1
            if len(part.live) - part.delayed >= PREFETCH and not part.paused:
                part.paused = True
                consumer.pause(tp)
        if fresh:
            self.waiters.notify(fresh)

    def _decode(self, part: Part, record: Record, *, lost: bool) -> Held:
        due = 0.0
        for name, value in record.headers:
            if name == DUE:
                due = int(value) / 1000
        data = record.value
        try:
            if data is None:
                raise PoisonMessage("empty record value")
            env = unpack(data)
        except (PoisonMessage, ValueError) as exc:
            where = f"{part.tp.topic}@{part.tp.partition}:{record.offset}"
            env = Envelope(id=where, topic=self.topic, body=data or b"", created=record.timestamp / 1000)
            held = Held(part, record.offset, env, data, 0.0)
            held.raw = True
            held.reason = exc.reason if isinstance(exc, PoisonMessage) else f"undecodable record: {exc}"
            return held
        try:
            payload = self._codec.decode(env.body)
        except Exception as exc:  # any codec error: the payload is poison
            held = Held(part, record.offset, env, env.body, 0.0)
            held.reason = decode_problem(exc)
            return held
        held = Held(part, record.offset, env, payload, due)
        if lost:  # leased by a member that left without finishing it
            held.lost = True
            attempt = env.attempt
            if attempt >= self._max_attempts:
                held.reason = f"lease lost with its consumer on attempt {attempt} of {self._max_attempts}"
            else:
                held.env = msgspec.structs.replace(env, attempt=attempt + 1)
        return held

    async def _expire(self, held: Held) -> None:
        attempt = held.env.attempt
        try:
            if attempt >= self._max_attempts:
                await self.bury(held, f"{self._expiry} on attempt {attempt} of {self._max_attempts}")
            else:
                await self.requeue(held, 0.0)
        except BaseException:
            self.restore(held, time.monotonic() + POLL)
            raise


async def _closing(what: str, step: Awaitable[object]) -> None:
    """Run one step of closing a reader, for 5 s at most, whatever happens around it or in it.

    A broker gone for good makes aiokafka fail or hang here, and its own cancellations can escape; the
    reader is stopping anyway (the cancellation that stops it is raised once the steps have run).
    """
    with anyio.move_on_after(5, shield=True):
        try:
            await step
        except (Exception, anyio.get_cancelled_exc_class()) as exc:
            logger.debug("kafka: %s failed: %r", what, exc)
