"""`Leases`: the consuming side of `RedisStreamsQueue`: takes, the deliveries they make, and their leases.

A take (one `TAKE` script) leases entries on the server; each becomes a `Delivery` whose lease token maps
to a `Lease` here, until `end` hands it back for an ack, nack or dead-letter. Entries that are not
envelopes, whose payload the codec cannot decode, or whose last attempt expired go to the DLQ instead.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import TYPE_CHECKING

import anyio
import msgspec

from ..._errors import PoisonMessage
from ...queue._codec import decode_problem
from ...queue._delivery import Delivery
from ...queue._envelope import Envelope, pack, unpack
from ...queue._waiters import new_lease_token
from ._queue_bell import Bell

if TYPE_CHECKING:
    from ..._gather import Gather
    from ...queue._codec import Codec
    from ._queue_store import Entry, Publish, RedisStore

__all__ = ("POLL", "Lease", "Leases", "Took", "Topic")

POLL = 1.0  # seconds a listener blocks at most (a safety net for changes nobody rang for)

Took = tuple[list[Delivery], bytes, float]  # deliveries, the bell's last id, seconds to listen at most


class Topic:
    """What this queue keeps of one topic: its key prefix, group, bell and batched calls."""

    __slots__ = ("acks", "bell", "group", "name", "next_sweep", "prefix", "publishes", "spares", "takes")

    def __init__(self, name: str, prefix: str) -> None:
        self.name = name
        self.prefix = prefix
        self.group = ""
        self.next_sweep = 0.0  # event-loop time of the next XAUTOCLAIM sweep
        self.bell = Bell()
        self.publishes: Gather[Publish, None]  # concurrent calls share a script call
        self.takes: Gather[int, Took]
        self.acks: Gather[list[bytes], None]
        self.spares: deque[tuple[float, Delivery]] = deque()  # leased for a consumer that was cancelled


class Lease:
    """A delivery's lease: its topic, its token on the server, its envelope and attempt."""

    __slots__ = ("attempt", "envelope", "state", "token")

    def __init__(self, state: Topic, token: bytes, envelope: Envelope, attempt: int) -> None:
        self.state = state
        self.token = token  # the lease on the server (see `_queue_lua.py`)
        self.envelope = envelope
        self.attempt = attempt


