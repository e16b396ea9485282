"""`Reader`: one `KafkaQueue` consumer-group member for one (topic, group), and its in-memory window.

A background task fetches the lane topics' partitions assigned to this member into a window: ready
messages by lane (highest first) and age, messages of a busy key parked per key, delayed ones in a heap by
due time, and leases. `take` leases from the window without I/O. A partition's committed offset is the
lowest offset it still holds (ready, parked, delayed or leased), so a commit never skips a message that is
not done; a second task commits whenever that moves.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import time
from heapq import heappop, heappush
from typing import TYPE_CHECKING

import anyio
import msgspec

from .._errors import BackendError, BackendUnavailable, PoisonMessage
from ._delivery import Delivery
from ._envelope import Envelope, pack, unpack
from ._kafka_wire import DUE, RAW, due_header, kafka_error, rebalance_listener
from ._waiters import Waiters, new_lease_token

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._codec import Codec
    from ._kafka_wire import Consumer, Names, Out, Record, TopicPartition, Wire

__all__ = ("Held", "Reader", "dlq_record", "lanes_of")

logger = logging.getLogger(__name__)

POLL = 0.5  # seconds the fetch loop waits at most before it looks at timers and lanes again
LANE_REFRESH = 5.0  # seconds between looks for lanes other processes created
FETCH_RECORDS = 500  # records one fetch hands over at most
PREFETCH = 1000  # messages one partition holds (ready, parked, leased) before its fetching pauses

_seq = itertools.count()


class Part:
    """The window of one assigned partition: its held records by offset (oldest first)."""

    __slots__ = ("committed", "delayed", "dropped", "lane", "live", "next", "paused", "target", "tp")

    def __init__(self, tp: TopicPartition, lane: int, position: int) -> None:
        self.tp = tp
        self.lane = lane
        self.live: dict[int, Held] = {}  # offset -> record not done yet, in offset order
        self.next = position  # offset after the last record fetched
        self.committed = position  # last offset committed (or found committed) for the group
        self.target = position  # end offset when the partition was assigned
        self.delayed = 0
        self.paused = False
        self.dropped = False

    def mark(self) -> int:
        """The offset to commit: the oldest record not done, or the fetch position."""
        return next(iter(self.live), self.next)


class Held:
    """A fetched record until it is done (acked, requeued or dead-lettered)."""

    __slots__ = ("deadline", "due", "env", "offset", "part", "payload", "raw", "reason", "seq", "token")

    def __init__(self, part: Part, offset: int, env: Envelope, payload: object, due: float) -> None:
        self.part = part
        self.offset = offset
        self.env = env
        self.payload = payload
        self.due = due  # epoch seconds it is held back until (0: none)
        self.seq = next(_seq)
        self.raw = False  # env.body is the raw record value (not an envelope)
        self.reason = ""  # why it is poison
        self.token = 0
        self.deadline = 0.0


def dlq_record(env: Envelope, reason: str, *, raw: bool) -> Out:
    """The DLQ record of a message: keyed by its id, the envelope with `reason` and `failed_at`."""
    letter = msgspec.structs.replace(env, reason=reason, failed_at=time.time())
    return env.id.encode(), pack(letter), [(RAW, b"1")] if raw else []


@rebalance_listener
class Reader:
    """Consumes one topic for one group; see the module docstring. Driven by `run` in a background task."""

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
        published: dict[TopicPartition, int],
    ) -> None:
        self.topic = topic
        self.group_id = names.group(topic, group)
        self._wire = wire
        self._names = names
        self._codec = codec
        self._vt = visibility_timeout
        self._max_attempts = max_attempts
        self._session_ms = max(1000, int(session_timeout * 1000))
        self._fetch_wait_ms = max(1, int(fetch_wait * 1000))
        self._published = published  # offsets after what this queue published, by partition
        self.lanes: dict[str, int] = {}  # Kafka topic -> lane
        self.parts: dict[TopicPartition, Part] = {}
        self.leases: dict[int, Held] = {}
        self._deadlines: list[tuple[float, int]] = []  # heap of (deadline, token), stale entries skipped
        self._ready: dict[int, list[tuple[float, int, Held]]] = {}  # lane -> heap by (created, seq)
        self._ranked: list[int] = []  # lanes, highest first
        self._parked: dict[str, list[tuple[int, float, int, Held]]] = {}
        self._busy: set[str] = set()
        self._delayed: list[tuple[float, int, Held]] = []
        self.waiters = Waiters()
        self._consumer: Consumer | None = None
        self._rebalancing = True
        self._assigned: set[TopicPartition] | None = None  # to settle after a rebalance
        self._generation = 0
        self._joined = anyio.Event()
        self._progress = anyio.Event()
        self._commit_wanted = anyio.Event()
        self._closed = False
        self._poison: list[Held] = []
        self._wake = anyio.CancelScope()  # around the fetch loop's wait
        self._expired = f"lease expired (visibility timeout {visibility_timeout:g} s)"

    # ------------------------------------------------------------------ leasing (no I/O)

    def take(self, max_messages: int, cutoff: float | None = None) -> list[Delivery]:
        """Lease up to `max_messages` ready messages, highest lane first; `cutoff` skips any due after it."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._rebalancing:
            return []
        found: list[Delivery] = []
        skipped: list[tuple[float, int, Held]] = []
        deadline = time.monotonic() + self._vt
        for lane in self._ranked:
            heap = self._ready[lane]
            while heap and len(found) < max_messages:
                entry = heappop(heap)
                held = entry[2]
                if held.part.dropped:
                    continue
                if cutoff is not None and held.due > cutoff:
                    skipped.append(entry)
                    continue
                key = held.env.key
                if key is not None:
                    if key in self._busy:
                        heappush(self._parked.setdefault(key, []), (-lane, *entry))
                        continue
                    self._busy.add(key)
                found.append(self._lease(held, deadline))
            for entry in skipped:
                heappush(heap, entry)
            skipped.clear()
            if len(found) == max_messages:
                break
        return found

    def _lease(self, held: Held, deadline: float) -> Delivery:
        held.token = token = new_lease_token()
        held.deadline = deadline
        self.leases[token] = held
        heappush(self._deadlines, (deadline, token))
        env = held.env
        return Delivery(
            env.id, self.topic, held.payload, env.key, held.part.lane, env.attempt, env.created, token
        )

    def end_lease(self, delivery: Delivery) -> Held | None:
        """End the lease of `delivery` and return its record, or `None` if the delivery is stale."""
        held = self.leases.get(delivery._lease)
        if held is None or held.env.id != delivery.id:
            return None
        del self.leases[delivery._lease]
        return held

    def restore(self, held: Held, deadline: float | None = None) -> None:
        """Give back a lease `end_lease` ended (its requeue failed); its key stays busy."""
        if held.part.dropped:
            return
        if deadline is not None:
            held.deadline = deadline
        self.leases[held.token] = held
        heappush(self._deadlines, (held.deadline, held.token))

    def finish(self, held: Held, *, leased: bool = True) -> None:
        """`held` is done (acked, requeued or dead-lettered): forget it, free its key, commit."""
        part = held.part
        if not part.dropped and part.live.pop(held.offset, None) is not None:
            self._commit_wanted.set()
            if part.paused and len(part.live) - part.delayed < PREFETCH and self._consumer is not None:
                part.paused = False
                self._consumer.resume(part.tp)
        if leased and held.env.key is not None:
            self._release(held.env.key)

    def _release(self, key: str) -> None:
        self._busy.discard(key)
        parked = self._parked.get(key)
        while parked:
            entry = heappop(parked)
            if not entry[3].part.dropped:
                self._push(entry[3])
                self.waiters.notify(1)
                break
        if not parked:
            self._parked.pop(key, None)

    def _push(self, held: Held) -> None:
        lane = held.part.lane
        heap = self._ready.get(lane)
        if heap is None:
            heap = self._ready[lane] = []
            bisect.insort(self._ranked, lane, key=lambda x: -x)
        heappush(heap, (held.env.created, held.seq, held))

    # ------------------------------------------------------------------ waiting

    async def wait_joined(self, seconds: float) -> None:
        """Wait until the group assigned this member its partitions (the first time only)."""
        with anyio.move_on_after(seconds):
            await self._joined.wait()
        if self._closed:
            raise anyio.ClosedResourceError
        if not self._joined.is_set():
            raise BackendUnavailable(
                "kafka", self._wire.url, f"group {self.group_id!r} did not assign partitions in {seconds:g} s"
            )

    def caught_up(self) -> bool:
        """Whether every assigned partition was fetched past its end when assigned and this queue's writes."""
        if self._rebalancing:
            return False
        published = self._published
        return all(p.next >= max(p.target, published.get(tp, 0)) for tp, p in self.parts.items())

    async def sync(self, seconds: float) -> None:
        """Wait (up to `seconds`) until `caught_up`: read-your-writes for `consume(wait=0)`."""
        with anyio.move_on_after(seconds):
            while not self.caught_up():
                if self._closed:
                    break
                await self._progress.wait()
        if self._closed:
            raise anyio.ClosedResourceError

    def local_pending(self, tp: TopicPartition, end: int) -> int | None:
        """Messages of a partition this member holds or has not fetched yet, or `None` if not its own."""
        part = self.parts.get(tp)
        if part is None or self._rebalancing:
            return None
        return max(end - part.next, 0) + len(part.live)

    def add_lanes(self, lanes: dict[str, int]) -> None:
        """Consume these lane topics too (a rebalance follows)."""
        if lanes.keys() <= self.lanes.keys():
            return
        self.lanes.update(lanes)
        if self._consumer is not None:
            self._consumer.subscribe(topics=sorted(self.lanes), listener=self)

    def close(self) -> None:
        """Refuse further calls and wake everything waiting (they raise `ClosedResourceError`)."""
        self._closed = True
        self.waiters.notify_all()
        self._joined.set()
        self._progress.set()

    # ------------------------------------------------------------------ ends of a lease that publish

    async def requeue(self, held: Held, delay: float) -> None:
        """Publish `held` again with `attempt + 1` (held back `delay` seconds), then finish it."""
        env = msgspec.structs.replace(held.env, attempt=held.env.attempt + 1)
        key = env.key.encode() if env.key is not None else None
        tp = held.part.tp
        end = await self._wire.produce(tp.topic, tp.partition, [(key, pack(env), due_header(delay))])
        self._published[tp] = max(self._published.get(tp, 0), end)
        self.finish(held)

    async def bury(self, held: Held, reason: str, *, leased: bool = True) -> None:
        """Publish `held` to the topic's DLQ with `reason`, then finish it."""
        name = self._names.dlq(self.topic)
        await self._wire.ensure(name, 1, {"cleanup.policy": "compact"})
        await self._wire.produce(name, 0, [dlq_record(held.env, reason, raw=held.raw)])
        self.finish(held, leased=leased)

    # ------------------------------------------------------------------ background

    def new_consumer(self) -> Consumer:
        """A consumer for this member (not started)."""
        return self._wire.consumer(
            group_id=self.group_id,
            session_timeout_ms=self._session_ms,
            heartbeat_interval_ms=max(100, self._session_ms // 4),
            fetch_max_wait_ms=self._fetch_wait_ms,
            max_poll_records=FETCH_RECORDS,
            metadata_max_age_ms=int(LANE_REFRESH * 1000),
        )

    async def run(self) -> None:
        """Fetch and commit until cancelled; the consumer is started (retrying outages) and stopped here."""
        while True:
            consumer = self.new_consumer()
            try:
                with anyio.fail_after(self._wire.request_timeout):
                    await consumer.start()
                break
            except BaseException as exc:
                with anyio.CancelScope(shield=True):
                    await consumer.stop()
                if not isinstance(exc, (kafka_error, OSError, TimeoutError)):
                    raise
                logger.warning("kafka: cannot start a consumer of %s: %r; retrying", self.group_id, exc)
            await anyio.sleep(POLL)
        self._consumer = consumer
        try:
            consumer.subscribe(topics=sorted(self.lanes), listener=self)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._commits, consumer)
                await self._fetch(consumer)
        finally:
            self._consumer = None
            with anyio.move_on_after(5, shield=True):
                try:
                    await self._commit(consumer)
                except Exception as exc:
                    logger.debug("kafka: final commit of %s failed: %r", self.group_id, exc)
                await consumer.stop()

    async def _fetch(self, consumer: Consumer) -> None:
        refresh_at = time.monotonic() + LANE_REFRESH
        while True:
            try:
                batches = {}
                with anyio.CancelScope() as self._wake:  # a rebalance cancels it, to settle at once
                    batches = await consumer.getmany(timeout_ms=self._timeout_ms(), max_records=FETCH_RECORDS)
                if self._assigned is not None:
                    await self._settle(consumer)
                if batches:
                    self._poison.extend(self._add(consumer, batches))
                while self._poison:  # not an envelope, or the codec cannot read it: to the DLQ
                    held = self._poison[0]
                    if not held.part.dropped:
                        await self.bury(held, held.reason, leased=False)
                    del self._poison[0]
                self._release_due()
                await self._expire()
                if time.monotonic() >= refresh_at:
                    refresh_at = time.monotonic() + LANE_REFRESH
                    found = await self._wire.list_topics(self._names.prefix(self.topic))
                    self.add_lanes(lanes_of(self._names, self.topic, found))
            except (kafka_error, OSError, TimeoutError, BackendError) as exc:
                logger.warning("kafka: consuming %s: %r; retrying", self.group_id, exc)
                await anyio.sleep(POLL)
            finally:
                self._progress.set()
                self._progress = anyio.Event()

    def _timeout_ms(self) -> int:
        timeout = POLL
        if self._delayed:
            timeout = min(timeout, self._delayed[0][0] - time.time())
        if self._deadlines:
            timeout = min(timeout, self._deadlines[0][0] - time.monotonic())
        return max(0, int(timeout * 1000) + 1)

    def _add(self, consumer: Consumer, batches: dict[TopicPartition, list[Record]]) -> list[Held]:
        """File fetched records; returns the poison ones (to dead-letter)."""
        now = time.time()
        fresh = 0
        poison: list[Held] = []
        for tp, records in batches.items():
            part = self.parts.get(tp)
            if part is None:
                continue
            for record in records:
                if record.offset < part.next:
                    continue  # fetched again after a rebalance: held or done already
                part.next = record.offset + 1
                held = part.live[record.offset] = self._decode(part, record)
                if held.reason:
                    poison.append(held)
                elif held.due > now:
                    heappush(self._delayed, (held.due, held.seq, held))
                    part.delayed += 1
                else:
                    self._push(held)
                    fresh += 1
            if len(part.live) - part.delayed >= PREFETCH and not part.paused:
                part.paused = True
                consumer.pause(tp)
        if fresh:
            self.waiters.notify(fresh)
        return poison

    def _decode(self, part: Part, record: Record) -> Held:
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
        except Exception as exc:
            held = Held(part, record.offset, env, env.body, 0.0)
            held.reason = f"undecodable payload ({len(env.body)} bytes): {exc}"
            return held
        return Held(part, record.offset, env, payload, due)

    def _release_due(self) -> None:
        now = time.time()
        moved = 0
        while self._delayed and self._delayed[0][0] <= now:
            held = heappop(self._delayed)[2]
            if not held.part.dropped:
                held.part.delayed -= 1
                self._push(held)
                moved += 1
        if moved:
            self.waiters.notify(moved)

    async def _expire(self) -> None:
        now = time.monotonic()
        while self._deadlines and self._deadlines[0][0] <= now:
            deadline, token = heappop(self._deadlines)
            held = self.leases.get(token)
            if held is None or held.deadline != deadline:
                continue
            del self.leases[token]
            attempt = held.env.attempt
            try:
                if attempt >= self._max_attempts:
                    await self.bury(held, f"{self._expired} on attempt {attempt} of {self._max_attempts}")
                else:
                    await self.requeue(held, 0.0)
            except BaseException:
                self.restore(held, time.monotonic() + POLL)
                raise

    # ------------------------------------------------------------------ rebalancing and commits

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """aiokafka: a rebalance starts; commit what is done while this member still owns its partitions."""
        self._rebalancing = True
        consumer = self._consumer
        if consumer is not None and self.parts:
            try:
                await self._commit(consumer)
            except Exception as exc:
                logger.info("kafka: commit before rebalancing %s failed: %r", self.group_id, exc)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """aiokafka: the rebalance ended; hold the partitions until the fetch loop has checked them."""
        self._generation += 1
        self._assigned = set(assigned)
        if assigned and self._consumer is not None:
            self._consumer.pause(*assigned)
        self._wake.cancel()

    async def _settle(self, consumer: Consumer) -> None:
        """Check the partitions of a rebalance, then fetch them.

        A partition this member still owns keeps its window if the group's committed offset is the one
        it committed last; the others start at their committed offset.
        """
        assigned, generation = self._assigned or set(), self._generation
        ordered = sorted(assigned)
        ends = await consumer.end_offsets(ordered) if ordered else {}
        positions = {tp: await consumer.position(tp) for tp in ordered}
        if generation != self._generation:
            return  # another rebalance meanwhile: settle that one
        for tp in [tp for tp in self.parts if tp not in assigned]:
            self._drop(self.parts.pop(tp))
        for tp in ordered:
            part = self.parts.get(tp)
            if part is not None and (part.committed != positions[tp] or ends[tp] < part.next):
                self._drop(self.parts.pop(tp))  # moved meanwhile, or the broker lost it
                part = None
            if part is None:
                part = self.parts[tp] = Part(tp, self.lanes.get(tp.topic, 0), positions[tp])
            else:
                consumer.seek(tp, part.next)
            part.target = ends[tp]
            if not part.paused:
                consumer.resume(tp)
        self._assigned = None
        self._rebalancing = False
        self._joined.set()
        self._commit_wanted.set()
        self.waiters.notify(len(self.waiters))

    def _drop(self, part: Part) -> None:
        part.dropped = True
        for token, held in [(t, h) for t, h in self.leases.items() if h.part is part]:
            del self.leases[token]
            if held.env.key is not None:
                self._release(held.env.key)

    async def _commit(self, consumer: Consumer) -> None:
        offsets = {tp: mark for tp, part in self.parts.items() if (mark := part.mark()) != part.committed}
        if offsets:
            await consumer.commit(offsets)
            for tp, mark in offsets.items():
                part = self.parts.get(tp)
                if part is not None:
                    part.committed = max(part.committed, mark)

    async def _commits(self, consumer: Consumer) -> None:
        while True:
            await self._commit_wanted.wait()
            self._commit_wanted = anyio.Event()
            if self._rebalancing:
                continue  # settling sets it again
            try:
                await self._commit(consumer)
            except Exception as exc:
                logger.debug("kafka: commit of %s failed: %r; retrying", self.group_id, exc)
                await anyio.sleep(POLL)
                self._commit_wanted.set()


def lanes_of(names: Names, topic: str, kafka_topics: Iterable[str]) -> dict[str, int]:
    """The lane topics of `topic` among `kafka_topics`, with their lanes."""
    return {name: lane for name in kafka_topics if (lane := names.lane_of(topic, name)) is not None}
