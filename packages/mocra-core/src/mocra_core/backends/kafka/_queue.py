"""`KafkaQueue`: a `QueueBackend` on Apache Kafka (or a Kafka-compatible broker such as tansu), via aiokafka.

How the contract maps onto Kafka (reading: `_reader.py`, `_member.py`, `_window.py`; what a member leased
and finished: `_state.py`; DLQ: `_dlq.py`):

- **Topics and lanes.** Each priority lane of a topic is a Kafka topic `<namespace>.<topic>.<lane>` with
  `partitions` partitions (default 4), created on first use with the admin client. A message is one record:
  its msgpack `Envelope` as the value, its partition key as the record key.
- **Groups and partition keys.** Each (topic, group) is a consumer group `<namespace>.<topic>.<group>`
  subscribed to every lane topic, with the range assignor, so partition *i* of every lane goes to the same
  member. A key hashes (murmur2, as Kafka's Java client) to one partition, hence to one member, which hands
  a key's messages out one at a time and in order. Unkeyed messages go to one partition per publish (round
  robin; batches over 100 messages are split), so a batch keeps its order.
- **Leases, acks and commits.** A member fetches its partitions into a window and leases from it without
  I/O: highest lane first, then by `created`. A partition's committed offset is its oldest record not done,
  so commits move only past a contiguous run of acks; a background task commits. After a rebalance a
  member keeps the window of each partition it still owns; a partition that moved is read again from its
  committed offset, skipping what its last `State` says was done (see "Lost members").
- **Visibility timeout, nack and delays.** An expired lease is republished to its partition with
  `attempt + 1` in its envelope and a `mocra-attempt` header (or dead-lettered) and the original counted
  done; `nack` does the same, with a `mocra-due` header (epoch ms) for its delay. A delayed record
  waits in the window and holds its partition's committed offset back until it is done.
- **Lost members.** A member that dies or closes without acking loses its partitions after the session
  timeout (then a rebalance: on tansu 10 s + 5 s with the defaults), so its leases come back then, not
  after `visibility_timeout`. Each member writes the `State` of each partition it changed (records done
  above the committed offset, records leased and not finished) to a state topic
  (`<namespace>.<topic>.<lane>.acks.<group>`, one partition per lane partition): `consume` returns only
  once its leases are written, `ack`, `nack` and `dead_letter` once their ends are. The next owner reads
  the last state of each partition it takes over: it skips what was done (as Redis and NATS, a killed
  worker's acked messages are not delivered again) and hands what was leased out with `attempt + 1` (or
  dead-letters it), so a message that kills its worker ends in the DLQ and the engine knows a redelivery.
  Why not the group's commit metadata: tansu drops it.
- **Priority** is exact within what a member has fetched: all lanes are fetched at once, so a backlog does
  not hide a higher lane. Lanes -1, 0 and 1 (`lanes`) are created with the topic; another lane is
  created when first used and subscribed to within 5 s by every member (a rebalance).
- **DLQ.** `<namespace>.<topic>.dlq`: one partition, compacted, keyed by message id; `replay` republishes
  and writes a tombstone per id. Undecodable records go there with the reason.
- **Pending** = per lane partition, end offset minus the group's committed offset (the start offset if
  none); for partitions this object owns, end offset minus fetch position plus the records it holds. Exact
  on the owner; for other members' partitions it may count acked records above their committed offset
  until their commits land, never fewer. With several groups on a topic, the largest count wins.
- **Outages.** Calls retry connection errors and lost topics (a restarted broker) for `reconnect_timeout`
  seconds, then raise `BackendUnavailable`; the consumers reconnect on their own.
- **Fetch wait.** A reader's fetches wait `fetch_wait_min`; one whose fetches keep answering short
  while it is far behind (tansu on a long partition) doubles it, up to `fetch_wait_max` (`_fetch_wait.py`).
- **tansu** (0.6) joins a group in half the session timeout (at least 1 s), answers a fetch only after
  its wait, reports end offsets one past the first record of the last batch (so `pending` reads the
  last batch) and drops commit metadata (hence the state topics). Two workers crawl one job and one
  survives the other's SIGKILL (`packages/mocra/tests/test_distributed.py`); with three groups per worker
  (task, request, response) a worker's groups join side by side, one rebalance time for all.

Needs the asyncio event loop (aiokafka).
"""

