"""`RaftNode`: pysyncobj's `SyncObj` behind a small typed facade, replicating `StateMachine` commands.

pysyncobj has no type hints; this is the only module that touches it. The log carries encoded
commands (`bytes`); each node applies them to its own `StateMachine` on the Raft thread. Snapshots
(log compaction, `useFork=False`) are written by our own serializer: the file holds the store's
`snapshot()` bytes, the two log entries pysyncobj needs and the voter addresses, as msgpack — never a
pickle of Python objects. A follower too far behind receives that file and restores it.

Threads: `run()` is the Raft thread (ticks, applies, snapshots). The event loop only submits
commands (a thread-safe queue), reads counters pysyncobj keeps in single attributes, and reads the
machine under `lock` — the lock the Raft thread holds while it applies or snapshots.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any, cast

import msgspec
from pysyncobj import SyncObj, SyncObjConf, replicated  # type: ignore[import-untyped]
from pysyncobj.node import TCPNode  # type: ignore[import-untyped]
from pysyncobj.pipe_notifier import PipeNotifier  # type: ignore[import-untyped]

from ._errors import ClusterError
from ._raft_transport import GuardedTransport

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ._machine import StateMachine
    from ._raft_auth import MessageAuthenticator
    from ._raft_transport import PeerLimits
    from ._raft_tuning import RaftTuning

__all__ = ("ApplyFailed", "RaftNode", "SnapshotFile")

logger = logging.getLogger(__name__)

JOURNAL = "raft.journal"
SNAPSHOT = "raft.snapshot"

SUCCESS = 0
FAIL_REASONS = {
    1: "the command queue is full",
    2: "no leader is known",
    3: "another command was committed in its place",
    4: "the node it was sent to is not the leader",
    5: "the leader changed before the command was confirmed",
    6: "the cluster refused the request",
    7: "its outcome is unknown",
}
"""pysyncobj's FAIL_REASON codes. 2 (MISSING_LEADER), 3, 4 and 1 mean the command was not applied."""
RETRYABLE = frozenset({1, 2, 3, 4})
UNKNOWN_OUTCOME = frozenset({5, 7})


class ApplyFailed(msgspec.Struct, frozen=True):
    """The machine raised while applying a command (on every node alike); the state did not change."""

    error: str


Entry = tuple[bytes, int, int]

_PRIVATE = (
    "_SyncObj__raftElectionDeadline",
    "_SyncObj__changeClusterIDx",
    "_SyncObj__getCurrentLogIndex",
    "_SyncObj__raftNextIndex",
)
"""pysyncobj internals used here: the election deadline a joining node holds off, the index of the
pending membership change and the followers' next indexes (see `_ReplicatedLog`)."""


class SnapshotFile(msgspec.Struct, frozen=True, kw_only=True):
    """The content of `raft.snapshot`: store bytes plus what pysyncobj needs to resume its log."""

    state: bytes
    last: Entry
    previous: Entry
    voters: list[str]
    v: int = 1


_snapshot_decoder = msgspec.msgpack.Decoder(SnapshotFile)


