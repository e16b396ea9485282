"""`Member`: one `KafkaQueue` consumer-group member's side of the group — joining, rebalances, commits.

After a rebalance the member settles its partitions: one it still owns keeps its window if the group's
committed offset is the one it committed last; the others start at their committed offset, with the last
`State` their previous owner wrote (`_state.py`). Commits run in the background: the group's offsets
(each partition's oldest record not done), then the `State` of each partition changed. `Reader`
(`_reader.py`) adds the fetch loop and the ends of a lease that publish.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from ..._errors import BackendUnavailable
from ..._gather import Gather
from ._state import State, StateLog
from ._window import Part, Window

if TYPE_CHECKING:
    from ._driver import Consumer, TopicPartition
    from ._wire import Names, Wire

__all__ = ("POLL", "Member")

logger = logging.getLogger(__name__)

POLL = 0.5  # seconds the fetch loop waits at most before it looks at timers and lanes again


class Member(Window):
    """One member of the consumer group of (topic, group); see the module docstring."""

    def __init__(
        self,
        topic: str,
        group: str,
        *,
        wire: Wire,
        names: Names,
        visibility_timeout: float,
        fetch_wait: float,
        published: dict[TopicPartition, int],
    ) -> None:
        super().__init__(topic, visibility_timeout=visibility_timeout, published=published)
        self.group_id = names.group(topic, group)
        self._wire = wire
        self._names = names
        self.lanes: dict[str, int] = {}  # Kafka topic -> lane
        self._log = StateLog(wire, names, group, fetch_wait=fetch_wait)
        self._persists: Gather[None, None] = Gather(self._write_states)
        self._assigned: set[TopicPartition] | None = None  # to settle after a rebalance
        self._generation = 0
        self._joined = anyio.Event()
        self._committing = False
        self._idle = anyio.Event()  # set when no commit is in flight
        self._idle.set()
        self._wake = anyio.CancelScope()  # around the fetch loop's wait; a rebalance cancels it

    async def wait_joined(self, seconds: float) -> None:
        """Wait until the group assigned this member its partitions (the first time only)."""
        with anyio.move_on_after(seconds):
            await self._joined.wait()
        if self._closed:
            raise anyio.ClosedResourceError
        if not self._joined.is_set():
            problem = f"group {self.group_id!r} assigned no partitions in {seconds:g} s"
            raise BackendUnavailable("kafka", self._wire.url, problem)

    def add_lanes(self, lanes: dict[str, int]) -> None:
        """Consume these lane topics too (a rebalance follows)."""
        if lanes.keys() <= self.lanes.keys():
            return
        self.lanes.update(lanes)
        if self._consumer is not None:
            self._consumer.subscribe(topics=sorted(self.lanes), listener=self)

    def close(self) -> None:
        """Refuse further calls and wake everything waiting (they raise `ClosedResourceError`)."""
        super().close()
        self._joined.set()

    # ------------------------------------------------------------------ rebalancing and commits

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """aiokafka: a rebalance starts; commit while this member still owns its partitions."""
        self._rebalancing = True
        consumer = self._consumer
        if consumer is not None and self.parts and not self._committing:
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
        it committed last; the others start at their committed offset, with the lease mark the last
        member committed.
        """
        assigned, generation = self._assigned or set(), self._generation
        ordered = sorted(assigned)
        ends = await consumer.end_offsets(ordered) if ordered else {}
        positions = {tp: await consumer.position(tp) for tp in ordered}
        kept = {
            tp
            for tp in ordered
            if (part := self.parts.get(tp)) is not None
            and part.committed == positions[tp]
            and ends[tp] >= part.mark()
        }
        fresh = [tp for tp in ordered if tp not in kept]
        states = await self._log.read(fresh)
        logger.debug("kafka: %s keeps %s, takes %s over (%s)", self.group_id, kept, fresh, states)
        if generation != self._generation:
            return  # another rebalance meanwhile: settle that one
        for tp in [tp for tp in self.parts if tp not in kept]:
            self.drop(self.parts.pop(tp))  # lost, moved meanwhile, or the broker lost it
        for tp in fresh:
            part = self.parts[tp] = Part(tp, self.lanes.get(tp.topic, 0), positions[tp])
            part.inherited = states.get(tp)
        for tp in ordered:
            part = self.parts[tp]
            if tp in kept:
                consumer.seek(tp, part.next)
            part.target = ends[tp]
            if not part.paused:
                consumer.resume(tp)
        self._assigned = None
        self._rebalancing = False
        self._joined.set()
        self._commit_wanted.set()
        self.waiters.notify(len(self.waiters))

    async def _commit(self, consumer: Consumer) -> None:
        """Commit the group's offsets, then write the state of the partitions changed.

        Not bounded by a timeout: cancelling aiokafka's commit in flight leaves its shielded request
        behind, whose error nobody would read. aiokafka retries outages itself.
        """
        self._committing = True
        self._idle = anyio.Event()
        try:
            offsets = {tp: mark for tp, part in self.parts.items() if (mark := part.mark()) != part.committed}
            if offsets:
                await consumer.commit(offsets)
                for tp, mark in offsets.items():
                    if (part := self.parts.get(tp)) is not None:
                        part.committed = mark
            await self.persist()
        finally:
            self._committing = False
            self._idle.set()

    async def persist(self) -> None:
        """Write the `State` of every partition leased from or finished in since its last write.

        Writes are one at a time, each built when it starts, so the last record of a partition is its
        newest state; callers arriving while a write is in flight share the next one (group commit), so
        a caller waits for two writes at most.
        """
        await self._persists(None)

    async def _write_states(self, callers: list[None]) -> list[None]:
        parts = [part for part in self.parts.values() if part.dirty and not part.dropped]
        if parts:
            states: dict[TopicPartition, State] = {}
            for part in parts:
                part.dirty = False
                if part.inherited is not None and part.inherited.end() <= part.next:
                    part.inherited = None
                leased = {held.offset for held in self.leases.values() if part.live.get(held.offset) is held}
                states[part.tp] = State.of(list(part.live), part.next, leased | part.lost, part.inherited)
            try:
                await self._log.write(states)
            except BaseException:
                for part in parts:
                    part.dirty = True
                raise
        return [None] * len(callers)

    async def quiesce(self, seconds: float) -> None:
        """After `close`: wait (up to `seconds`) for a commit in flight, so that it is not cancelled.

        A cancelled aiokafka commit leaves its request running, and an error it ends with unread.
        """
        with anyio.move_on_after(seconds):
            await self._idle.wait()

    async def _commits(self, consumer: Consumer) -> None:
        while True:
            await self._commit_wanted.wait()
            self._commit_wanted = anyio.Event()
            if self._closed:
                return  # `run` commits a last time
            if self._rebalancing:
                continue  # settling sets it again
            try:
                await self._commit(consumer)
            except Exception as exc:
                logger.debug("kafka: commit of %s failed: %r; retrying", self.group_id, exc)
                await anyio.sleep(POLL)
                self._commit_wanted.set()