from __future__ import annotations

import itertools
import logging
import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel

from ..._errors import redact
from ...queue._checks import check_limits, check_max_messages, check_payloads
from ._dlq import DeadLetters
from ._fetch_wait import FetchWait
from ._lanes import Lanes
from ._pending import count_pending
from ._readers import Readers, ReaderSettings
from ._wire import Names, Wire

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType
    from typing import Self

    from anyio.abc import TaskGroup, TaskStatus

    from ...queue._codec import Codec
    from ...queue._delivery import DeadLetter, Delivery
    from ._reader import Reader

__all__ = ("KafkaQueue",)

logger = logging.getLogger(__name__)

_CONNECT_TIMEOUT = 5.0  # seconds to reach the broker when opening
_SYNC_TIMEOUT = 5.0  # seconds consume(wait=0) waits at most to see what this queue published


class KafkaQueue:
    """A `QueueBackend` on Kafka topics (see the module docstring for the mapping), for many processes.

    Args:
        url: `kafka://host:port`, or several brokers `kafka://host1:port,host2:port`.
        codec: Turns payloads into bytes and back, e.g. `MsgpackCodec(MyStruct)`.
        namespace: Prefix of every topic and consumer group the queue creates (letters, digits, `-`, `_`).
        visibility_timeout: Seconds a delivery may stay unacked before it comes back with `attempt + 1`.
        max_attempts: Deliveries of one message before a nack or an expired lease dead-letters it.
        partitions: Partitions of each lane topic the queue creates (more partitions, more members).
        session_timeout: Seconds without a heartbeat before the group gives a member's partitions to
            others (Kafka accepts 6 to 1,800 by default; tansu also takes less, and joins faster then).
        fetch_wait: Seconds the reads of the state and DLQ topics wait at the broker per fetch.
        fetch_wait_min: Seconds a reader's fetches wait at the broker, at first. Kafka answers as soon as
            records arrive; tansu only when the wait ends, with what it read by then, so on tansu this
            is the latency of each hop of a crawl (the bench crawl: 0.05 s 30 % slower than 0.01 s).
            On Apache Kafka a short wait only means many idle fetches (its default is 0.5).
        fetch_wait_max: The most a reader's fetch wait grows to. tansu reads a partition at a cost that
            grows with its length and answers a shorter fetch with a few records or none (with 0.01 s a
            crawl whose queue grew past ~270,000 messages stopped; see `benchmarks/README.md`, "Soak"),
            so a reader far behind whose fetches keep answering short doubles its wait, up to this.
        reconnect_timeout: Seconds a call keeps retrying a lost broker before raising `BackendUnavailable`.
        lanes: Priority lanes created with a topic. A message of another priority creates its lane when
            first published, and every consumer group of the topic rebalances to subscribe to it (on
            tansu the group's consumers stand still for half the session timeout meanwhile).

    Raises:
        ConfigError: the URL cannot be parsed.

    Example:
        >>> import anyio
        >>> from mocra_core.queue import MsgpackCodec
        >>> async def main(url):
        ...     async with KafkaQueue(url, codec=MsgpackCodec(), namespace="doctest") as queue:
        ...         await queue.publish("fetch", ["https://example.com/"])
        ...         [delivery] = await queue.consume("fetch", group="download", wait=0)
        ...         await queue.ack([delivery])
        ...         return delivery.payload, await queue.pending("fetch")
        >>> anyio.run(main, "kafka://127.0.0.1:9092")  # doctest: +SKIP
        ('https://example.com/', 0)
    """

    def __init__(
        self,
        url: str,
        *,
        codec: Codec,
        namespace: str = "mocra",
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        partitions: int = 4,
        session_timeout: float = 6.0,
        fetch_wait: float = 0.05,
        fetch_wait_min: float = 0.01,
        fetch_wait_max: float = 1.0,
        reconnect_timeout: float = 30.0,
        lanes: Sequence[int] = (-1, 0, 1),
    ) -> None:
        check_limits(visibility_timeout, max_attempts)
        FetchWait(low=fetch_wait_min, high=fetch_wait_max)  # ValueError for bounds out of order
        if partitions < 1:
            raise ValueError(f"partitions must be at least 1, got {partitions!r}")
        self.url = redact(url)
        self.namespace = namespace
        self.visibility_timeout = visibility_timeout
        self.max_attempts = max_attempts
        self.partitions = partitions
        self._names = Names(namespace)
        for lane in lanes:
            self._names.lane("lanes", lane)  # ValueError for a lane that is not a 64-bit int
        self._wire = Wire(
            url, request_timeout=max(10.0, session_timeout), reconnect_timeout=reconnect_timeout
        )
        self._codec = codec
        self._dlq = DeadLetters(self._wire, self._names, codec, fetch_wait=fetch_wait)
        self._lanes = Lanes(self._wire, self._names, partitions, self._new_lane, eager=lanes)
        waits = (fetch_wait, fetch_wait_min, fetch_wait_max)
        settings = ReaderSettings(codec, visibility_timeout, max_attempts, session_timeout, *waits)
        self._readers = Readers(self._wire, self._names, self._lanes, settings, self._check)
        self._stack: AsyncExitStack | None = None
        self._background: TaskGroup | None = None
        self._closed = False

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"<KafkaQueue {self.url!r} namespace={self.namespace!r}{state}>"

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        """Connect; raises `BackendUnavailable` (naming the URL) when no broker can be reached."""
        if self._closed or self._stack is not None:
            raise anyio.ClosedResourceError
        await self._wire.connect(_CONNECT_TIMEOUT)
        stack = AsyncExitStack()
        try:
            outer = await stack.enter_async_context(anyio.create_task_group())
            self._background = await outer.start(self._host)
        except BaseException:
            await stack.aclose()
            await self._wire.close()
            raise
        self._stack = stack
        return self

    async def _host(self, *, task_status: TaskStatus[TaskGroup]) -> None:
        """Own the background tasks (the readers) in a task group that `aclose` cancels."""
        async with anyio.create_task_group() as tg:
            task_status.started(tg)
            await anyio.sleep_forever()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        """Commit what is done, leave the groups and disconnect; idempotent."""
        if self._closed:
            return
        self._closed = True
        for reader in self._readers.all():
            reader.close()
        with anyio.CancelScope(shield=True):
            for reader in self._readers.all():
                await reader.quiesce(2.0)
        if self._background is not None:
            self._background.cancel_scope.cancel()  # readers commit and stop their consumers
        with anyio.CancelScope(shield=True):
            await self._dlq.aclose()
            await self._wire.close()

    def _check(self) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._background is None:
            raise RuntimeError("use the queue as an async context manager: `async with KafkaQueue(...)`")

    # ------------------------------------------------------------------ publishing

    async def publish(
        self,
        topic: str,
        payloads: Sequence[object],
        *,
        key: str | None = None,
        priority: int = 0,
        delay: float = 0.0,
    ) -> None:
        """Add `payloads` to `topic`, in order (see `QueueBackend.publish` and the module docstring)."""
        self._check()
        check_payloads(payloads)
        if key is not None and not isinstance(key, str):
            raise TypeError(f"key must be a str or None, got {key!r}")
        self._names.lane(topic, priority)  # checks the topic and the lane
        if not payloads:
            return
        bodies = [self._codec.encode(payload) for payload in payloads]
        await self._lanes.send(topic, priority, key, self._lanes.records(topic, bodies, key, priority, delay))

    def _new_lane(self, topic: str, name: str, lane: int) -> None:
        self._readers.new_lane(topic, name, lane)

    # ------------------------------------------------------------------ consuming

    async def consume(
        self, topic: str, *, group: str, max_messages: int = 1, wait: float = 1.0
    ) -> Sequence[Delivery]:
        """Lease up to `max_messages` messages of `topic` (see `QueueBackend.consume`).

        The first call for a (topic, group) joins the consumer group, which takes the broker's rebalance
        time. `wait=0` returns what was ready when it was called, including everything this queue
        published before.
        """
        self._check()
        check_max_messages(max_messages)
        cutoff = time.time()
        assert self._background is not None
        reader = await self._readers.get(topic, group, self._background)
        await anyio.lowlevel.checkpoint()
        if wait <= 0:
            await reader.sync(_SYNC_TIMEOUT)
            found = reader.take(max_messages, cutoff)
        else:
            found = reader.take(max_messages) or await reader.waiters.wait_for(
                lambda: reader.take(max_messages), _never, wait
            )
        if found:
            await reader.persist()  # the next owner of a partition must know what was leased
        return found

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Finish `deliveries`; stale ones are ignored.

        Returns once the partitions' states record the acks (so a crash does not deliver them again);
        the commit of the group's offsets follows in the background.
        """
        self._check()
        finished: set[Reader] = set()
        for delivery in deliveries:
            reader = self._readers.owner(delivery)
            held = reader.end_lease(delivery) if reader is not None else None
            if reader is not None and held is not None:
                reader.finish(held)
                finished.add(reader)
        for reader in finished:
            await reader.persist()

    async def nack(self, delivery: Delivery, *, delay: float = 0.0, reason: str = "") -> None:
        """Republish `delivery` with `attempt + 1` (held back `delay` seconds), or dead-letter it."""
        self._check()
        reader = self._readers.owner(delivery)
        held = reader.end_lease(delivery) if reader is not None else None
        if reader is None or held is None:
            return
        attempt = held.env.attempt
        try:
            if attempt >= self.max_attempts:
                why = f"{reason or 'nacked'} on attempt {attempt} of {self.max_attempts}"
                await reader.bury(held, why)
            else:
                await reader.requeue(held, delay)
        except BaseException:
            reader.restore(held)
            raise
        await reader.persist()

    async def dead_letter(self, delivery: Delivery, *, reason: str) -> None:
        """Move `delivery` to its topic's DLQ with `reason`; stale deliveries are ignored."""
        self._check()
        reader = self._readers.owner(delivery)
        held = reader.end_lease(delivery) if reader is not None else None
        if reader is None or held is None:
            return
        try:
            await reader.bury(held, reason)
        except BaseException:
            reader.restore(held)
            raise
        await reader.persist()

    # ------------------------------------------------------------------ DLQ and accounting

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Read up to `limit` dead letters of `topic`, oldest first (the DLQ topic from its start)."""
        self._check()
        entries = await self._dlq.entries(topic)
        chosen = itertools.islice(entries.values(), max(limit, 0))
        return [self._dlq.letter(topic, env, raw) for env, raw in chosen]

    async def replay(self, topic: str, ids: Sequence[str] | None = None) -> int:
        """Republish dead letters of `topic` with attempt 1, then tombstone them in the DLQ."""
        self._check()
        return await self._dlq.replay(topic, ids, self._lanes)

    async def pending(self, topic: str) -> int:
        """Messages of `topic` published and not yet acked or dead-lettered (see the module docstring)."""
        self._check()
        readers = self._readers.of_topic(topic)
        return await count_pending(topic, wire=self._wire, names=self._names, dlq=self._dlq, readers=readers)


def _never() -> float | None:
    return None  # the reader's task keeps the time (delays, leases), not the waiting consumers