class Leases:
    """The leases this queue holds, and the takes that make them (see `RedisStreamsQueue`)."""

    __slots__ = (
        "_codec",
        "_expired",
        "_held",
        "_liveness_ms",
        "_store",
        "_sweep_every",
        "_visibility_ms",
        "max_attempts",
        "visibility_timeout",
    )

    def __init__(
        self,
        store: RedisStore,
        codec: Codec,
        *,
        visibility_timeout: float,
        max_attempts: int,
        liveness_timeout: float,
    ) -> None:
        self._store = store
        self._codec = codec
        self.visibility_timeout = visibility_timeout
        self.max_attempts = max_attempts
        self._visibility_ms = max(1, math.ceil(visibility_timeout * 1000))
        self._liveness_ms = max(1, math.ceil(liveness_timeout * 1000))
        self._sweep_every = min(visibility_timeout / 4, POLL)
        self._expired = f"lease expired (visibility timeout {visibility_timeout:g} s)"
        self._held: dict[int, Lease] = {}

    async def take_all(self, state: Topic, wants: list[int]) -> list[Took]:
        """One take for concurrent consumers, shared out in the order they asked."""
        found, snapshot, pause = await self._take(state, sum(wants))
        took, start = [], 0
        for want in wants:
            took.append((found[start : start + want], snapshot, pause))
            start += want
        return took

    def keep(self, state: Topic, took: Took) -> None:
        """What was leased for a consumer cancelled meanwhile goes to the next one."""
        now = anyio.current_time()
        state.spares.extend((now, delivery) for delivery in took[0])
        state.bell.notify(len(took[0]))

    async def _take(self, state: Topic, n: int) -> Took:
        """Lease what is ready; also returns the bell's last id and how long to listen at most."""
        found: list[Delivery] = []
        fresh = anyio.current_time() - self.visibility_timeout / 2
        while state.spares and len(found) < n:
            kept_at, delivery = state.spares.popleft()
            if kept_at > fresh and delivery._lease in self._held:
                found.append(delivery)
            else:  # its lease may expire before it is handled: let it come back to anyone
                self._held.pop(delivery._lease, None)
        if len(found) == n:
            return found, b"0-0", 0.0
        while True:
            now = anyio.current_time()
            sweep = now >= state.next_sweep
            taken = await self._store.take(
                state.prefix,
                state.group,
                n - len(found),
                sweep=sweep,
                visibility_ms=self._visibility_ms,
                liveness_ms=self._liveness_ms,
            )
            if sweep:
                state.next_sweep = now if taken.more else now + self._sweep_every
            new = [d for d in [await self._delivery(state, e) for e in taken.entries] if d is not None]
            found += new
            if len(found) == n or not (taken.again or len(new) < len(taken.entries)):
                break  # take again at the scan limit, or after dead-lettering (which may free a key)
        pause = POLL if taken.due is None else min(POLL, taken.due + 0.001)
        if taken.busy:
            pause = min(pause, max(state.next_sweep - anyio.current_time(), 0.001))
        return found, taken.bell, pause

    async def _delivery(self, state: Topic, entry: Entry) -> Delivery | None:
        """A delivery of a taken entry; poison and over-attempted entries go to the DLQ instead."""
        raw, count = entry.envelope, entry.deliveries
        try:
            if raw is None:
                raise PoisonMessage("stream entry without an envelope (no `e` field)")
            envelope = unpack(raw)
        except PoisonMessage as exc:
            garbage = Envelope(
                id=entry.id.decode(),
                topic=state.name,
                body=entry.fields if raw is None else raw,
                created=time.time(),
                key=None if entry.key is None else entry.key.decode(errors="replace"),
                priority=int(entry.lane, 16) - 2**63,
            )
            await self.bury(state, entry.lease, garbage, count, exc.reason)
            return None
        attempt = envelope.attempt + count - 1
        if attempt > self.max_attempts:  # the lease of its last attempt expired
            reason = f"{self._expired} on attempt {attempt - 1} of {self.max_attempts}"
            await self.bury(state, entry.lease, envelope, attempt - 1, reason)
            return None
        try:
            payload = self._codec.decode(envelope.body)
        except Exception as exc:  # a poison message: never handed out
            await self.bury(state, entry.lease, envelope, attempt, decode_problem(exc))
            return None
        token = new_lease_token()
        self._held[token] = Lease(state, entry.lease, envelope, attempt)
        return Delivery(
            envelope.id,
            state.name,
            payload,
            envelope.key,
            envelope.priority,
            attempt,
            envelope.created,
            token,
            envelope.prior_attempts,
        )

    async def bury(self, state: Topic, lease: bytes, envelope: Envelope, attempt: int, reason: str) -> None:
        """Move a leased entry to its topic's DLQ with `reason`."""
        dead = msgspec.structs.replace(envelope, attempt=attempt, reason=reason, failed_at=time.time())
        await self._store.end(state.prefix, state.group, lease, "dead", 0, pack(dead))

    def end(self, delivery: Delivery) -> Lease | None:
        """Stop holding the lease of `delivery`: it, or None if acked already or not ours."""
        if self._store.closed:
            raise anyio.ClosedResourceError
        lease = self._held.pop(delivery._lease, None)
        if lease is None or lease.envelope.id != delivery.id:
            return None  # acked already, or not ours
        return lease

    def clear(self) -> None:
        """Forget every lease (the queue is closing: they come back to the others at their next sweep)."""
        self._held.clear()
