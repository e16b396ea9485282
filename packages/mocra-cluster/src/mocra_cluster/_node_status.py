"""`node_status`: ask a running Raft node, from outside the cluster, how it sees the cluster."""

from __future__ import annotations

from typing import Literal

import msgspec

from ._config import check_address
from ._errors import ClusterUnavailable
from ._raft_admin import _Exchange
from ._raft_auth import MessageAuthenticator

__all__ = ("NodeStatus", "node_status")

_STATES: dict[int, Literal["follower", "candidate", "leader"]] = {0: "follower", 1: "candidate", 2: "leader"}
_PARTNER = "partner_node_status_server_"


class NodeStatus(msgspec.Struct, frozen=True, kw_only=True):
    """A Raft node's view of its cluster, as it answered `node_status`.

    Attributes:
        addr: The node's address.
        state: `leader`, `follower` or `candidate` (during an election).
        leader: The leader's address, or None during an election.
        term: The Raft term.
        applied_index: The last Raft log index the node applied.
        commit_index: The last Raft log index the node knows committed.
        voters: Every voter's address, the node's own included, sorted.
        connected: The other voters the node is connected to, sorted.
        has_quorum: Whether it is connected to a majority of the voters.
    """

    addr: str
    state: Literal["follower", "candidate", "leader"]
    leader: str | None
    term: int
    applied_index: int
    commit_index: int
    voters: tuple[str, ...]
    connected: tuple[str, ...]
    has_quorum: bool


def node_status(addr: str, *, password: str, timeout: float = 3.0) -> NodeStatus:
    """Ask the node at `addr` (`host:port`) for its status; blocks up to `timeout` seconds.

    The request is signed with the cluster `password`, like all Raft traffic.

    Raises:
        ClusterConfigError: `addr` is not `host:port`.
        ClusterUnavailable: no answer (the node is down, or its password differs).
    """
    check_address(addr, "addr")
    status = _Exchange(MessageAuthenticator(password), timeout).run(addr, ["status"])
    if not isinstance(status, dict):
        raise ClusterUnavailable(f"{addr} answered the status request with {status!r}")
    partners = {key[len(_PARTNER) :]: up for key, up in status.items() if key.startswith(_PARTNER)}
    leader = status.get("leader")
    return NodeStatus(
        addr=str(status["self"].id),
        state=_STATES.get(int(status["state"]), "follower"),
        leader=None if leader is None else str(leader.id),
        term=int(status["raft_term"]),
        applied_index=int(status["last_applied"]),
        commit_index=int(status["commit_idx"]),
        voters=tuple(sorted({str(status["self"].id), *partners})),
        connected=tuple(sorted(node for node, up in partners.items() if up)),
        has_quorum=bool(status.get("has_quorum", False)),
    )
