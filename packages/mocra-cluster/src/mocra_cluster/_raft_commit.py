"""`Committer`: proposes through a `RaftNode` and waits for the outcome on the event loop.

One write = one log entry: submitted from the event loop, replicated by the Raft thread, and
confirmed by pysyncobj's callback once the entry is applied on this node (`Pending`, see
`_raft_bridge.py`). What happens when it cannot be confirmed:

* no majority connected for `tuning.quorum_grace` (default 3 s): `NoQuorum`, nothing
  proposed (the grace covers a voter just added, whose connection is still being set up);
* the leader is unknown or unreachable (an election): wait, then propose to the new leader;
* pysyncobj says the entry surely did not apply (queue full, not leader, replaced by another
  leader's entry): propose again;
* pysyncobj says the outcome is unknown (the leader changed after taking it): propose again if the
  command is idempotent (applying it twice leaves the state and result of applying it once, e.g.
  `Set`), else `ClusterUnavailable`;
* nothing within `tuning.commit_timeout`: `NoQuorum` (the entry may still apply later).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio

from ._errors import ClusterError, ClusterUnavailable, NoQuorum
from ._raft_bridge import LoopBridge
from ._raft_node import FAIL_REASONS, RETRYABLE, SUCCESS, UNKNOWN_OUTCOME, ApplyFailed

if TYPE_CHECKING:
    from ._raft_node import RaftNode
    from ._raft_tuning import RaftTuning

__all__ = ("Committer",)


class Committer:
    """Commits entries through `node` from tasks of the running asyncio event loop."""

    def __init__(self, node: RaftNode, tuning: RaftTuning) -> None:
        self._node = node
        self._tuning = tuning
        self._bridge = LoopBridge()

    async def commit(self, raw: bytes, *, idempotent: bool = False) -> object:
        """Commit `raw` (an encoded command, or b"" for a no-op) and return its result here."""
        node = self._node
        timeout = self._tuning.commit_timeout
        with anyio.move_on_after(timeout):
            while True:
                await self._until_leader_reachable()
                pending = self._bridge.pending()
                node.submit(raw, pending.resolve)
                value, error = await pending.wait()
                if error == SUCCESS:
                    if isinstance(value, ApplyFailed):
                        raise ClusterError(f"the state machine rejected the command: {value.error}")
                    return value
                if error not in RETRYABLE and not (idempotent and error in UNKNOWN_OUTCOME):
                    reason = FAIL_REASONS.get(error or 0, f"error {error}")
                    raise ClusterUnavailable(f"{reason}; the command may or may not have been applied")
                await anyio.sleep(self._tuning.heartbeat)
        raise NoQuorum(
            f"{node.addr}: not committed within {timeout} s (leader: {node.leader}); "
            "the command may still be applied later"
        )

    async def _until_leader_reachable(self) -> None:
        node = self._node
        without_quorum: float | None = None
        while True:
            if node.has_quorum:
                without_quorum = None
                if node.leader_reachable:
                    return
            elif without_quorum is None:
                without_quorum = time.monotonic()
            elif time.monotonic() - without_quorum >= self._tuning.quorum_grace:
                raise NoQuorum(f"{node.addr}: connected to no majority of the voters {node.voters}")
            await anyio.sleep(self._tuning.tick)

    async def remove_voter(self, addr: str) -> None:
        """Remove the Raft voter at `addr` (forwarded to the leader; the leader cannot remove itself).

        Raises:
            ClusterUnavailable: the change was refused (e.g. `addr` leads, or another change is pending).
            NoQuorum: not committed within `tuning.commit_timeout`.
        """
        with anyio.move_on_after(self._tuning.commit_timeout):
            await self._until_leader_reachable()
            pending = self._bridge.pending()
            self._node.remove_voter(addr, pending.resolve)
            _, error = await pending.wait()
            if error != SUCCESS:
                reason = FAIL_REASONS.get(error or 0, f"error {error}")
                raise ClusterUnavailable(f"voter {addr} was not removed: {reason}")
            return
        raise NoQuorum(f"removing voter {addr} was not committed within {self._tuning.commit_timeout} s")
