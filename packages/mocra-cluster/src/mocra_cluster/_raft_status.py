"""`RaftStatus`: one node's view of its Raft cluster."""

from __future__ import annotations

import msgspec

__all__ = ("RaftStatus",)


class RaftStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One node's view of its Raft cluster, from `RaftControlPlane.status()`.

    Attributes:
        node_id: This node's member id.
        addr: This node's Raft address.
        leader: Address of the leader this node knows, or None during an election.
        is_leader: Whether this node leads.
        term: The Raft term (grows by one or more at each election).
        applied_index: Index of the last log entry applied on this node.
        voters: Addresses of every voter this node knows, itself included.
        has_quorum: Whether this node is connected to a majority of the voters.

    Example:
        >>> RaftStatus(node_id="a", addr="h:1", leader="h:1", is_leader=True, term=2, applied_index=9,
        ...            voters=["h:1"], has_quorum=True).is_leader
        True
    """

    node_id: str
    addr: str
    leader: str | None
    is_leader: bool
    term: int
    applied_index: int
    voters: list[str]
    has_quorum: bool
