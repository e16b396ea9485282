"""`RaftControlPlane`: the control plane replicated over several hosts with Raft (pysyncobj).

Every node keeps the whole `StateMachine` in memory (`MemoryStateStore`), made durable by the Raft
journal and snapshots in its data directory. Writes go through the Raft log: any node accepts them
and forwards them to the leader; the call returns once the command is committed and applied on this
node. Reads are local by default (they may lag the leader by a few milliseconds, or more on a node
cut off from the leader); `linearizable=True` first commits a no-op through the log, so the read
sees every write that completed before it started.

Security: pysyncobj unpickles what peers send, so an open Raft port is remote code execution. The
plane binds to the configured address only and requires a cluster password; every message is signed
with it and an unsigned one closes its connection before it is unpickled (see `_raft_auth.py`).
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from ._checks import check_name, check_ttl
from ._collections import CollectionCalls
from ._commands import (
    DEFAULT_KEEP,
    Heartbeat,
    Join,
    Publish,
    RenewLock,
    RenewPartition,
    Set,
    encode_command,
)
from ._errors import ClusterClosed, ClusterError, ClusterUnavailable
from ._liveness import send_heartbeats
from ._machine import StateMachine
from ._partition_calls import PartitionCalls
from ._protocol import ClusterStatus
from ._raft_commit import Committer
from ._raft_membership import RaftMembershipCalls
from ._raft_start import admit, start_node
from ._store import MemoryStateStore
from ._writes import WriteCalls

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from types import TracebackType
    from typing import Self

    from ._commands import Command
    from ._config import ClusterConfig
    from ._machine import Result
    from ._raft_node import RaftNode
    from ._records import LockInfo, Member, Message

__all__ = ("RaftControlPlane",)

_T = TypeVar("_T")

_IDEMPOTENT = (Set, RenewLock, RenewPartition, Heartbeat)
"""Commands whose second application changes neither the state nor the result."""


class RaftControlPlane(WriteCalls, CollectionCalls, PartitionCalls, RaftMembershipCalls):
    """A `ControlPlane` replicated with Raft across the nodes of `config`; use it with `async with`.

    Needs anyio's asyncio backend. Entering starts the node (binds `config.addr`) and its Raft
    thread, and with a join config has a seed add it as a voter; leaving stops them. `wait_ready()`
    waits for a leader and records this node in `members()` under `config.node_id`. A write needs a
    majority of the voters: without one it fails with `NoQuorum` at once (or after
    `tuning.commit_timeout`). While open, the node proposes its member `Heartbeat` every
    `tuning.liveness.heartbeat_interval` seconds; partitions belong to the live members only.

    Reads (`get`, `lock_holder`, `members`, ...) take a lock the Raft thread holds while it applies a
    command, for microseconds (milliseconds while it writes a snapshot of a large state).

    Example:
        >>> import socket, tempfile
        >>> from mocra_cluster import ClusterConfig
        >>> with socket.socket() as probe:
        ...     _ = probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]
        >>> async def main(data_dir: str) -> tuple[bytes | None, int | None]:
        ...     config = ClusterConfig.bootstrap("a", f"127.0.0.1:{port}", data_dir, password="pw")
        ...     async with RaftControlPlane(config) as plane:
        ...         with anyio.fail_after(10):
        ...             await plane.wait_ready()
        ...         await plane.set("greeting", b"hello")
        ...         token = await plane.acquire_lock("job", holder="a", ttl=30)
        ...         return await plane.get("greeting", linearizable=True), token
        >>> with tempfile.TemporaryDirectory() as data_dir:
        ...     anyio.run(main, data_dir)
        (b'hello', 1)
    """

    def __init__(
        self, config: ClusterConfig, *, clock: Callable[[], float] = time.time, poll_interval: float = 0.05
    ) -> None:
        self._config = config
        self._clock = clock
        self._poll_interval = check_ttl(poll_interval)
        self._machine = StateMachine(MemoryStateStore())
        self._node: RaftNode | None = None
        self._committer: Committer | None = None
        self._stack: AsyncExitStack | None = None
        self._closed = False

    @property
    def config(self) -> ClusterConfig:
        """The settings this plane was built with."""
        return self._config

    @property
    def member_id(self) -> str:
        """This node's member id (`config.node_id`)."""
        return self._config.node_id

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        if self._stack is not None or self._closed:
            raise ClusterError("a RaftControlPlane can be entered once")
        node, joining = await anyio.to_thread.run_sync(start_node, self._config, self._machine)
        refused: ClusterError | None = None
        async with AsyncExitStack() as stack:
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(node.stop)  # runs before the task group waits for the Raft thread
            group.start_soon(self._run_raft_thread, node, name=f"raft-{self._config.node_id}")
            try:
                if joining:  # the node runs: the leader can reach it and commit the change
                    await admit(self._config)
            except ClusterError as exc:  # raised once the stack has stopped the node, ungrouped
                refused = exc
            else:
                self._committer = Committer(node, self._config.tuning)
                self._node = node
                stack.callback(group.cancel_scope.cancel)  # stops the heartbeats first
                beat = self._config.tuning.liveness.heartbeat_interval
                group.start_soon(send_heartbeats, self.propose, self.member_id, self._clock, beat)
                self._stack = stack.pop_all()
        if refused is not None:
            raise refused
        return self

    @staticmethod
    async def _run_raft_thread(node: RaftNode) -> None:
        # Shielded: even when the group is cancelled before this task starts, the thread runs, and
        # its end (after `node.stop()`) destroys the node: closes its port and journal.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(node.run, limiter=anyio.CapacityLimiter(1))

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the Raft thread, close the port and the journal; later calls raise `ClusterClosed`.

        The node stays a voter: `remove` it from another node if it leaves for good.
        """
        self._closed = True
        stack, self._stack = self._stack, None
        if stack is not None:  # stops the Raft thread, then waits for it (the task group exits)
            await stack.aclose()

    def _require(self) -> RaftNode:
        if self._closed or self._node is None:
            raise ClusterClosed("the Raft control plane is closed" if self._closed else "enter it first")
        return self._node

    async def wait_ready(self) -> None:
        """Wait until a leader is known, this node has caught up, and it is recorded in `members()`.

        Bound it with `anyio.fail_after`: it waits as long as too few voters are up.
        """
        node = self._require()
        # The Raft thread owns this state; polling it every 10 ms costs nothing measurable.
        while not (node.is_ready and node.leader is not None):  # noqa: ASYNC110
            await anyio.sleep(0.01)
        command = Join(member_id=self.member_id, addr=self._config.addr, voter=True, now=self._clock())
        while True:
            try:
                await self._commit(encode_command(command), idempotent=True)
                return
            except ClusterUnavailable:  # an election, or a peer still starting: try again
                await anyio.sleep(self._config.tuning.heartbeat)

    # ------------------------------------------------------------------ the log

    async def _commit(self, raw: bytes, *, idempotent: bool = False) -> object:
        self._require()
        assert self._committer is not None
        return await self._committer.commit(raw, idempotent=idempotent)

    async def propose(self, command: Command) -> Result:
        """Commit `command` through the log and return what the machine returned for it here.

        If the leader changes after taking the command, it is proposed again when applying it twice
        is harmless (`Set`, renewals); otherwise `ClusterUnavailable` says the outcome is
        unknown (read back to find out). Cancelling the call stops the wait, not the command: it may
        still be applied.
        """
        idempotent = isinstance(command, _IDEMPOTENT)
        return await self._commit(encode_command(command), idempotent=idempotent)  # type: ignore[return-value]

    async def barrier(self) -> None:
        """Commit a no-op: afterwards local reads reflect every write committed before the call."""
        await self._commit(b"", idempotent=True)

    async def _read(self, linearizable: bool = False) -> RaftNode:
        if linearizable:
            await self.barrier()
        else:
            await anyio.lowlevel.checkpoint()
        return self._require()

    async def _view(self, read: Callable[[StateMachine], _T]) -> _T:
        node = await self._read()
        with node.lock:
            return read(self._machine)

    # ------------------------------------------------------------------ key/value

    async def get(self, key: str, *, linearizable: bool = False) -> bytes | None:
        """Return the live value of `key`, or None (a local read unless `linearizable`)."""
        check_name("key", key)
        node = await self._read(linearizable)
        with node.lock:
            return self._machine.get(key, self._clock())

    # ------------------------------------------------------------------ fenced locks

    async def lock_holder(self, key: str, *, linearizable: bool = False) -> LockInfo | None:
        """Return the live grant of lock `key`, or None."""
        check_name("key", key)
        node = await self._read(linearizable)
        with node.lock:
            return self._machine.lock(key, self._clock())

    async def fence(self, *, linearizable: bool = False) -> int:
        """Return the last fencing token handed out (kept in the state: survives restarts, snapshots)."""
        node = await self._read(linearizable)
        with node.lock:
            return self._machine.fence

    # ------------------------------------------------------------------ cluster

    async def is_leader(self) -> bool:
        """Return whether this node leads the Raft cluster now."""
        return (await self._read()).is_leader

    async def status(self) -> ClusterStatus:
        """Return this node's view: the leader's member id (its address if unrecorded), term, counts."""
        node = await self._read()
        leader = node.leader
        with node.lock:
            members = self._machine.members()
            applied = self._machine.applied
        names = {member.addr: member.member_id for member in members}
        return ClusterStatus(
            node_id=self.member_id,
            leader=None if leader is None else names.get(leader, leader),
            term=node.term,
            applied_index=applied,
            members=len(members),
        )

    async def members(self, *, linearizable: bool = False) -> list[Member]:
        """Return every member, ordered by id."""
        node = await self._read(linearizable)
        with node.lock:
            return self._machine.members()

    async def live_members(self) -> list[Member]:
        """Return the members seen within `tuning.liveness.member_ttl` of this clock, ordered by id."""
        node = await self._read()
        with node.lock:
            return self._machine.live_members(self._clock(), self._config.tuning.liveness.member_ttl)

    async def voters(self) -> list[Member]:
        """Return the members recorded as voters, ordered by id."""
        return [member for member in await self.members() if member.voter]

    # ------------------------------------------------------------------ topics

    async def publish(self, topic: str, payload: bytes, *, keep: int = DEFAULT_KEEP) -> int:
        """Append `payload` to the log of `topic`, which keeps its last `keep` messages; return the seq."""
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be an int >= 1, got {keep!r}")
        command = Publish(topic=check_name("topic", topic), payload=payload, now=self._clock(), keep=keep)
        return int(await self.propose(command) or 0)

    def subscribe(self, topic: str, *, from_seq: int | None = None) -> AsyncIterator[Message]:
        """Yield the messages of `topic` published after this call (or from sequence `from_seq` on).

        Polls this node's copy of the log every `poll_interval` seconds; ends when the plane closes.
        """
        node = self._require()
        with node.lock:
            after = self._machine.last_seq(check_name("topic", topic)) if from_seq is None else from_seq - 1
        return self._follow(node, topic, after)

    async def _follow(self, node: RaftNode, topic: str, after: int) -> AsyncIterator[Message]:
        while not self._closed:
            with node.lock:
                batch = self._machine.messages(topic, after, limit=100)
            for message in batch:
                after = message.seq
                yield message
            if batch:
                await anyio.lowlevel.checkpoint()
            else:
                await anyio.sleep(self._poll_interval)
