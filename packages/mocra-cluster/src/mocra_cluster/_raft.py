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
from typing import TYPE_CHECKING, Self

import anyio
import anyio.to_thread

from ._commands import (
    AcquireLock,
    CompareAndSet,
    Delete,
    Join,
    Publish,
    ReleaseLock,
    Remove,
    RenewLock,
    Set,
    encode_command,
)
from ._errors import ClusterClosed, ClusterError, ClusterUnavailable, NoQuorum
from ._machine import StateMachine
from ._raft_bridge import LoopBridge
from ._raft_node import FAIL_REASONS, RETRYABLE, SUCCESS, ApplyFailed
from ._raft_start import start_node
from ._raft_status import RaftStatus
from ._store import MemoryStateStore

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from ._commands import Command
    from ._config import ClusterConfig
    from ._machine import Result
    from ._raft_node import RaftNode
    from ._records import LockInfo, Member, Message

__all__ = ("RaftControlPlane",)


class RaftControlPlane:
    """A control plane replicated with Raft across the nodes of `config`; use it with `async with`.

    Needs anyio's asyncio backend. Entering starts the node (binds `config.addr`, joins through a
    seed if the config says so) and its Raft thread; leaving stops them. A write needs a majority of
    the voters: without one it fails with `NoQuorum` at once (or after `tuning.commit_timeout`).

    Example:
        >>> import socket, tempfile
        >>> from mocra_cluster._config import ClusterConfig
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

    def __init__(self, config: ClusterConfig, *, clock: Callable[[], float] = time.time) -> None:
        self._config = config
        self._clock = clock
        self._machine = StateMachine(MemoryStateStore())
        self._node: RaftNode | None = None
        self._bridge: LoopBridge | None = None
        self._stack: AsyncExitStack | None = None
        self._closed = False

    @property
    def config(self) -> ClusterConfig:
        """The settings this plane was built with."""
        return self._config

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        if self._stack is not None or self._closed:
            raise ClusterError("a RaftControlPlane can be entered once")
        self._bridge = LoopBridge()
        async with AsyncExitStack() as stack:
            group = await stack.enter_async_context(anyio.create_task_group())
            node = await anyio.to_thread.run_sync(start_node, self._config, self._machine)
            stack.callback(node.stop)  # runs before the task group waits for the Raft thread
            group.start_soon(self._run_raft_thread, node, name=f"raft-{self._config.node_id}")
            self._node = node
            self._stack = stack.pop_all()
        return self

    @staticmethod
    async def _run_raft_thread(node: RaftNode) -> None:
        await anyio.to_thread.run_sync(node.run, limiter=anyio.CapacityLimiter(1))

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the Raft thread and close the port and the journal; later calls raise `ClusterClosed`."""
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
        while True:
            try:
                await self._commit(encode_command(self._join_command()))
                return
            except ClusterUnavailable:  # an election, or a peer still starting: try again
                await anyio.sleep(self._config.tuning.heartbeat)

    def _join_command(self) -> Join:
        return Join(member_id=self._config.node_id, addr=self._config.addr, voter=True, now=self._clock())

    # ------------------------------------------------------------------ the log

    async def _commit(self, raw: bytes) -> object:
        """Propose `raw` and wait until it is applied here; retry while the command surely did not apply."""
        node = self._require()
        assert self._bridge is not None
        timeout = self._config.tuning.commit_timeout
        with anyio.move_on_after(timeout):
            while True:
                await self._until_leader_reachable(node)
                pending = self._bridge.pending()
                node.submit(raw, pending.resolve)
                value, error = await pending.wait()
                if error == SUCCESS:
                    if isinstance(value, ApplyFailed):
                        raise ClusterError(f"the state machine rejected the command: {value.error}")
                    return value
                if error not in RETRYABLE:
                    reason = FAIL_REASONS.get(error or 0, f"error {error}")
                    raise ClusterUnavailable(f"{reason}; the command may or may not have been applied")
                await anyio.sleep(self._config.tuning.heartbeat)
        raise NoQuorum(
            f"{self._config.addr}: not committed within {timeout} s (leader: {node.leader}); "
            "the command may still be applied later"
        )

    async def _until_leader_reachable(self, node: RaftNode) -> None:
        """Fail fast without a quorum; wait while an election is running or the leader is unreachable."""
        while True:
            if not node.has_quorum:
                raise NoQuorum(f"{self._config.addr}: connected to no majority of the voters {node.voters}")
            if node.leader_reachable:
                return
            await anyio.sleep(self._config.tuning.tick)

    async def propose(self, command: Command) -> Result:
        """Commit `command` through the log and return what the machine returned for it here."""
        value = await self._commit(encode_command(command))
        return value  # type: ignore[return-value]  # apply_bytes returns a Result

    async def barrier(self) -> None:
        """Commit a no-op: afterwards local reads reflect every write committed before the call."""
        await self._commit(b"")

    async def _read_point(self, linearizable: bool) -> RaftNode:
        if linearizable:
            await self.barrier()
        return self._require()

    # ------------------------------------------------------------------ key/value

    async def get(self, key: str, *, linearizable: bool = False) -> bytes | None:
        """Return the live value of `key`, or None (local read unless `linearizable`)."""
        node = await self._read_point(linearizable)
        with node.lock:
            return self._machine.get(key, self._clock())

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store `value` under `key`; it expires after `ttl` seconds if given."""
        await self.propose(Set(key=key, value=value, ttl=ttl, now=self._clock()))

    async def delete(self, key: str) -> bool:
        """Remove `key`; True if a live value was removed."""
        return bool(await self.propose(Delete(key=key, now=self._clock())))

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes | None, *, ttl: float | None = None
    ) -> bool:
        """Replace the value of `key` by `value` (None deletes) if it is `expected` (None: absent)."""
        command = CompareAndSet(key=key, expected=expected, value=value, ttl=ttl, now=self._clock())
        return bool(await self.propose(command))

    # ------------------------------------------------------------------ fenced locks

    async def acquire_lock(self, key: str, holder: str, ttl: float) -> int | None:
        """Take lock `key` for `holder` for `ttl` seconds; return a new fencing token, or None if held."""
        token = await self.propose(AcquireLock(key=key, holder=holder, ttl=ttl, now=self._clock()))
        return None if token is None else int(token)

    async def renew_lock(self, key: str, holder: str, token: int, ttl: float) -> bool:
        """Extend `holder`'s grant `token` of lock `key` by `ttl` seconds; False if it was lost."""
        command = RenewLock(key=key, holder=holder, token=token, ttl=ttl, now=self._clock())
        return bool(await self.propose(command))

    async def release_lock(self, key: str, holder: str, token: int) -> bool:
        """Release `holder`'s grant `token` of lock `key`; False if it was not held so."""
        return bool(await self.propose(ReleaseLock(key=key, holder=holder, token=token)))

    async def lock(self, key: str, *, linearizable: bool = False) -> LockInfo | None:
        """Return the live grant of lock `key`, or None."""
        node = await self._read_point(linearizable)
        with node.lock:
            return self._machine.lock(key, self._clock())

    async def fence(self, *, linearizable: bool = False) -> int:
        """Return the last fencing token handed out (it survives restarts and snapshots)."""
        node = await self._read_point(linearizable)
        with node.lock:
            return self._machine.fence

    # ------------------------------------------------------------------ topics

    async def publish(self, topic: str, payload: bytes) -> int:
        """Append `payload` to `topic`; return its sequence number."""
        return int(await self.propose(Publish(topic=topic, payload=payload, now=self._clock())) or 0)

    async def messages(self, topic: str, *, after: int = 0, limit: int = 100) -> list[Message]:
        """Return up to `limit` kept messages of `topic` after sequence `after` (local read)."""
        node = self._require()
        with node.lock:
            return self._machine.messages(topic, after, limit)

    # ------------------------------------------------------------------ membership

    def is_leader(self) -> bool:
        """Whether this node leads the Raft cluster now."""
        return self._require().is_leader

    def voters(self) -> list[str]:
        """Addresses of the Raft voters this node knows, sorted."""
        return self._require().voters

    async def members(self) -> list[Member]:
        """The members recorded in the state (each node records itself in `wait_ready`)."""
        node = self._require()
        with node.lock:
            return self._machine.members()

    def status(self) -> RaftStatus:
        """This node's view of the cluster."""
        node = self._require()
        return RaftStatus(
            node_id=self._config.node_id,
            addr=node.addr,
            leader=node.leader,
            is_leader=node.is_leader,
            term=node.term,
            applied_index=node.applied_index,
            voters=node.voters,
            has_quorum=node.has_quorum,
        )

    async def remove_voter(self, addr: str) -> None:
        """Remove the voter at `addr` from the cluster (not the current leader) and its member record.

        Raises:
            ClusterUnavailable: the change was refused (e.g. `addr` leads, or another change is pending).
        """
        node = self._require()
        assert self._bridge is not None
        with anyio.move_on_after(self._config.tuning.commit_timeout):
            pending = self._bridge.pending()
            node.remove_voter(addr, pending.resolve)
            _, error = await pending.wait()
            if error != SUCCESS:
                reason = FAIL_REASONS.get(error or 0, f"error {error}")
                raise ClusterUnavailable(f"voter {addr} was not removed: {reason}")
            with node.lock:
                gone = [m.member_id for m in self._machine.members() if m.addr == addr]
            for member_id in gone:
                await self.propose(Remove(member_id=member_id))
            return
        raise NoQuorum(
            f"removing voter {addr} was not committed within {self._config.tuning.commit_timeout} s"
        )

    def compact(self) -> None:
        """Snapshot the state and truncate the log now (normally done by `tuning` thresholds)."""
        self._require().compact()
