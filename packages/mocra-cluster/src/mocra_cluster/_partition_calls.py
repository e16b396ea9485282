"""`PartitionCalls`: which partitions a member owns, and their fenced leases, over a plane's `propose`.

A plane inherits these calls and provides `member_id`, `live_members`, `propose` (commit one command,
return the machine's result) and `_view` (run a read on its machine); the arguments are checked here,
before anything is proposed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from ._checks import check_partition, check_ttl
from ._commands import AcquirePartition, ReleasePartition, RenewPartition
from ._partitions import owned_partitions, owner, partition_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._commands import Command
    from ._machine import Result, StateMachine
    from ._records import LockInfo, Member

__all__ = ("PartitionCalls",)

T = TypeVar("T")


class _Plane(Protocol):
    _clock: Callable[[], float]

    @property
    def member_id(self) -> str: ...

    async def live_members(self) -> list[Member]: ...

    async def propose(self, command: Command) -> Result: ...

    async def _view(self, read: Callable[[StateMachine], T]) -> T: ...


class PartitionCalls:
    """`owns_key`, `owned_partitions` and the partition leases: acquire, renew, release, read."""

    async def owns_key(self: _Plane, key: str | bytes) -> bool:
        """Return whether this member owns the partition of `key` among the live members (a local read)."""
        ids = [member.member_id for member in await self.live_members()]
        return owner(partition_of(key), ids) == self.member_id

    async def owned_partitions(self: _Plane) -> list[int]:
        """Return the partitions this member owns among the live members, in order (a local read)."""
        ids = [member.member_id for member in await self.live_members()]
        return owned_partitions(self.member_id, ids)

    async def acquire_partition(self: _Plane, partition: int, ttl: float) -> int | None:
        """Lease `partition` to this member for `ttl` seconds; return a fencing token, or None if held."""
        command = AcquirePartition(
            partition=check_partition(partition), holder=self.member_id, ttl=check_ttl(ttl), now=self._clock()
        )
        token = await self.propose(command)
        return None if token is None else int(token)

    async def renew_partition(self: _Plane, partition: int, token: int, ttl: float) -> bool:
        """Extend this member's lease of `partition` (grant `token`) to `ttl` seconds from now."""
        command = RenewPartition(
            partition=check_partition(partition),
            holder=self.member_id,
            token=token,
            ttl=check_ttl(ttl),
            now=self._clock(),
        )
        return bool(await self.propose(command))

    async def release_partition(self: _Plane, partition: int, token: int) -> bool:
        """Free this member's lease of `partition` (grant `token`); True if it did."""
        command = ReleasePartition(partition=check_partition(partition), holder=self.member_id, token=token)
        return bool(await self.propose(command))

    async def partition_lease(self: _Plane, partition: int) -> LockInfo | None:
        """Return the live lease of `partition`, or None."""
        checked = check_partition(partition)
        return await self._view(lambda machine: machine.partition_lease(checked, self._clock()))
