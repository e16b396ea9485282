"""`ControlPlane`: the seam mocra_core coordinates through, with a local (LMDB) and a Raft implementation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import msgspec

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from types import TracebackType
    from typing import Self

    from ._records import LockInfo, Member, Message

__all__ = ("ClusterStatus", "ControlPlane")


class ClusterStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What a node knows about the cluster.

    Attributes:
        node_id: This node's member id.
        leader: The leader's member id, or None during an election.
        term: The leader's term (the local plane is always in term 1).
        applied_index: How many commands this node's state machine has applied.
        members: How many members the cluster has.

    Example:
        >>> ClusterStatus(node_id="a", leader="a", term=1, applied_index=3, members=1).leader
        'a'
    """

    node_id: str
    leader: str | None
    term: int
    applied_index: int
    members: int


class ControlPlane(Protocol):
    """Replicated control state shared by mocra's nodes: KV, fenced locks, membership, partitions, topics.

    Every write is one command of the deterministic `StateMachine`, so all implementations share its
    semantics (see `_machine.py`); they differ in who applies it: the local plane in an LMDB write
    transaction, the Raft plane on a quorum of nodes.

    **Names** (keys, lock names, holders, member ids, topics) are `str` of 1 to 256 UTF-8 bytes without
    NUL; TTLs are finite seconds > 0; anything else raises `ValueError` before anything is proposed.

    **Expiry** is judged on the proposing node's wall clock (epoch seconds), carried inside the
    command; nodes' clocks should agree to well under the TTLs used.

    **Locks and partition leases** carry fencing tokens from one global counter kept in the replicated
    state: every grant gets a token strictly greater than any handed out before, across restarts and
    snapshots. `acquire_lock` succeeds when the lock is free, expired, or held by the same `holder`
    (a new token replaces the old). `renew_lock` / `release_lock` act only on the latest grant
    `(holder, token)`; a renewal past expiry succeeds while nobody acquired the lock since. Pass the
    token with every write the lock protects, and have the target refuse older tokens
    (`FencedResource`): a holder that paused past its expiry cannot overwrite its successor's work.

    **Leadership.** `is_leader()` says whether this node leads the control plane (the local plane
    always does). For leadership of an application role, hold a lock named for it with a TTL and
    renew it well before expiry: the lock *is* the leader lease and its token fences the old leader.

    **Liveness.** An open plane proposes a `Heartbeat` for its member every heartbeat interval
    (default 1 s); a member is *live* while its last heartbeat is less than the member TTL (default
    5 s) old on the reader's clock. `members()` lists every member until it is removed (`seen` is
    its last heartbeat); `live_members()` only the live ones.

    **Partitions.** Keys map to `PARTITIONS` (256) partitions; each belongs to one member by
    rendezvous hashing over the live members (`owns_key`, `owned_partitions`). Ownership can
    change when members join, leave or die, so work that must not overlap takes the partition's lease
    (`acquire_partition`) and fences its writes with the lease's token.

    **Topics.** `publish` appends to a bounded log per topic (sequence numbers from 1, oldest
    entries trimmed); `subscribe` yields the messages published after the call (or from `from_seq`).
    Delivery is at-least-once per subscriber, in order; a subscriber that falls behind the kept
    window sees a gap in `seq`.

    **Counters, lists and sets.** A key holds a value or a list: `set` replaces either kind, `delete`
    removes either, `compare_and_set` leaves a list alone (returns False); `incr` (on a value holding
    a base-10 integer) and `append` are one command each and raise `Refused` on the other kind.
    Sets (`add_if_absent`, one command per batch) have a name space of their own and never expire.

    **Errors.** `ClusterUnavailable` (`NotLeader`, `NoQuorum`) when a write cannot be committed now;
    `Refused` when the state machine refused a command; `ClusterClosed` after `aclose()`.
    """

    async def get(self, key: str) -> bytes | None:
        """Return the value of `key`, or None if it is absent or expired."""
        ...

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store `value` under `key`, expiring after `ttl` seconds if given."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove `key`; True if it held a live value."""
        ...

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes | None, *, ttl: float | None = None
    ) -> bool:
        """Replace `key` by `value` (None deletes) if it holds `expected` (None: absent); True if it did."""
        ...

    async def incr(self, key: str, delta: int = 1) -> int:
        """Add `delta` to the counter `key` (missing or expired: 0) and return the new value."""
        ...

    async def append(self, key: str, value: bytes) -> int:
        """Append `value` to the list `key` (created if missing) and return its new length."""
        ...

    async def items(self, key: str) -> list[bytes]:
        """Return the list `key` in append order (empty if missing)."""
        ...

    async def add_if_absent(self, key: str, members: Sequence[bytes]) -> list[bool]:
        """Add `members` to the set `key` in one command; per member, whether it was absent."""
        ...

    async def set_contains(self, key: str, member: bytes) -> bool:
        """Return whether `member` was added to the set `key`."""
        ...

    async def set_size(self, key: str) -> int:
        """Return how many members the set `key` holds."""
        ...

    async def acquire_lock(self, key: str, holder: str, ttl: float) -> int | None:
        """Take lock `key` for `ttl` seconds; return its fencing token, or None if another holds it."""
        ...

    async def renew_lock(self, key: str, holder: str, token: int, ttl: float) -> bool:
        """Extend lock `key` to `ttl` seconds from now if its latest grant is `(holder, token)`."""
        ...

    async def release_lock(self, key: str, holder: str, token: int) -> bool:
        """Free lock `key` if its latest grant is `(holder, token)`; True if it did."""
        ...

    async def lock_holder(self, key: str) -> LockInfo | None:
        """Return the live grant of lock `key`, or None."""
        ...

    async def is_leader(self) -> bool:
        """Return whether this node leads the control plane."""
        ...

    async def status(self) -> ClusterStatus:
        """Return this node's view of the cluster."""
        ...

    async def members(self) -> list[Member]:
        """Return every member, ordered by id."""
        ...

    async def live_members(self) -> list[Member]:
        """Return the members whose last heartbeat is within the member TTL, ordered by id."""
        ...

    async def voters(self) -> list[Member]:
        """Return the voting members, ordered by id."""
        ...

    async def join(self, member_id: str, addr: str, *, voter: bool = True) -> bool:
        """Add a member (or update its address and vote); True if it is new."""
        ...

    async def remove(self, member_id: str) -> bool:
        """Remove a member; True if it was one."""
        ...

    async def owns_key(self, key: str | bytes) -> bool:
        """Return whether this node owns the partition of `key` among the live members."""
        ...

    async def owned_partitions(self) -> list[int]:
        """Return the partitions this node owns among the live members, in order."""
        ...

    async def acquire_partition(self, partition: int, ttl: float) -> int | None:
        """Lease `partition` to this node for `ttl` seconds; return a fencing token or None if held."""
        ...

    async def renew_partition(self, partition: int, token: int, ttl: float) -> bool:
        """Extend this node's lease of `partition` (grant `token`) to `ttl` seconds from now."""
        ...

    async def release_partition(self, partition: int, token: int) -> bool:
        """Free this node's lease of `partition` (grant `token`); True if it did."""
        ...

    async def publish(self, topic: str, payload: bytes) -> int:
        """Append `payload` to the log of `topic`; return its sequence number."""
        ...

    def subscribe(self, topic: str, *, from_seq: int | None = None) -> AsyncIterator[Message]:
        """Yield the messages of `topic` published after this call (or from sequence `from_seq`)."""
        ...

    async def aclose(self) -> None:
        """Leave the cluster's resources; later calls raise `ClusterClosed`."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
