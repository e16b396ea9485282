"""`Ownership`: which node of a cluster does the work of a key (a module's account, a cron fire)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("ControlPlaneOwnership", "Ownership", "SingleNodeOwnership")


class Ownership(Protocol):
    """Splits keyed work between the members of a cluster: each key belongs to exactly one member.

    The engine asks it which accounts' cron fires this node queues (`owns`), how many members share
    per-domain politeness when there is no job-wide gate (`member_count`) and which queue partition
    key keeps an account's work in one lane (`partition_key`).

    Ownership follows the membership: when members join or leave, keys move (by rendezvous hashing,
    only the keys of the joining or leaving member). Two nodes may therefore briefly both believe they
    own a key, so work that must not be doubled also takes a marker in the coordination store (the
    engine's cron does).
    """

    async def owns(self, key: str) -> bool:
        """Return whether this node does the work of `key` now."""
        ...

    async def member_count(self) -> int:
        """Return how many members share the work (at least 1)."""
        ...

    def partition_key(self, key: str) -> str | None:
        """Return the queue partition key for the work of `key`, or None for no affinity."""
        ...


class SingleNodeOwnership:
    """One node doing all the work: it owns every key and is the only member.

    Example:
        >>> import anyio
        >>> solo = SingleNodeOwnership()
        >>> anyio.run(solo.owns, "shop:alice"), anyio.run(solo.member_count), solo.partition_key("x")
        (True, 1, None)
    """

    async def owns(self, key: str) -> bool:
        """Return True: a single node owns everything."""
        return True

    async def member_count(self) -> int:
        """Return 1."""
        return 1

    def partition_key(self, key: str) -> str | None:
        """Return None: with one node there is no lane to keep work in."""
        return None

    def __repr__(self) -> str:
        return "SingleNodeOwnership()"


class _Member(Protocol):
    @property
    def member_id(self) -> str: ...


class _Plane(Protocol):
    """The part of `mocra_cluster.ControlPlane` ownership reads."""

    async def owns_key(self, key: str | bytes) -> bool: ...

    async def live_members(self) -> Sequence[_Member]: ...


class ControlPlaneOwnership:
    """Ownership by the partitions of a `mocra_cluster` control plane (local LMDB or Raft).

    A key belongs to the member owning its partition (`mocra_cluster.partition_of`, 256 partitions,
    rendezvous hashing over the plane's *live* members: those whose heartbeat is within the plane's
    member TTL, default 5 s); with one member that member owns all, and a member that died hands its
    keys on once its TTL has passed. Each
    call reads the plane (a local read: microseconds on the LMDB plane, no network round trip on Raft).
    `partition_key` names the key's partition, `"p<n>"`, the same on every node.

    Args:
        plane: A `mocra_cluster.ControlPlane` (anything with its `owns_key` and `live_members`).

    Example:
        >>> import anyio, tempfile
        >>> from mocra_cluster import LocalControlPlane
        >>> async def main(path: str) -> tuple[bool, int, str | None]:
        ...     async with LocalControlPlane(path, member_id="node-a", sync=False) as plane:
        ...         ownership = ControlPlaneOwnership(plane)
        ...         return (
        ...             await ownership.owns("shop:alice"),
        ...             await ownership.member_count(),
        ...             ownership.partition_key("shop:alice"),
        ...         )
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp)
        (True, 1, 'p127')
    """

    __slots__ = ("_plane",)

    def __init__(self, plane: _Plane) -> None:
        self._plane = plane

    async def owns(self, key: str) -> bool:
        """Return whether this node owns the partition of `key` among the plane's live members."""
        return await self._plane.owns_key(key)

    async def member_count(self) -> int:
        """Return how many of the plane's members are live (at least 1)."""
        return max(1, len(await self._plane.live_members()))

    def partition_key(self, key: str) -> str | None:
        """Return `"p<partition of key>"`."""
        from mocra_cluster import partition_of  # the plane's package: installed whenever a plane exists

        return f"p{partition_of(key)}"

    def __repr__(self) -> str:
        return f"ControlPlaneOwnership({self._plane!r})"