class _ReplicatedLog(SyncObj):  # type: ignore[misc]  # pysyncobj is untyped
    """The SyncObj: one replicated method, our authenticator and our transport.

    `MessageAuthenticator` takes the place of pysyncobj's Fernet, `GuardedTransport` of its
    transport (see `_raft_transport.py`).
    """

    def __init__(
        self,
        addr: str,
        partners: list[str],
        conf: Any,
        apply: Callable[[bytes], object],
        authenticator: MessageAuthenticator,
        limits: PeerLimits,
    ) -> None:
        self._mocra_apply = apply
        self._mocra_authenticator = authenticator  # must exist before SyncObj builds its transport
        super().__init__(addr, partners, conf, transportClass=GuardedTransport.factory(limits))

    @property
    def encryptor(self) -> MessageAuthenticator:
        return self._mocra_authenticator

    @replicated  # type: ignore[untyped-decorator]
    def apply_entry(self, raw: bytes) -> object:
        return self._mocra_apply(raw)

    def _SyncObj__changeCluster(self, request: list[Any]) -> bool:
        """Let the leader take one membership change at a time, as pysyncobj means to.

        pysyncobj (0.3.17) refuses a change while the previous one is uncommitted only if it has
        recorded that change's log index, which it never does: two joins at once would both be
        appended. Record the index the accepted change's entry gets (the next one), so the next
        change is refused (`REQUEST_DENIED`) until that entry is applied.
        """
        accepted = bool(SyncObj._SyncObj__changeCluster(self, request))
        if accepted:
            self._SyncObj__changeClusterIDx = self._SyncObj__getCurrentLogIndex() + 1
        return accepted

    def _SyncObj__onMessageReceived(self, node: Any, message: Any) -> None:
        """Handle a peer's message as pysyncobj does, but a success reply never moves a next index back.

        pysyncobj (0.3.17) sets the next index to what a success reply acknowledges even when the
        entries after it are already on the wire, so it sends them again, and the follower cuts
        entries it has applied from its log to take them (logging CRITICAL "truncating
        already-applied log entries"). As in Raft, only a refusal moves the next index back.
        """
        before = self._SyncObj__raftNextIndex.get(node)
        SyncObj._SyncObj__onMessageReceived(self, node, message)
        if (
            before is not None
            and isinstance(message, dict)
            and message.get("type") == "next_node_idx"
            and message.get("success")
            and not message.get("reset")
            and self._SyncObj__raftNextIndex.get(node, before) < before
        ):
            self._SyncObj__raftNextIndex[node] = before


