"""`NatsJetStreamQueue`: the `QueueBackend` contract on NATS JetStream (nats-py).

How the contract maps onto JetStream (names in `_wire.Names`):

- **Messages** are msgpack `Envelope`s in one stream per namespace, `{ns}-work`, with *work queue*
  retention: a message is stored until it is acked, so the stream holds exactly the messages that are
  ready, delayed or leased. Unkeyed messages go to `{ns}.q.{topic}.l.{lane}`, keyed ones to
  `{ns}.q.{topic}.k.{hash of the key}` (all lanes of a key on one subject).
- **Consumers**: a durable pull consumer per (topic, group, lane) and per (topic, group, key), explicit
  ack, `ack_wait = min(liveness_timeout, visibility_timeout)`, unlimited deliveries. A second group on a
  topic is refused (a work queue stream hands each message to one consumer). Workers must agree on both.
- **Liveness and visibility timeout**: the server redelivers what is not acked within `ack_wait`. While
  the queue is open its `LeaseKeeper` sends an in-progress ack (`+WPI`, one batch per `ack_wait / 5`) for
  each message it holds (leased or buffered) whose lease is `ack_wait / 3` old, until `visibility_timeout`
  since delivery: a live worker keeps its leases that long, a killed one's come back within `ack_wait`.
  `attempt` is the envelope's attempt plus the server's delivery count minus one (expired leases and
  nacks both count); one seen with `attempt > max_attempts` is dead-lettered then. A lease ends locally a
  little earlier (`min(10 % of ack_wait, 1 s)`); `ack`/`nack`/`dead_letter` of a delivery whose lease
  ended (or that was ended already) do nothing: JetStream accepts an ack of an expired delivery even
  after redelivering it.
- **nack** is `-NAK` with the delay. A **delayed publish** carries its due time in a `Mocra-Due` header;
  its first delivery is held back with `-NAK {"delay": ...}` and not counted as an attempt.
- **Priority lanes**: `consume` fetches lanes from the highest down with `no_wait` pull requests for
  what is still missing. While it waits, each lane carries a short lingering pull request per waiting
  consumer, so the server wakes it as soon as a message is published, nacked, due or expired.
- **Partition keys**: a key's consumer has `max_ack_pending = 1`: the server hands out one message of a
  key at a time, in stream order, to whichever process asks, and the next one when that lease ends. A
  process asks for each key with messages (found by listing the topic's subjects, at most once a second,
  and from publishers' bells) with a pull request lingering at most a second; what comes is buffered
  (leased) and merged by lane and stream order. Costs grow with the number of keys holding messages:
  keys are for thousands of sites or accounts at a time, not millions. Idle key consumers are deleted
  by the server after `max(1 h, 4 × visibility_timeout)` without requests.
- **DLQ**: stream `{ns}-dlq` (limits retention: it can be read back), subject `{ns}.dlq.{topic}`; an entry
  is the envelope with `reason` and `failed_at`, published (deduplicated by `Nats-Msg-Id`) before the
  original is acked. `dead_letters` reads it oldest first; `replay` republishes and deletes entries. A
  message that is not an envelope is dead-lettered with its raw bytes (`Mocra-Poison` header).
- **pending** sums, per work subject of the topic holding messages, what its consumer has not delivered or
  not seen acked (its stored messages if it has no consumer yet): exact, across all workers. Counting
  stored messages alone would count forever the ones nats-server 2.9 may keep after a crash although
  their consumer recorded the ack (seen after `kill -9` of the server mid-crawl).
- **Wake-ups**: a publish also sends a core-NATS bell on `{ns}.bell.{topic}` naming its lane or key, so
  waiting consumers learn at once of lanes and keys they did not know (a lane's bell at most once a second
  per queue: consumers that know the lane have a pull request waiting on it).
- **Outages**: the client reconnects forever; calls are retried (unanswered requests sent again) for up
  to `timeout` seconds before `BackendUnavailable`, and waiting consumers ask again after a reconnect.

Deviations from the in-process backends: within a key, messages come in stream order whatever their
lane; a nack with a delay and a delayed publish hold their key until due; a message the server pushed
to a process that then closed, or that sat in its buffer until its lease ran out, comes back with
`attempt + 1` without having been handed out.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from typing import TYPE_CHECKING

import anyio

from ..._errors import redact
from ...queue._checks import check_limits, check_payloads
from ...queue._envelope import Envelope, pack
from ...queue._lease_keeper import LeaseKeeper, check_liveness
from ._connection import Api, connect, ensure_streams
from ._consume import Consumers, Link
from ._dlq import DeadLetterStore
from ._pending import consumers_of, count_pending
from ._wire import DUE_HEADER, Names, Replies, check_stored, check_topic, key_token

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType
    from typing import Literal, Self

    from nats.aio.client import Client

    from ...queue._codec import Codec
    from ...queue._delivery import DeadLetter, Delivery

__all__ = ("NatsJetStreamQueue",)

logger = logging.getLogger(__name__)

_RING_EVERY = 1.0  # seconds between two bells of one lane from this queue


class NatsJetStreamQueue:
    """A `QueueBackend` on NATS JetStream, shared by every worker process of a crawl.

    Everything it creates (two streams, their consumers) is named after `namespace`; see the module
    docstring for how leases, lanes, keys and the DLQ map onto JetStream. Needs a NATS server with
    JetStream enabled (2.9 or newer) and runs on asyncio (nats-py).

    Args:
        url: `nats://[user:password@]host:port` (several servers: comma-separated).
        codec: Turns payloads into bytes and back.
        namespace: Prefix of every stream, subject and consumer (`A-Z a-z 0-9 _ -`).
        visibility_timeout: Seconds a delivery may stay unacked before it comes back with `attempt + 1`.
        max_attempts: Deliveries of one message before a nack or an expired lease dead-letters it.
        storage: `"file"` (survives a server restart) or `"memory"` for the streams it creates.
        timeout: Seconds to connect at start and to wait for the server's answer to one call (an outage
            shorter than that is ridden out: calls are retried after the reconnect).
        liveness_timeout: Seconds the server waits for a sign of life (an ack or an in-progress ack,
            sent every fifth of it while the queue is open) before it hands a message to another worker.

    Raises:
        BackendUnavailable: (on `async with`) the server cannot be reached within `timeout`.

    Example:
        >>> import anyio, nats, uuid
        >>> from mocra_core.queue import MsgpackCodec
        >>> url, namespace = "nats://127.0.0.1:4222", f"example-{uuid.uuid4().hex[:12]}"
        >>> async def main():
        ...     async with NatsJetStreamQueue(url, codec=MsgpackCodec(), namespace=namespace) as queue:
        ...         await queue.publish("fetch", ["https://example.com/"])
        ...         [delivery] = await queue.consume("fetch", group="download")
        ...         await queue.ack([delivery])
        ...         return delivery.payload, delivery.attempt, await queue.pending("fetch")
        >>> anyio.run(main)
        ('https://example.com/', 1, 0)
        >>> async def drop():  # delete the example's streams
        ...     nc = await nats.connect(url)
        ...     for stream in (f"{namespace}-work", f"{namespace}-dlq"):
        ...         await nc.jetstream().delete_stream(stream)
        ...     await nc.close()
        >>> anyio.run(drop)
    """

    def __init__(
        self,
        url: str,
        *,
        codec: Codec,
        namespace: str = "mocra",
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        storage: Literal["file", "memory"] = "file",
        timeout: float = 5.0,
        liveness_timeout: float = 10.0,
    ) -> None:
        check_limits(visibility_timeout, max_attempts)
        check_liveness(liveness_timeout)
        if storage not in ("file", "memory"):
            raise ValueError(f"storage must be 'file' or 'memory', got {storage!r}")
        self.url = url
        self.names = Names(namespace)
        self.visibility_timeout = visibility_timeout
        self.liveness_timeout = liveness_timeout
        self.ack_wait = min(liveness_timeout, visibility_timeout)
        self.max_attempts = max_attempts
        self._codec = codec
        self._storage = storage
        self._api = Api(url, timeout)
        self._clock = time.monotonic
        self._ids = itertools.count(1)
        self._rung: dict[tuple[str, str], float] = {}  # (topic, lane bell) -> when this queue last rang it
        self._id_prefix = secrets.token_hex(6)
        self._consumers = Consumers(
            self._check,
            self.names,
            codec,
            self._api,
            url=url,
            visibility_timeout=visibility_timeout,
            ack_wait=self.ack_wait,
            max_attempts=max_attempts,
            clock=self._clock,
        )
        self._keeper = LeaseKeeper(self._consumers.renew, every=self.ack_wait / 5, what=f"nats {redact(url)}")
        self._nc: Client | None = None
        self._replies: Replies | None = None
        self._link: Link | None = None
        self._closed = False

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"<NatsJetStreamQueue {self.names.ns!r} at {redact(self.url)!r}{state}>"

    # -- lifecycle -----------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self._connect()
        try:
            await self._keeper.start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
        await self._keeper.stop()

    async def _connect(self) -> None:
        async def on_reconnect() -> None:
            if self._replies is not None:
                self._replies.reconnected()
            self._consumers.reconnected()

        name = f"mocra-{self.names.ns}"
        nc = await connect(self.url, name=name, within=self._api.timeout, on_reconnect=on_reconnect)
        self._nc = nc
        js = nc.jetstream(timeout=min(self._api.timeout, 2.0))
        try:
            self._replies = replies = Replies(nc, self.url)
            await replies.start()
            await ensure_streams(js, self.names, self._storage, self._api)
            self._link = Link(nc, js, replies, DeadLetterStore(js, self.names, self._codec, self._api))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await nc.close()
            raise

    async def aclose(self) -> None:
        """Close the connection; buffered messages are handed back, waiting consumers raise."""
        if self._closed:
            return
        self._closed = self._api.closed = True
        self._keeper.cancel()
        nc = self._nc
        with anyio.CancelScope(shield=True):
            handed_back = await self._consumers.close()
            if nc is not None and not nc.is_closed:
                try:
                    for raw in handed_back:
                        await nc.publish(raw.ack, b"-NAK")
                    with anyio.move_on_after(self._api.timeout):
                        await nc.close()
                except Exception:  # closing: nothing left to do about it
                    logger.debug("closing nats connection failed", exc_info=True)

    def _check(self) -> Link:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._link is None:
            raise RuntimeError("use the queue with `async with` first")
        return self._link

    # -- publishing ----------------------------------------------------------------------------------

    async def publish(
        self,
        topic: str,
        payloads: Sequence[object],
        *,
        key: str | None = None,
        priority: int = 0,
        delay: float = 0.0,
    ) -> None:
        """Add `payloads` to `topic`, in order (see `QueueBackend.publish`); one round trip per batch."""
        replies = self._check().replies
        check_topic(topic)
        check_payloads(payloads)
        if not isinstance(priority, int) or not -(2**63) <= priority < 2**63:
            raise ValueError(f"priority must be a 64-bit int, got {priority!r}")
        if not payloads:
            return
        names = self.names
        if key is None:
            subject, bell = names.lane_subject(topic, priority), f"l{priority}"
        else:
            kt = key_token(key)
            subject, bell = names.key_subject(topic, kt), f"k{kt}"
        created = time.time()
        headers = {DUE_HEADER: repr(created + delay)} if delay > 0 else None
        encode = self._codec.encode
        prefix = self._id_prefix
        ids = self._ids
        requests = [
            (
                subject,
                pack(
                    Envelope(
                        id=f"{prefix}{next(ids):x}",
                        topic=topic,
                        body=encode(payload),
                        created=created,
                        key=key,
                        priority=priority,
                    )
                ),
                headers,
            )
            for payload in payloads
        ]
        stored = await replies.request_all(
            requests, self._api.timeout, keep=True, then=self._ring(topic, bell, lane=key is None)
        )
        check_stored(self.url, stored)

    def _ring(self, topic: str, bell: str, *, lane: bool) -> tuple[str, bytes] | None:
        """The bell that wakes consumers new to this lane or key; a lane's rings at most once a second.

        A consumer that knows a lane already has a pull request waiting on it (the server wakes it), so
        a lane's bell only matters to a consumer that has not seen the lane yet, which also finds it by
        listing the topic's subjects every second: ringing each publish cost every worker a message per
        page. A key's bell rings every time (a consumer forgets a key once it is empty).
        """
        if lane:
            now = time.monotonic()
            if now - self._rung.get((topic, bell), -_RING_EVERY) < _RING_EVERY:
                return None
            self._rung[(topic, bell)] = now
        return (self.names.bell_subject(topic), bell.encode())

    # -- consuming -----------------------------------------------------------------------------------

    async def consume(
        self, topic: str, *, group: str, max_messages: int = 1, wait: float = 1.0
    ) -> Sequence[Delivery]:
        """Lease up to `max_messages` messages of `topic` (see `QueueBackend.consume`)."""
        return await self._consumers.consume(topic, group, max_messages, wait)

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Finish `deliveries`; stale ones are ignored. Concurrent acks share one round trip."""
        await self._consumers.ack(deliveries)

    async def nack(self, delivery: Delivery, *, delay: float = 0.0, reason: str = "") -> None:
        """Hand `delivery` back for a later attempt, or to the DLQ (see `QueueBackend.nack`)."""
        await self._consumers.nack(delivery, delay, reason)

    async def dead_letter(self, delivery: Delivery, *, reason: str) -> None:
        """Move `delivery` to its topic's DLQ (see `QueueBackend.dead_letter`)."""
        await self._consumers.dead_letter(delivery, reason)

    # -- the DLQ and accounting ----------------------------------------------------------------------

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Read up to `limit` dead letters of `topic`, oldest first."""
        dlq = self._check().dlq
        check_topic(topic)
        return [letter for _, letter, _ in await dlq.read(topic, limit)]

    async def replay(self, topic: str, ids: Sequence[str] | None = None) -> int:
        """Move dead letters of `topic` back to it with the attempt reset; returns how many."""
        nc, _, replies, dlq = self._check()
        check_topic(topic)
        entries = await dlq.read(topic, None)
        if ids is not None:
            wanted = set(ids)
            entries = [entry for entry in entries if entry[1].id in wanted]
        if not entries:
            return 0
        requests, bells = dlq.replays(topic, entries)
        check_stored(self.url, await replies.request_all(requests, self._api.timeout, keep=True))
        await dlq.delete([seq for seq, _, _ in entries])
        for bell in sorted(bells):
            await nc.publish(self.names.bell_subject(topic), bell.encode())
        return len(entries)

    async def pending(self, topic: str) -> int:
        """Messages of `topic` ready, delayed or leased (one request to the server, two if it has some).

        A subject with a consumer counts what the consumer has not delivered or not seen acked; one without
        counts its stored messages. (After a crash, nats-server 2.9 may keep messages in a work-queue
        stream whose ack its consumer recorded: they are never delivered again, and are not counted.)
        """
        js, names = self._check().js, self.names
        check_topic(topic)
        info = await self._api(
            "count messages",
            lambda: js.stream_info(names.work_stream, subjects_filter=names.topic_subjects(topic)),
        )
        stored = {subject: count for subject, count in (info.state.subjects or {}).items() if count}
        if not stored:
            return 0
        consumers = await self._api("count messages", lambda: consumers_of(js, names.work_stream))
        return count_pending(stored, consumers)
