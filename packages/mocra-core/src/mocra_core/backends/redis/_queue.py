"""`RedisStreamsQueue`: a `QueueBackend` on Redis Streams, shared by any number of worker processes.

How the contract maps onto Redis (key layout and scripts: `_queue_lua.py`):

- **Topics and lanes.** One stream per (topic, priority lane), one consumer group per (lane, group);
  every message is a stream entry holding its msgpack `Envelope` (`e`) and partition key (`k`). A take
  (one Lua script) reads the lanes highest first with XREADGROUP, so a batch never mixes in a lower
  lane while a higher one has ready messages.
- **Leases.** A lease is the entry's place in the group's pending entries list (PEL): its owner (this
  instance's unique consumer name) and delivery count. `ack` checks both (XPENDING) before XACK+XDEL,
  so a stale ack, nack or dead-letter does nothing.
- **Visibility timeout.** Takes sweep the PEL with XAUTOCLAIM (min idle time = `visibility_timeout`,
  from a cursor kept per lane, at most every `visibility_timeout / 4` seconds and at least every
  second while something is leased). A claimed entry's delivery count goes up by one, and so does its
  attempt (`Envelope.attempt + count - 1`); past `max_attempts` it goes to the DLQ.
- **Liveness.** Each queue keeps a heartbeat per topic it consumes (a score in a sorted set, server
  time), refreshed by every take and by its `LeaseKeeper` every `liveness_timeout / 5` seconds. A
  sweep claims every lease of a consumer whose heartbeat is `liveness_timeout` old at once (XCLAIM,
  attempt + 1, as for an expired lease), so a killed worker's messages come back within about
  `liveness_timeout` seconds, while a live worker keeps its leases up to the visibility timeout.
  Closing with leases still held marks the consumer dead, so they come back at once.
- **Nack and delays.** A nack adds a new entry (attempt + 1) to the tail of the lane, or to a sorted set
  scored by due time (server clock), from which every take first moves due messages to their lanes.
- **Partition keys.** A hash maps each busy key to the entry that owns it. A keyed entry read while its
  key belongs to another entry moves (XACK+XDEL) to the key's holding list; when the owner's lease ends,
  the oldest held message goes back to its lane as the key's new owner. One key is therefore handed
  out once at a time and in order; an immediate nack keeps the key for the retried message. No lock
  TTL is needed: every way a lease ends releases the key in the same script, and a key owned by an
  entry that no longer exists is taken over.
- **Pending** is exact and cluster-wide: the lane streams' lengths (entries leave only on ack or
  DLQ), plus the delayed set, plus the held counter, summed by one script.
- **DLQ** is a stream per topic (`dead_letters` reads it with XRANGE, oldest first; `replay` moves
  entries back to their lanes with attempt 1). An entry that is not an envelope, or whose payload the
  codec cannot decode, goes there with the reason instead of being handed out.
- **Waiting.** Whatever makes messages ready XADDs to the topic's *bell* stream; one task per topic and
  process blocks on it with XREAD, the other waiting tasks wait for that one (`_queue_bell.Bell`).
- **Round trips.** `publish` is one script per 1,000 messages, `consume` one (when something is
  ready), `ack` one per topic; concurrent publishes, consumes and acks of one topic in one process
  share a script call (`mocra_core._gather.Gather`), so many workers handling one message each cost about
  as much as one worker handling a batch.
- **Outages.** Every call retries connection errors for up to `reconnect_timeout` seconds (scripts are
  reloaded, consumer groups recreated), then raises `BackendUnavailable`.

Where this differs from the in-process backends: an expired lease is claimed by the consumer that
finds it (not put back at its old place); a message nacked without delay goes to the tail of its lane;
a consume cancelled while its take is on the wire may lease messages that then go to this instance's
next consume (or, after half the visibility timeout, come back to anyone when the lease expires); one
group per topic (acking deletes the entry, so several groups would not each see every message).
"""

from __future__ import annotations

import itertools
import math
import secrets
import time
from functools import partial
from typing import TYPE_CHECKING

import anyio
import msgspec

from ..._gather import Gather
from ...queue._checks import check_limits, check_max_messages, check_payloads
from ...queue._envelope import Envelope, pack
from ...queue._lease_keeper import LeaseKeeper, check_liveness
from ._queue_dlq import lane, read_dead_letters, replay_dead_letters
from ._queue_leases import Leases, Topic
from ._queue_store import RedisStore

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType
    from typing import Self

    from ...queue._codec import Codec
    from ...queue._delivery import DeadLetter, Delivery
    from ._queue_bell import Bell
    from ._queue_store import Publish

__all__ = ("RedisStreamsQueue",)

_CHUNK = 1000  # messages per publish script


