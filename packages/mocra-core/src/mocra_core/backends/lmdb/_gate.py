"""`LmdbDomainGate`: the `DomainGate` of the processes of one host, in an LMDB directory of its own."""

from __future__ import annotations

import itertools
import struct
import time
import uuid
from typing import TYPE_CHECKING

import anyio.to_thread
from anyio.abc import AsyncResource

from ...coordination._errors import CoordinationError
from ...download._gate import Ticket, check_enter
from ._coordination_env import SharedEnv

if TYPE_CHECKING:
    import os
    from collections.abc import Callable

    import lmdb

__all__ = ("LmdbDomainGate",)

_TIME = struct.Struct(">d")  # epoch seconds


class LmdbDomainGate(AsyncResource):
    r"""A `DomainGate` in an LMDB directory, shared by the processes of one host (e.g. of a job dir).

    It reuses the environment helper of `LmdbCoordination` (one environment per directory and process,
    a map that grows when full) in a directory of its own: its sub-database `elements` holds
    `domain \0 holder -> expiry` and `values` holds `domain -> next start`, both as big-endian float64
    epoch seconds of the host's clock, which all the processes share. LMDB serialises write
    transactions across processes, and `enter` and `leave` are one write transaction each, run inline
    on the event loop like `LmdbCoordination`'s calls (microseconds, never suspends). `enter` drops the
    expired holders of the domain it looks at; `leave` drops the domain's next start once nothing holds
    it and the start has passed, so idle domains leave nothing behind but the holders of killed workers
    on domains never entered again.

    Failures raise `CoordinationError` (also after `aclose`). Use local disks only (LMDB's locking does
    not work over NFS), and a directory no other store uses.

    Args:
        path: Directory of the environment; created if missing.
        clock: Epoch seconds (inject a fake one in tests).
        map_size: Initial size of the memory map, in bytes (it doubles when full).

    Raises:
        CoordinationError: The environment cannot be opened.

    Example:
        >>> import anyio, tempfile
        >>> async def main(path: str) -> tuple[float, float, bool]:
        ...     async with LmdbDomainGate(path) as first, LmdbDomainGate(path) as second:
        ...         a = await first.enter("example.com", limit=2, gap=10.0, ttl=60.0)
        ...         b = await second.enter("example.com", limit=2, gap=10.0, ttl=60.0)
        ...         full = await first.enter("example.com", limit=2, gap=10.0, ttl=60.0)
        ...         assert isinstance(a, Ticket) and isinstance(b, Ticket)
        ...         await first.leave(a)
        ...         return a.wait, round(b.wait), isinstance(full, float)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp)
        (0.0, 10, True)
    """

    __slots__ = ("_clock", "_counter", "_env", "_id", "path")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        map_size: int = 16 << 20,
    ) -> None:
        self._clock = clock
        self._id = uuid.uuid4().hex[:16].encode()
        self._counter = itertools.count(1)
        self._env: SharedEnv | None = SharedEnv.open(path, map_size=map_size)
        self.path = self._env.path

    def __repr__(self) -> str:
        return f"LmdbDomainGate({self.path!r})"

    def _shared(self) -> SharedEnv:
        if self._env is None:
            raise CoordinationError("", f"LmdbDomainGate({self.path!r}) is closed")
        return self._env

    async def enter(self, domain: str, *, limit: int, gap: float, ttl: float) -> Ticket | float:
        """Take a slot of `domain` and reserve a start (see `DomainGate`); one write transaction.

        Raises:
            ValueError: an argument makes no sense (nothing is written).
            CoordinationError: LMDB failed, or the gate is closed.
        """
        raw = check_enter(domain, limit, gap, ttl)
        env = self._shared()
        holder = self._id + b":%d" % next(self._counter)

        def change(txn: lmdb.Transaction[bytes]) -> Ticket | float:
            now = self._clock()
            held = _live_holders(txn, env, raw + b"\0", now)
            if len(held) >= limit:
                return min(held) - now
            found = txn.get(raw, db=env.values)
            start = max(now, _TIME.unpack(found)[0]) if found is not None else now
            txn.put(raw + b"\0" + holder, _TIME.pack(start + ttl), db=env.elements)
            if gap > 0:
                txn.put(raw, _TIME.pack(start + gap), db=env.values)
            return Ticket(domain, holder.decode(), start - now)

        return env.write(change)

    async def leave(self, ticket: Ticket) -> None:
        """Give the slot back; a ticket that expired or left already changes nothing.

        Raises:
            CoordinationError: LMDB failed, or the gate is closed.
        """
        raw = ticket.domain.encode()
        env = self._shared()

        def change(txn: lmdb.Transaction[bytes]) -> None:
            txn.delete(raw + b"\0" + ticket.holder.encode(), db=env.elements)
            now = self._clock()
            if _live_holders(txn, env, raw + b"\0", now):
                return
            found = txn.get(raw, db=env.values)
            if found is not None and _TIME.unpack(found)[0] <= now:
                txn.delete(raw, db=env.values)

        env.write(change)

    async def renew(self, ticket: Ticket, *, ttl: float) -> bool:
        """Make `ticket` expire `ttl` seconds from now; False if it expired or left.

        Raises:
            ValueError: `ttl` is not a finite positive number of seconds.
            CoordinationError: LMDB failed, or the gate is closed.
        """
        key = check_enter(ticket.domain, 1, 0.0, ttl) + b"\0" + ticket.holder.encode()
        env = self._shared()

        def change(txn: lmdb.Transaction[bytes]) -> bool:
            now = self._clock()
            found = txn.get(key, db=env.elements)
            if found is None or _TIME.unpack(found)[0] <= now:
                return False
            txn.put(key, _TIME.pack(now + ttl), db=env.elements)
            return True

        return env.write(change)

    async def aclose(self) -> None:
        """Flush to disk and close (the environment closes with its last user); again does nothing."""
        shared, self._env = self._env, None
        if shared is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(shared.release)


def _live_holders(txn: lmdb.Transaction[bytes], env: SharedEnv, prefix: bytes, now: float) -> list[float]:
    """The expiries of the domain's holders; expired ones are deleted on the way."""
    held: list[float] = []
    cursor = txn.cursor(db=env.elements)
    found = cursor.set_range(prefix)
    while found and cursor.key().startswith(prefix):
        (expiry,) = _TIME.unpack(cursor.value())
        if expiry <= now:
            cursor.delete()  # moves to the next entry
            found = cursor.key() != b""
        else:
            held.append(expiry)
            found = cursor.next()
    return held
