"""`LmdbQueue`: a durable `QueueBackend` in one LMDB directory, for crash-safe resume of a crawl."""

from __future__ import annotations

import os
import time
from heapq import heappush
from typing import TYPE_CHECKING

import anyio
from anyio.abc import AsyncResource

from ..._errors import ConfigError
from ...queue._checks import check_limits, check_payloads
from ...queue._codec import decode_problem
from ...queue._delivery import DeadLetter, Delivery
from ...queue._inprocess import InProcessQueue
from ...queue._waiters import new_lease_token
from ._lockfile import LockFile
from ._queue_reader import read_dead_letters
from ._queue_returns import Lease, LeaseReturns, TopicState
from ._queue_store import LmdbStore, unpack_message

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ...queue._codec import Codec
    from ._queue_store import Txn

__all__ = ("LmdbQueue",)


class LmdbQueue(InProcessQueue[TopicState], AsyncResource):
    """A `QueueBackend` stored in an LMDB directory, so a crawl resumes where it stopped.

    Every state change is one LMDB write transaction, committed before the call returns. LMDB calls take
    microseconds and are made inline on the event loop (no worker thread). The environment is opened with
    `sync=False, metasync=False`: commits survive the process being killed (`kill -9`, a crash), but a
    power cut or kernel crash may lose the last commits (and, on file systems that reorder writes, may
    damage the database). `aclose` flushes everything to disk.

    On open, every message leased by the previous process comes back with `attempt + 1` (or goes to the
    DLQ once it has had `max_attempts`), at its old place; delayed messages keep their due time (stored
    as wall-clock time). One process at a time may use a directory: a lock file enforces it
    (`LmdbQueueReader` reads one beside it).

    Payloads are stored as `codec.encode(payload)`; a message whose bytes `codec.decode` rejects is
    dead-lettered instead of handed out (its `DeadLetter.payload` is then the raw bytes).

    Args:
        path: Directory of the queue (created if missing).
        codec: Turns payloads into bytes and back, e.g. `MsgpackCodec(MyStruct)`.
        visibility_timeout: Seconds a delivery may stay unacked before it comes back with `attempt + 1`.
        max_attempts: Deliveries of one message before a nack or an expired lease dead-letters it.
        clock: Monotonic seconds for delays and leases (inject a fake one in tests).
        wall_clock: Epoch seconds for `created`, `failed_at` and the stored due time of delayed messages.
        map_size: Initial size of the memory map in bytes; the file is sparse and the map doubles when full.

    Raises:
        ConfigError: `path` cannot be created, or another process is using it.

    Example:
        >>> import anyio, tempfile
        >>> from mocra_core.queue import MsgpackCodec
        >>> async def main(path):
        ...     async with LmdbQueue(path, codec=MsgpackCodec()) as queue:
        ...         await queue.publish("fetch", ["https://example.com/"])
        ...     async with LmdbQueue(path, codec=MsgpackCodec()) as queue:  # reopened: still there
        ...         [delivery] = await queue.consume("fetch", group="download")
        ...         await queue.ack([delivery])
        ...         return delivery.payload, await queue.pending("fetch")
        >>> with tempfile.TemporaryDirectory() as path:
        ...     anyio.run(main, path)
        ('https://example.com/', 0)
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        codec: Codec,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        map_size: int = 8 << 30,
    ) -> None:
        check_limits(visibility_timeout, max_attempts)
        self.path = os.fspath(path)
        self.visibility_timeout = visibility_timeout
        self.max_attempts = max_attempts
        self._codec = codec
        self._clock = clock
        self._wall_clock = wall_clock
        self._closed = False
        try:
            os.makedirs(self.path, exist_ok=True)
        except OSError as exc:
            raise ConfigError("queue.path", f"cannot create {self.path!r}: {exc}") from None
        self._lock = LockFile(self.path)
        self._topics: dict[str, TopicState] = {}
        try:
            self._store = LmdbStore(self.path, map_size=map_size)
        except BaseException:
            self._lock.release()
            raise
        self._returns = LeaseReturns(
            self._store,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            clock=clock,
            wall_clock=wall_clock,
        )
        try:
            self._store.recover(max_attempts, wall_clock())
            for p, count in self._store.pending_counts().items():
                self._topic(p[:-1].decode()).pending = count
            now, wall_now = clock(), wall_clock()
            for p, seq, due in self._store.delayed_messages():
                heappush(self._topic(p[:-1].decode()).delayed, (now + max(due - wall_now, 0.0), seq))
        except BaseException:
            self._store.close()
            self._lock.release()
            raise

    def __repr__(self) -> str:
        return f"<LmdbQueue {self.path!r}{' closed' if self._closed else ''}>"

    def _topic(self, topic: str) -> TopicState:
        if self._closed:
            raise anyio.ClosedResourceError
        state = self._topics.get(topic)
        if state is None:
            if not isinstance(topic, str) or not topic or "\0" in topic:
                raise ValueError(f"topic must be a non-empty str without NUL, got {topic!r}")
            state = self._topics[topic] = TopicState(topic, topic.encode() + b"\0")
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
        """Add `payloads` to `topic`, in order, in one commit (see `QueueBackend.publish`)."""
        state = self._topic(topic)
        check_payloads(payloads)
        if not payloads:
            return
        blobs = [self._codec.encode(payload) for payload in payloads]
        if state.delayed:
            self._returns.reclaim(state)  # what is due joins its lane before these messages
        created = self._wall_clock()
        due = created + delay if delay > 0 else None
        seqs = self._store.write(lambda tx: tx.publish(state.p, created, priority, key, blobs, due))
        state.pending += len(seqs)
        if due is None:
            state.waiters.notify(len(seqs))
            return
        due_by_clock = self._clock() + delay
        for seq in seqs:
            heappush(state.delayed, (due_by_clock, seq))
        state.waiters.nudge()

    def _take(self, topic: str, max_messages: int) -> list[Delivery]:
        state = self._topic(topic)
        if state.leases or state.delayed:
            self._returns.reclaim(state)
        found: list[Delivery] = []
        while not found:
            taken = self._store.write(lambda tx: tx.lease_ready(state.p, state.busy, max_messages))
            if not taken:
                break
            deadline = self._clock() + self.visibility_timeout
            for seq, lane, order, attempt, key, blob, prior in taken:
                token = new_lease_token()
                state.leases[token] = lease = Lease(seq, lane, order, attempt, key, deadline)
                if key is not None:
                    state.busy.add(key)
                created, priority, _, payload = unpack_message(blob)
                try:
                    decoded = self._codec.decode(payload)
                except Exception as exc:  # a poison message: never handed out
                    del state.leases[token]
                    self._returns.bury(state, lease, decode_problem(exc))
                    continue
                delivery = Delivery(lease.id, topic, decoded, key, priority, attempt, created, token, prior)
                found.append(delivery)
        if found:
            state.waiters.nudge()  # leases expire by time: make sure a waiter keeps the clock
        return found

    def _end_lease(self, delivery: Delivery) -> tuple[TopicState, Lease] | None:
        state = self._topic(delivery.topic)
        lease = state.leases.get(delivery._lease)
        if lease is None or lease.id != delivery.id:
            return None  # stale: acked already, or expired and handed out again
        del state.leases[delivery._lease]
        return state, lease

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Finish `deliveries` in one commit; stale ones are ignored (see `QueueBackend.ack`)."""
        ended = [e for e in map(self._end_lease, deliveries) if e is not None]
        if not ended:
            return

        def change(tx: Txn) -> None:
            for state, lease in ended:
                tx.unlease(state.p, lease.seq, drop=True)
                if lease.key is not None:
                    tx.release(state.p, lease.key)

        self._store.write(change)
        for state, lease in ended:
            state.pending -= 1
            if lease.key is not None:
                state.busy.discard(lease.key)
                state.waiters.notify(1)

    async def nack(self, delivery: Delivery, *, delay: float = 0.0, reason: str = "") -> None:
        """Hand `delivery` back for a later attempt, or to the DLQ (see `QueueBackend.nack`)."""
        ended = self._end_lease(delivery)
        if ended is None:
            return
        self._returns.give_back(*ended, delay, reason or "nacked")

    async def dead_letter(self, delivery: Delivery, *, reason: str) -> None:
        """Move `delivery` to its topic's DLQ (see `QueueBackend.dead_letter`)."""
        ended = self._end_lease(delivery)
        if ended is not None:
            self._returns.bury(*ended, reason)

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Read up to `limit` dead letters of `topic`, oldest first."""
        self._topic(topic)  # checks the name
        return read_dead_letters(self._store, self._codec, topic, limit)

    async def replay(self, topic: str, ids: Sequence[str] | None = None) -> int:
        """Move dead letters of `topic` back to it with the attempt reset; returns how many."""
        state = self._topic(topic)
        if state.delayed:
            self._returns.reclaim(state)  # what is due joins its lane before the replayed messages
        chosen = None if ids is None else set(ids)
        moved = self._store.write(lambda tx: tx.replay(state.p, chosen))
        state.pending += moved
        state.waiters.notify(moved)
        return moved

    async def pending(self, topic: str) -> int:
        """Messages of `topic` ready, delayed or leased."""
        return self._topic(topic).pending

    async def aclose(self) -> None:
        """Flush and close; leases still held come back when the directory is opened again."""
        if not self._closed:
            self._closed = True
            for state in self._topics.values():
                state.waiters.notify_all()
            self._store.close()
            self._lock.release()
