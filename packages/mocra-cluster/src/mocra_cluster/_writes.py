"""`WriteCalls`: the key/value and lock writes of a control plane, each one command through `propose`.

Both planes inherit these calls and differ only in `propose` (one LMDB write transaction, or one entry
committed through the Raft log); the arguments are checked here, before anything is proposed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ._checks import check_name, check_ttl
from ._commands import AcquireLock, CompareAndSet, Delete, ReleaseLock, RenewLock, Set

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._commands import Command
    from ._machine import Result

__all__ = ("WriteCalls",)


class _Plane(Protocol):
    _clock: Callable[[], float]

    async def propose(self, command: Command) -> Result: ...


class WriteCalls:
    """`set`, `delete`, `compare_and_set` and the fenced-lock calls of a control plane."""

    async def set(self: _Plane, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store `value` under `key`, expiring after `ttl` seconds if given."""
        ttl = None if ttl is None else check_ttl(ttl)
        await self.propose(Set(key=check_name("key", key), value=value, ttl=ttl, now=self._clock()))

    async def delete(self: _Plane, key: str) -> bool:
        """Remove `key`; True if it held a live value."""
        return bool(await self.propose(Delete(key=check_name("key", key), now=self._clock())))

    async def compare_and_set(
        self: _Plane, key: str, expected: bytes | None, value: bytes | None, *, ttl: float | None = None
    ) -> bool:
        """Replace `key` by `value` (None deletes) if it holds `expected` (None: absent); True if it did."""
        ttl = None if ttl is None else check_ttl(ttl)
        command = CompareAndSet(
            key=check_name("key", key), expected=expected, value=value, ttl=ttl, now=self._clock()
        )
        return bool(await self.propose(command))

    async def acquire_lock(self: _Plane, key: str, holder: str, ttl: float) -> int | None:
        """Take lock `key` for `ttl` seconds; return its fencing token, or None if another holds it."""
        command = AcquireLock(
            key=check_name("key", key),
            holder=check_name("holder", holder),
            ttl=check_ttl(ttl),
            now=self._clock(),
        )
        token = await self.propose(command)
        return None if token is None else int(token)

    async def renew_lock(self: _Plane, key: str, holder: str, token: int, ttl: float) -> bool:
        """Extend lock `key` to `ttl` seconds from now if its latest grant is `(holder, token)`."""
        command = RenewLock(
            key=check_name("key", key),
            holder=check_name("holder", holder),
            token=token,
            ttl=check_ttl(ttl),
            now=self._clock(),
        )
        return bool(await self.propose(command))

    async def release_lock(self: _Plane, key: str, holder: str, token: int) -> bool:
        """Free lock `key` if its latest grant is `(holder, token)`; True if it did."""
        command = ReleaseLock(key=check_name("key", key), holder=check_name("holder", holder), token=token)
        return bool(await self.propose(command))