class RedisStreamsQueue:
    """A `QueueBackend` on Redis Streams (Redis ≥ 6.2), for crawls spread over many processes and hosts.

    Every state change is one Lua script, so it is atomic on the server; time (delays, leases) is the
    server's. Leases outlive their consumer: if a worker dies, its messages come back to the others
    once its heartbeat is `liveness_timeout` old, with `attempt + 1`. The queue is as durable as the
    server (AOF/RDB); without persistence a restart loses the messages and workers carry on with new
    ones. Scripts touch keys they compute, so Redis Cluster is not supported.

    Args:
        url: `redis://[user:password@]host:port/db`, or `rediss://...` for TLS.
        codec: Turns payloads into bytes and back, e.g. `MsgpackCodec(MyStruct)`.
        namespace: Prefix of every key the queue creates (one per crawl job, say).
        visibility_timeout: Seconds a delivery may stay unacked before it comes back with `attempt + 1`.
        max_attempts: Deliveries of one message before a nack or an expired lease dead-letters it.
        connect_timeout: Seconds to wait for the server when connecting.
        reconnect_timeout: Seconds a call keeps retrying a lost server before raising `BackendUnavailable`.
        liveness_timeout: Seconds after this queue's last heartbeat (it beats every fifth of it while
            open) before the other consumers take its leases.

    Raises:
        ConfigError: the URL cannot be parsed.

    Example:
        >>> import anyio, redis, uuid
        >>> from mocra_core.queue import MsgpackCodec
        >>> namespace = f"example-{uuid.uuid4().hex}"
        >>> async def main():
        ...     url = "redis://127.0.0.1:6379"
        ...     async with RedisStreamsQueue(url, codec=MsgpackCodec(), namespace=namespace) as queue:
        ...         await queue.publish("fetch", ["https://example.com/"])
        ...         [delivery] = await queue.consume("fetch", group="download")
        ...         await queue.ack([delivery])
        ...         return delivery.payload, delivery.attempt, await queue.pending("fetch")
        >>> anyio.run(main)
        ('https://example.com/', 1, 0)
        >>> with redis.Redis(port=6379) as client:  # drop the example's keys
        ...     client.delete(*client.keys(f"{namespace}:*")) > 0
        True
    """

    def __init__(
        self,
        url: str,
        *,
        codec: Codec,
        namespace: str = "mocra",
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        connect_timeout: float = 5.0,
        reconnect_timeout: float = 30.0,
        liveness_timeout: float = 10.0,
    ) -> None:
        check_limits(visibility_timeout, max_attempts)
        check_liveness(liveness_timeout)
        if not namespace:
            raise ValueError("namespace must not be empty")
        self.namespace = namespace
        self.visibility_timeout = visibility_timeout
        self.max_attempts = max_attempts
        self._store = RedisStore(url, connect_timeout=connect_timeout, reconnect_timeout=reconnect_timeout)
        self.url = self._store.url
        self._codec = codec
        self.liveness_timeout = liveness_timeout
        self._liveness_ms = max(1, math.ceil(liveness_timeout * 1000))
        self._keeper = LeaseKeeper(self._beat, every=liveness_timeout / 5, what=f"redis {self.url}")
        self._leases = Leases(
            self._store,
            codec,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            liveness_timeout=liveness_timeout,
        )
        self._ids = map(f"{secrets.token_hex(6)}.{{}}".format, itertools.count(1))
        self._topics: dict[str, Topic] = {}

    def __repr__(self) -> str:
        closed = " closed" if self._store.closed else ""
        return f"<RedisStreamsQueue {self.url!r} namespace={self.namespace!r}{closed}>"

    async def __aenter__(self) -> Self:
        """Connect; raises `BackendUnavailable` (naming the URL) when the server cannot be reached."""
        if self._store.closed:
            raise anyio.ClosedResourceError
        try:
            await self._store.connect()
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

    async def _beat(self) -> None:
        """Tell the other consumers of every topic this queue consumes that it is alive."""
        prefixes = [state.prefix for state in self._topics.values() if state.group]
        await self._store.beat(prefixes, self._liveness_ms)

    def _topic(self, topic: str) -> Topic:
        if self._store.closed:
            raise anyio.ClosedResourceError
        state = self._topics.get(topic)
        if state is None:
            if not isinstance(topic, str) or not topic or "\0" in topic:
                raise ValueError(f"topic must be a non-empty str without NUL, got {topic!r}")
            state = Topic(topic, f"{self.namespace}:{{{topic}}}:")
            state.publishes = Gather(partial(self._publish_all, state))
            state.takes = Gather(partial(self._leases.take_all, state), partial(self._leases.keep, state))
            state.acks = Gather(partial(self._ack_all, state))
            self._topics[topic] = state
        return state

    async def publish(
        self,
        topic: str,
        payloads: Sequence[object],
        *,
        key: str | None = None,
        priority: int = 0,
        delay: float = 0.0,
    ) -> None:
        """Add `payloads` to `topic`, in order (see `QueueBackend.publish`)."""
        state = self._topic(topic)
        check_payloads(payloads)
        if not payloads:
            return
        lane_ = lane(priority)
        created = time.time()
        encode, ids = self._codec.encode, self._ids
        envelopes = [
            pack(
                Envelope(
                    id=next(ids), topic=topic, body=encode(p), created=created, key=key, priority=priority
                )
            )
            for p in payloads
        ]
        delay_ms = math.ceil(delay * 1000) if delay > 0 else 0
        for start in range(0, len(envelopes), _CHUNK):
            await state.publishes((lane_, delay_ms, key, envelopes[start : start + _CHUNK]))

    async def _publish_all(self, state: Topic, batches: list[Publish]) -> list[None]:
        await self._store.publish(state.prefix, batches)
        return [None] * len(batches)

    async def consume(
        self, topic: str, *, group: str, max_messages: int = 1, wait: float = 1.0
    ) -> Sequence[Delivery]:
        """Lease up to `max_messages` messages of `topic` (see `QueueBackend.consume`)."""
        state = self._topic(topic)
        if state.group != group:
            if state.group:
                raise ValueError(f"topic {topic!r} is consumed by group {state.group!r}, not {group!r}")
            state.group = group
        check_max_messages(max_messages)
        bell = state.bell
        deadline = anyio.current_time() + wait
        try:
            if wait > 0 and bell.listening and not state.spares:  # a listener found nothing: wait for news
                if not await self._follow(bell, wait):
                    return []
            while True:
                found, snapshot, pause = await state.takes(max_messages)
                remaining = deadline - anyio.current_time()
                if found or remaining <= 0:
                    return found
                if bell.listening:
                    if not await self._follow(bell, remaining):
                        return []
                    continue
                listen = partial(self._store.listen, state.prefix, snapshot)
                await bell.listen(listen, min(remaining, pause))
                if self._store.closed:
                    raise anyio.ClosedResourceError
        finally:
            bell.pass_on()

    async def _follow(self, bell: Bell, seconds: float) -> bool:
        woken = await bell.follow(seconds)
        if self._store.closed:
            raise anyio.ClosedResourceError
        return woken

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Finish `deliveries`; stale ones are ignored (see `QueueBackend.ack`).

        Concurrent acks of one topic share a script call.
        """
        by_topic: dict[Topic, list[bytes]] = {}
        for delivery in deliveries:
            lease = self._leases.end(delivery)
            if lease is not None:
                by_topic.setdefault(lease.state, []).append(lease.token)
        for state, leases in by_topic.items():
            await state.acks(leases)

    async def _ack_all(self, state: Topic, batches: list[list[bytes]]) -> list[None]:
        await self._store.ack(state.prefix, state.group, [lease for batch in batches for lease in batch])
        return [None] * len(batches)

    async def nack(self, delivery: Delivery, *, delay: float = 0.0, reason: str = "") -> None:
        """Hand `delivery` back for a later attempt, or to the DLQ (see `QueueBackend.nack`)."""
        lease = self._leases.end(delivery)
        if lease is None:
            return
        state, attempt = lease.state, lease.attempt
        if attempt >= self.max_attempts:
            reason = f"{reason or 'nacked'} on attempt {attempt} of {self.max_attempts}"
            await self._leases.bury(state, lease.token, lease.envelope, attempt, reason)
            return
        again = pack(msgspec.structs.replace(lease.envelope, attempt=attempt + 1))
        mode, delay_ms = ("later", math.ceil(delay * 1000)) if delay > 0 else ("now", 0)
        await self._store.end(state.prefix, state.group, lease.token, mode, delay_ms, again)

    async def dead_letter(self, delivery: Delivery, *, reason: str) -> None:
        """Move `delivery` to its topic's DLQ (see `QueueBackend.dead_letter`)."""
        lease = self._leases.end(delivery)
        if lease is not None:
            await self._leases.bury(lease.state, lease.token, lease.envelope, lease.attempt, reason)

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Read up to `limit` dead letters of `topic`, oldest first."""
        state = self._topic(topic)
        return await read_dead_letters(self._store, state.prefix, topic, self._codec, limit)

    async def replay(self, topic: str, ids: Sequence[str] | None = None) -> int:
        """Move dead letters of `topic` back to it with the attempt reset; returns how many."""
        return await replay_dead_letters(self._store, self._topic(topic).prefix, ids)

    async def pending(self, topic: str) -> int:
        """Messages of `topic` ready, delayed, held for their key or leased, across all workers."""
        return await self._store.pending(self._topic(topic).prefix)

    async def aclose(self) -> None:
        """Close the connections; leases still held come back to the other consumers at their next sweep."""
        if self._store.closed:
            return
        self._keeper.cancel()
        self._store.closed = True
        for state in self._topics.values():
            state.bell.close()
        self._leases.clear()
        await self._store.close(
            [(state.prefix, state.group) for state in self._topics.values() if state.group]
        )
