"""`LocalControlPlane`: the control plane of one host, the state machine over an LMDB directory."""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import anyio.to_thread

from ._checks import check_name, check_partition, check_ttl
from ._collections import CollectionCalls
from ._commands import (
    DEFAULT_KEEP,
    AcquirePartition,
    Join,
    Publish,
    ReleasePartition,
    Remove,
    RenewPartition,
)
from ._errors import ClusterClosed, ClusterError
from ._liveness import Liveness, send_heartbeats
from ._lmdb_store import LmdbStateStore
from ._machine import StateMachine
from ._partitions import owned_partitions, owner, partition_of
from ._protocol import ClusterStatus
from ._writes import WriteCalls

if TYPE_CHECKING:
    import os
    from collections.abc import AsyncIterator, Callable
    from types import TracebackType
    from typing import Self, TypeVar

    from ._commands import Command
    from ._machine import Result
    from ._records import LockInfo, Member, Message

__all__ = ("LocalControlPlane",)

if TYPE_CHECKING:
    T = TypeVar("T")


class LocalControlPlane(WriteCalls, CollectionCalls):
    """A `ControlPlane` for the processes of one host: durable, always the leader, term 1.

    Every write is one `StateMachine.apply` in one LMDB write transaction, so the processes that open
    the same directory see one linearisable state: LMDB's lock file serialises their writes, and the
    fencing counter, values, locks and topics survive restarts (`sync=True` also survives power cuts).

    On opening, the plane joins as member `member_id`; processes sharing an id share its partitions
    (the default "local": each owns all 256). Give each process its own id to spread partitions over
    them. While entered (`async with`), the plane proposes a `Heartbeat` every
    `liveness.heartbeat_interval` seconds from its own task group; partitions are owned by the *live*
    members only (seen within `liveness.member_ttl`), so a process that died hands its partitions on
    after the TTL. `members()` keeps listing it until it is `remove`d.

    **Blocking.** Reads run inline on the event loop (about 12 µs), and so do writes with `sync=False`
    (30-70 µs). With `sync=True` a write waits for an `fsync` (0.6-6 ms median, p99 10-24 ms on a
    shared VM; `benchmarks/bench_control_plane.py`), so it runs in a worker thread, one at a time per
    plane. Opening the plane writes once inline (its `Join`). A cancelled call either did nothing or
    completed: the cancellation is raised after the write.

    **Subscriptions** poll the topic's log every `poll_interval` seconds; a publish from this same
    plane wakes its subscribers at once.

    Args:
        path: The LMDB directory (created if missing), shared by the processes of the host.
        member_id: This process's member id.
        clock: Wall clock in epoch seconds (a fake in tests); it judges expiry.
        sync: `fsync` every write (see `LmdbStateStore`).
        poll_interval: How often subscribers look for messages from other processes, in seconds.
        liveness: Heartbeat interval and member TTL (defaults: 1 s and 5 s).

    Example:
        >>> import anyio, tempfile
        >>> async def main(path):
        ...     async with LocalControlPlane(path, sync=False) as plane:
        ...         token = await plane.acquire_lock("report", holder="worker-1", ttl=30)
        ...         await plane.set("report/state", b"running")
        ...     async with LocalControlPlane(path, sync=False) as plane:  # a restart
        ...         again = await plane.acquire_lock("other", holder="worker-2", ttl=30)
        ...         return token, again, await plane.get("report/state"), (await plane.status()).term
        >>> with tempfile.TemporaryDirectory() as path:
        ...     anyio.run(main, path)
        (1, 2, b'running', 1)
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        member_id: str = "local",
        clock: Callable[[], float] = time.time,
        sync: bool = True,
        poll_interval: float = 0.05,
        liveness: Liveness | None = None,
    ) -> None:
        self._member_id = check_name("member_id", member_id)
        self._poll_interval = check_ttl(poll_interval)
        self._liveness = liveness or Liveness()
        self._tasks: AsyncExitStack | None = None
        self._clock = clock
        self._sync = sync
        self._limiter: anyio.CapacityLimiter | None = None
        self._store: LmdbStateStore | None = LmdbStateStore(path, sync=sync)
        self._machine = StateMachine(self._store)
        self._published: anyio.Event | None = None
        self._write(Join(member_id=member_id, addr="local", voter=True, now=clock()))

    @property
    def member_id(self) -> str:
        """This process's member id."""
        return self._member_id

    def _write(self, command: Command) -> Result:
        store = self._store
        if store is None:
            raise ClusterClosed("the local control plane is closed")
        return store.atomic(lambda: self._machine.apply(command))

    def _open_machine(self) -> StateMachine:
        if self._store is None:
            raise ClusterClosed("the local control plane is closed")
        return self._machine

    async def _apply(self, command: Command) -> Result:
        if not self._sync:
            await anyio.lowlevel.checkpoint()
            return self._write(command)
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(self._write, command, limiter=self._limiter)

    async def _read(self) -> StateMachine:
        await anyio.lowlevel.checkpoint()
        return self._open_machine()

    async def _view(self, read: Callable[[StateMachine], T]) -> T:
        return read(await self._read())

    async def propose(self, command: Command) -> Result:
        """Apply `command` in one LMDB write transaction and return what the machine returned."""
        return await self._apply(command)

    # ------------------------------------------------------------------ KV

    async def get(self, key: str) -> bytes | None:
        """Return the value of `key`, or None if it is absent or expired."""
        return (await self._read()).get(check_name("key", key), self._clock())

    # ------------------------------------------------------------------ locks

    async def lock_holder(self, key: str) -> LockInfo | None:
        """Return the live grant of lock `key`, or None."""
        return (await self._read()).lock(check_name("key", key), self._clock())

    # ------------------------------------------------------------------ cluster

    async def is_leader(self) -> bool:
        """Return True: the local plane always leads."""
        await self._read()
        return True

    async def status(self) -> ClusterStatus:
        """Return this node's view: itself the leader, term 1, the commands applied, the members."""
        machine = await self._read()
        return ClusterStatus(
            node_id=self._member_id,
            leader=self._member_id,
            term=1,
            applied_index=machine.applied,
            members=len(machine.members()),
        )

    async def members(self) -> list[Member]:
        """Return every member, ordered by id."""
        return (await self._read()).members()

    async def live_members(self) -> list[Member]:
        """Return the members seen within `liveness.member_ttl` seconds of this clock, ordered by id."""
        return (await self._read()).live_members(self._clock(), self._liveness.member_ttl)

    async def voters(self) -> list[Member]:
        """Return the voting members, ordered by id."""
        return [member for member in await self.members() if member.voter]

    async def join(self, member_id: str, addr: str, *, voter: bool = True) -> bool:
        """Add a member (or update its address and vote); True if it is new."""
        command = Join(
            member_id=check_name("member_id", member_id), addr=addr, voter=voter, now=self._clock()
        )
        return bool(await self._apply(command))

    async def remove(self, member_id: str) -> bool:
        """Remove a member; True if it was one."""
        return bool(await self._apply(Remove(member_id=check_name("member_id", member_id))))

    # ------------------------------------------------------------------ partitions

    async def owns_key(self, key: str | bytes) -> bool:
        """Return whether this process owns the partition of `key` among the live members."""
        ids = [member.member_id for member in await self.live_members()]
        return owner(partition_of(key), ids) == self._member_id

    async def owned_partitions(self) -> list[int]:
        """Return the partitions this process owns among the live members, in order."""
        ids = [member.member_id for member in await self.live_members()]
        return owned_partitions(self._member_id, ids)

    async def acquire_partition(self, partition: int, ttl: float) -> int | None:
        """Lease `partition` to this member for `ttl` seconds; return a fencing token, or None if held."""
        command = AcquirePartition(
            partition=check_partition(partition),
            holder=self._member_id,
            ttl=check_ttl(ttl),
            now=self._clock(),
        )
        token = await self._apply(command)
        return None if token is None else int(token)

    async def renew_partition(self, partition: int, token: int, ttl: float) -> bool:
        """Extend this member's lease of `partition` (grant `token`) to `ttl` seconds from now."""
        command = RenewPartition(
            partition=check_partition(partition),
            holder=self._member_id,
            token=token,
            ttl=check_ttl(ttl),
            now=self._clock(),
        )
        return bool(await self._apply(command))

    async def release_partition(self, partition: int, token: int) -> bool:
        """Free this member's lease of `partition` (grant `token`); True if it did."""
        command = ReleasePartition(partition=check_partition(partition), holder=self._member_id, token=token)
        return bool(await self._apply(command))

    async def partition_lease(self, partition: int) -> LockInfo | None:
        """Return the live lease of `partition`, or None."""
        return (await self._read()).partition_lease(check_partition(partition), self._clock())

    # ------------------------------------------------------------------ topics

    async def publish(self, topic: str, payload: bytes, *, keep: int = DEFAULT_KEEP) -> int:
        """Append `payload` to the log of `topic`, which keeps its last `keep` messages; return the seq."""
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be an int >= 1, got {keep!r}")
        command = Publish(topic=check_name("topic", topic), payload=payload, now=self._clock(), keep=keep)
        seq = int(await self._apply(command) or 0)
        if self._published is not None:
            self._published.set()
            self._published = None
        return seq

    def subscribe(self, topic: str, *, from_seq: int | None = None) -> AsyncIterator[Message]:
        """Yield the messages of `topic` published after this call (or from sequence `from_seq` on).

        The iteration polls every `poll_interval` seconds (at once after a publish on this plane) and
        ends when the plane is closed.
        """
        machine = self._open_machine()
        after = machine.last_seq(check_name("topic", topic)) if from_seq is None else from_seq - 1
        return self._follow(topic, after)

    async def _follow(self, topic: str, after: int) -> AsyncIterator[Message]:
        while self._store is not None:
            batch = self._machine.messages(topic, after, limit=100)
            for message in batch:
                after = message.seq
                yield message
            if batch:
                await anyio.lowlevel.checkpoint()
                continue
            if self._published is None:
                self._published = anyio.Event()
            with anyio.move_on_after(self._poll_interval):
                await self._published.wait()

    # ------------------------------------------------------------------ lifecycle

    async def aclose(self) -> None:
        """Stop the heartbeats and close the LMDB directory (the membership stays).

        Later calls raise `ClusterClosed`.
        """
        tasks, self._tasks = self._tasks, None
        if tasks is not None:
            await tasks.aclose()
        store, self._store = self._store, None
        if store is not None:
            store.close()
        if self._published is not None:
            self._published.set()
        await anyio.lowlevel.checkpoint()

    async def __aenter__(self) -> Self:
        if self._tasks is not None or self._store is None:
            raise ClusterError("a LocalControlPlane can be entered once, before it is closed")
        async with AsyncExitStack() as stack:
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            interval = self._liveness.heartbeat_interval
            group.start_soon(send_heartbeats, self._apply, self._member_id, self._clock, interval)
            self._tasks = stack.pop_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
