"""`RaftMembershipCalls`: recording and removing members, and the Raft voters behind them.

`RaftControlPlane` inherits these calls; a member is a record in the replicated state, a voter is a Raft
node: `join` records a member only (a voter joins by starting its own plane), `remove` and
`remove_voter` take a voter out of the Raft cluster before dropping its record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ._checks import check_name
from ._commands import Join, Remove
from ._raft_status import RaftStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._commands import Command
    from ._machine import Result, StateMachine
    from ._raft_commit import Committer
    from ._raft_node import RaftNode
    from ._records import Member

__all__ = ("RaftMembershipCalls",)


class _RaftPlane(Protocol):
    _clock: Callable[[], float]
    _machine: StateMachine
    _committer: Committer | None

    @property
    def member_id(self) -> str: ...

    async def propose(self, command: Command) -> Result: ...

    async def members(self, *, linearizable: bool = False) -> list[Member]: ...

    async def _read(self, linearizable: bool = False) -> RaftNode: ...

    def _require(self) -> RaftNode: ...


class RaftMembershipCalls:
    """`join`, `remove`, `remove_voter`, `raft_voters`, `raft_status` and `compact` of a Raft plane."""

    def raft_status(self: _RaftPlane) -> RaftStatus:
        """Return this node's Raft view: addresses, term, log index, voters, quorum."""
        node = self._require()
        return RaftStatus(
            node_id=self.member_id,
            addr=node.addr,
            leader=node.leader,
            is_leader=node.is_leader,
            term=node.term,
            applied_index=node.applied_index,
            voters=node.voters,
            has_quorum=node.has_quorum,
        )

    def raft_voters(self: _RaftPlane) -> list[str]:
        """Return the addresses of the Raft voters this node knows, itself included, sorted."""
        return self._require().voters

    async def join(self: _RaftPlane, member_id: str, addr: str, *, voter: bool = True) -> bool:
        """Record a member (or update its address and vote); True if it is new.

        This only records it (e.g. a worker that owns partitions). A Raft voter joins by starting
        its own plane with `ClusterConfig.join`, which adds it to the Raft cluster.
        """
        command = Join(
            member_id=check_name("member_id", member_id), addr=addr, voter=voter, now=self._clock()
        )
        return bool(await self.propose(command))

    async def remove(self: _RaftPlane, member_id: str) -> bool:
        """Remove a member; if it is a Raft voter, remove it from the Raft cluster first.

        Raises:
            ClusterUnavailable: the Raft change was refused (the leader cannot remove itself: stop
                it and remove it from the new leader, or remove it from another node after failover).
        """
        node = await self._read()
        with node.lock:
            member = self._machine.member(check_name("member_id", member_id))
        if member is not None and member.addr in node.voters and member.addr != node.addr:
            assert self._committer is not None
            await self._committer.remove_voter(member.addr)
        return bool(await self.propose(Remove(member_id=member_id)))

    async def remove_voter(self: _RaftPlane, addr: str) -> None:
        """Remove the Raft voter at `addr` and the members recorded at that address."""
        self._require()
        assert self._committer is not None
        await self._committer.remove_voter(addr)
        for member in await self.members():
            if member.addr == addr:
                await self.propose(Remove(member_id=member.member_id))

    def compact(self: _RaftPlane) -> None:
        """Snapshot the state and truncate the log at the next tick (normally `tuning` decides when)."""
        self._require().compact()