class RaftNode:
    """One Raft member: builds the SyncObj (binds `addr`), runs its thread, submits commands.

    Build it on a worker thread (it opens the journal and binds the port), then run `run()` on a
    thread of its own until `stop()`.

    A `joining` node (started before the leader adds it) starts no election until it has heard from
    a leader once: the voters do not know it yet, and its vote requests at ever higher terms would
    only depose the leader that is adding it.
    """

    def __init__(
        self,
        *,
        addr: str,
        partners: Iterable[str],
        data_dir: str,
        tuning: RaftTuning,
        authenticator: MessageAuthenticator,
        limits: PeerLimits,
        machine: StateMachine,
        joining: bool = False,
    ) -> None:
        self.machine = machine
        self._max_frame_bytes = limits.max_frame_bytes
        self._max_command_bytes = limits.max_command_bytes
        self._joining = joining
        self._hold_for = tuning.election_timeout_max
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._snapshot_path = os.path.join(data_dir, SNAPSHOT)
        conf = SyncObjConf(
            bindAddress=addr,
            autoTick=False,
            dynamicMembershipChange=True,
            journalFile=os.path.join(data_dir, JOURNAL),
            fullDumpFile=self._snapshot_path,
            useFork=False,
            serializer=self._write_snapshot,
            deserializer=self._read_snapshot,
            maxBindRetries=1,
            commandsWaitLeader=True,
            **tuning.syncobj_options(),
        )
        self._tick = tuning.tick
        try:
            with warnings.catch_warnings():
                # pysyncobj's FileJournal reads its .meta file without closing it (a ResourceWarning).
                warnings.simplefilter("ignore", ResourceWarning)
                self._log = _ReplicatedLog(
                    addr, sorted(set(partners) - {addr}), conf, self._apply, authenticator, limits
                )
        except Exception as exc:  # pysyncobj raises SyncObjException('BindError') and friends
            raise ClusterError(f"cannot start the Raft node on {addr}: {exc!r}") from exc
        if not all(hasattr(self._log, name) for name in _PRIVATE):
            self._log.destroy()
            raise ClusterError(f"this pysyncobj version lacks the internals mocra relies on: {_PRIVATE}")
        self._wake = PipeNotifier(self._log._poller)

    # ------------------------------------------------------------------ Raft thread

    def _apply(self, raw: bytes) -> object:
        if not raw:  # a barrier: commits, changes nothing
            return None
        with self.lock:
            try:
                return self.machine.apply_bytes(raw)
            except Exception as exc:  # deterministic: every node fails the same way
                logger.exception("a replicated command failed to apply")
                return ApplyFailed(repr(exc))

    def _write_snapshot(self, path: str, data: tuple[Entry, Entry, Iterable[Any]]) -> None:
        last, previous, cluster = data
        with self.lock:
            state = self.machine.store.snapshot()
        body = SnapshotFile(
            state=state,
            last=(bytes(last[0]), last[1], last[2]),
            previous=(bytes(previous[0]), previous[1], previous[2]),
            voters=sorted(str(node.id) for node in cluster),
        )
        with open(path, "wb") as file:
            file.write(msgspec.msgpack.encode(body))
            file.flush()
            os.fsync(file.fileno())

    def _read_snapshot(self, path: str) -> tuple[Entry, Entry, list[Any]]:
        with open(path, "rb") as file:
            body = _snapshot_decoder.decode(file.read())
        with self.lock:
            self.machine.store.restore(body.state)
        return tuple(body.last), tuple(body.previous), [TCPNode(addr) for addr in body.voters]  # type: ignore[return-value]

    def run(self) -> None:
        """Tick until `stop()`, then close the sockets and the journal (the Raft thread's body)."""
        try:
            while not self._stop.is_set():
                try:
                    if self._joining:
                        self._hold_elections()
                    self._log.doTick(self._tick)
                except Exception:
                    logger.exception("Raft tick failed")
                    self._stop.wait(self._tick)
        finally:
            self._log.destroy()

    def _hold_elections(self) -> None:
        if self._log._getLeader() is not None:
            self._joining = False
            return
        # pysyncobj has no pre-vote: keep pushing this follower's election deadline away.
        self._log._SyncObj__raftElectionDeadline = time.monotonic() + self._hold_for

    def stop(self) -> None:
        """Ask `run()` to return (thread-safe, non-blocking)."""
        self._stop.set()
        self._wake.notify()

    # ------------------------------------------------------------------ any thread

    def submit(self, raw: bytes, callback: Callable[[object, int | None], None]) -> None:
        """Propose `raw` (forwarded to the leader if this node does not lead); `callback` gets the result.

        Raises:
            ClusterError: `raw` is too long to travel in one frame (`max_frame_bytes`).
        """
        if len(raw) > self._max_command_bytes:
            raise ClusterError(
                f"a command of {len(raw)} bytes does not fit in a Raft message: max_frame_bytes "
                f"({self._max_frame_bytes}) allows commands of up to {self._max_command_bytes} bytes"
            )
        self._log.apply_entry(raw, callback=callback)
        self._wake.notify()

    def add_voter(self, addr: str, callback: Callable[[object, int | None], None]) -> None:
        """Propose adding the voter at `addr`."""
        self._log.addNodeToCluster(addr, callback=callback)
        self._wake.notify()

    def remove_voter(self, addr: str, callback: Callable[[object, int | None], None]) -> None:
        """Propose removing the voter at `addr` (the leader refuses to remove itself)."""
        self._log.removeNodeFromCluster(addr, callback=callback)
        self._wake.notify()

    def compact(self) -> None:
        """Write a snapshot and truncate the log at the next tick."""
        self._log.forceLogCompaction()
        self._wake.notify()

    @property
    def addr(self) -> str:
        """This node's address."""
        return cast("str", self._log.selfNode.id)

    @property
    def is_leader(self) -> bool:
        """Whether this node believes it leads (two nodes may, briefly, during a partition)."""
        return bool(self._log._isLeader())

    @property
    def leader(self) -> str | None:
        """Address of the last known leader, or None during an election."""
        node = self._log._getLeader()
        return None if node is None else str(node.id)

    @property
    def leader_reachable(self) -> bool:
        """Whether a leader is known and is this node or connected to it."""
        node = self._log._getLeader()
        return node is not None and (node == self._log.selfNode or bool(self._log.isNodeConnected(node)))

    @property
    def term(self) -> int:
        """The current Raft term."""
        return int(self._log.raftCurrentTerm)

    @property
    def applied_index(self) -> int:
        """Index of the last log entry applied to the machine."""
        return int(self._log.raftLastApplied)

    @property
    def has_quorum(self) -> bool:
        """Whether this node is connected to a majority of the voters (itself included)."""
        return bool(self._log.hasQuorum)

    @property
    def is_ready(self) -> bool:
        """Whether this node has caught up with the leader's commit index once since it started."""
        return bool(self._log.isReady())

    @property
    def voters(self) -> list[str]:
        """Addresses of every voter this node knows, itself included, sorted."""
        others = self._log.otherNodes
        return sorted({self.addr, *(str(node.id) for node in others)})
