"""`ControlPlaneOwnership`: which node does the work of a key, by the partitions of a control plane."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("ControlPlaneOwnership",)


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
