"""`LmdbCoordination`: the `Coordination` of the processes of one host, in an LMDB directory."""

from __future__ import annotations

import math
import os
import socket
import time
import uuid
from typing import TYPE_CHECKING

import anyio.to_thread

from ...coordination._errors import CoordinationError
from ...coordination._protocol import (
    LEADER_LOCK,
    LockInfo,
    check_key,
    check_lock_key,
    check_ttl,
    parse_counter,
)
from ._coordination_env import HEAD, LIST, U64, VALUE, SharedEnv
from ._coordination_txn import (
    acquire,
    grant,
    live_entry,
    put_value,
    read_value,
    release,
    release_leader,
    renew,
    sweep,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import Self

    import lmdb

__all__ = ("LmdbCoordination",)

_LEADER = LEADER_LOCK.encode()
_MIN_SWEEP = 1024


class LmdbCoordination:
    """Coordination shared by the processes of one host through an LMDB directory; durable.

    LMDB serialises write transactions across processes (a robust mutex in its lock file), and every
    call here is one transaction, so calls are atomic across all the processes and instances using the
    directory. Expiry is judged on the wall clock (epoch seconds), which the processes of a host share;
    the fencing counter is stored with the data, so tokens keep increasing across restarts.

    **Leadership.** `is_leader()` takes or renews a leader lease, the reserved lock `__leader__`, under
    `holder_id` for `leader_ttl` seconds, and returns whether this instance holds it. The lease is only
    renewed by calls (it is skipped while more than half of it is left), so call `is_leader` at least every
    `leader_ttl / 2` seconds to lead without gaps; another process takes over `leader_ttl` seconds after
    the leader's last call at the latest. `aclose` gives leadership up at once.

    **Inline calls.** Calls run on the event loop, not in a worker thread: with `sync=False` a commit
    writes to the OS page cache and never waits for the disk, so a call takes microseconds (a few for a
    read, ~10-20 for a write), while a hop to a worker thread costs ~50-100 µs and would multiply the
    cost of every gate check. A call can wait for another process's write transaction, but those are
    single short operations too. Only `aclose`, which flushes to disk, uses a thread. Calls never
    suspend, so a call that started completes even if its task is cancelled.

    **Durability.** Opened with `sync=False, metasync=False`: a committed call survives its process being
    killed (`kill -9`, `os._exit`), but a power loss or kernel crash can lose the last commits before the
    OS flushed them (up to its writeback interval, ~30 s), fencing-counter increments included, so a token
    could then be handed out twice; on a filesystem that does not keep write order the file can be
    corrupted. `aclose` flushes. Use local disks only (LMDB's locking does not work over NFS).

    **Housekeeping.** Expired values are skipped by reads, overwritten by writes, and purged by a sweep
    once an instance made as many TTL writes as keys were left by its previous sweep (amortised O(1)).
    Lock grants stay until released or taken over. Use the directory for this store only: LMDB allows
    one environment per directory and process, so the instances of one process on one directory share
    it, and other LMDB stores need directories of their own.

    Args:
        path: Directory of the environment; created if missing.
        clock: Judges expiry, in epoch seconds (inject a fake one in tests).
        holder_id: Who this instance is when it leads; default `"{hostname}:{pid}:{uuid4 hex}"`.
        leader_ttl: Seconds a leader lease lives without renewal.
        map_size: Initial size of the memory map, in bytes (it doubles when full).

    Raises:
        CoordinationError: The environment cannot be opened.

    Example:
        >>> import anyio, tempfile
        >>> async def main(path: str):
        ...     async with LmdbCoordination(path) as shared:
        ...         token = await shared.acquire_lock("login/alice", holder="a", ttl=30)
        ...         first = await shared.set_if_absent("seeded/quotes")
        ...         leads = await shared.is_leader()
        ...     async with LmdbCoordination(path) as shared:  # another process would see the same
        ...         again = await shared.set_if_absent("seeded/quotes")
        ...         later = await shared.acquire_lock("cron", holder="b", ttl=30)
        ...     return token, first, leads, again, later > token
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp)
        (1, True, True, False, True)
    """

    __slots__ = (
        "_clock",
        "_env",
        "_leader",
        "_leader_ttl",
        "_sweep_after",
        "_ttl_writes",
        "holder_id",
        "path",
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        holder_id: str | None = None,
        leader_ttl: float = 10.0,
        map_size: int = 64 << 20,
    ) -> None:
        check_ttl(leader_ttl)
        self._clock = clock
        self._leader_ttl = leader_ttl
        self.holder_id = holder_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        self._leader: tuple[int, float] | None = None  # token, deadline of the leader lease we hold
        self._ttl_writes, self._sweep_after = 0, _MIN_SWEEP
        self._env: SharedEnv | None = SharedEnv.open(path, map_size=map_size)
        self.path = self._env.path

    def _shared(self) -> SharedEnv:
        if self._env is None:
            raise CoordinationError("", f"LmdbCoordination({self.path!r}) is closed")
        return self._env

    # ------------------------------------------------------------------ values

    def _deadline(self, txn: lmdb.Transaction[bytes], ttl: float | None) -> float:
        if ttl is None:
            return math.inf
        now = self._clock()
        self._ttl_writes += 1
        if self._ttl_writes >= self._sweep_after:  # amortised O(1): as many writes as keys left last time
            self._ttl_writes = 0
            shared = self._shared()
            sweep(shared, txn, now)
            self._sweep_after = max(_MIN_SWEEP, txn.stat(shared.values)["entries"])
        return now + ttl

    async def get(self, key: str) -> bytes | None:
        """Return the value of `key`, or None if absent or expired."""
        kb = check_key(key)
        shared = self._shared()
        return shared.read(lambda txn: read_value(shared, txn, key, kb, self._clock)[0])

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store `value` under `key`, replacing whatever was there."""
        kb = check_key(key)
        check_ttl(ttl)
        shared = self._shared()
        shared.write(lambda txn: put_value(shared, txn, kb, value, self._deadline(txn, ttl)))

    async def set_if_absent(self, key: str, value: bytes = b"1", *, ttl: float | None = None) -> bool:
        """Store `value` if `key` is absent or expired; True if stored."""
        kb = check_key(key)
        check_ttl(ttl)
        shared = self._shared()

        def change(txn: lmdb.Transaction[bytes]) -> bool:
            if live_entry(shared, txn, kb, self._clock) is not None:
                return False
            put_value(shared, txn, kb, value, self._deadline(txn, ttl))
            return True

        return shared.write(change)

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes | None, *, ttl: float | None = None
    ) -> bool:
        """Replace (or, with `value=None`, delete) the value of `key` if it equals `expected`."""
        kb = check_key(key)
        check_ttl(ttl)
        shared = self._shared()

        def change(txn: lmdb.Transaction[bytes]) -> bool:
            if read_value(shared, txn, key, kb, self._clock)[0] != expected:
                return False
            if value is None:
                txn.delete(kb, db=shared.values)
            else:
                put_value(shared, txn, kb, value, self._deadline(txn, ttl))
            return True

        return shared.write(change)

    async def delete(self, key: str) -> None:
        """Remove `key`."""
        kb = check_key(key)
        shared = self._shared()

        def change(txn: lmdb.Transaction[bytes]) -> None:
            old = txn.pop(kb, db=shared.values)
            if old is not None and old[0] == LIST:
                shared.drop_elements(txn, kb)

        shared.write(change)

    async def incr(self, key: str, delta: int = 1) -> int:
        """Add `delta` to the counter `key` (missing = 0), keeping its expiry; return the new value."""
        kb = check_key(key)
        shared = self._shared()

        def change(txn: lmdb.Transaction[bytes]) -> int:
            current, deadline = read_value(shared, txn, key, kb, self._clock)
            new = parse_counter(key, current, delta)
            txn.put(kb, HEAD.pack(VALUE, deadline) + str(new).encode(), db=shared.values)
            return new

        return shared.write(change)

    async def append(self, key: str, value: bytes) -> int:
        """Append `value` to the list `key`; return its new length."""
        kb = check_key(key)
        shared = self._shared()

        def change(txn: lmdb.Transaction[bytes]) -> int:
            found = live_entry(shared, txn, kb, self._clock)
            if found is not None and found[0] != LIST:
                raise CoordinationError(key, "holds a value, not a list")
            length = 0 if found is None else U64.unpack(found[2])[0]
            txn.put(kb + b"\0" + U64.pack(length), value, db=shared.elements)
            txn.put(kb, HEAD.pack(LIST, math.inf) + U64.pack(length + 1), db=shared.values)
            return length + 1

        return shared.write(change)

    async def items(self, key: str) -> list[bytes]:
        """Return the list `key` in append order (empty if missing)."""
        kb = check_key(key)
        shared = self._shared()

        def look(txn: lmdb.Transaction[bytes]) -> list[bytes]:
            found = live_entry(shared, txn, kb, self._clock)
            if found is None:
                return []
            if found[0] != LIST:
                raise CoordinationError(key, "holds a value, not a list")
            prefix = kb + b"\0"
            out: list[bytes] = []
            cursor = txn.cursor(db=shared.elements)
            more = cursor.set_range(prefix)
            while more and cursor.key().startswith(prefix):
                out.append(cursor.value())
                more = cursor.next()
            return out

        return shared.read(look)

    # ------------------------------------------------------------------ locks

    async def acquire_lock(self, key: str, holder: str, ttl: float) -> int | None:
        """Take the lock if free, expired or ours; return a new fencing token, or None."""
        kb = check_lock_key(key)
        check_ttl(ttl)
        shared = self._shared()
        granted = shared.write(lambda txn: acquire(shared, txn, kb, holder, ttl, self._clock))
        return None if granted is None else granted[0]

    async def renew_lock(self, key: str, holder: str, token: int, ttl: float) -> bool:
        """Extend the lock if its latest grant is `(holder, token)`."""
        kb = check_lock_key(key)
        check_ttl(ttl)
        shared = self._shared()
        return shared.write(lambda txn: renew(shared, txn, kb, holder, token, ttl, self._clock)) is not None

    async def release_lock(self, key: str, holder: str, token: int) -> bool:
        """Free the lock if its latest grant is `(holder, token)`."""
        kb = check_lock_key(key)
        shared = self._shared()
        return shared.write(lambda txn: release(shared, txn, kb, holder, token))

    async def lock_holder(self, key: str) -> LockInfo | None:
        """Return the live holder of the lock, or None."""
        kb = check_key(key)
        shared = self._shared()
        found = shared.read(lambda txn: grant(shared, txn, kb))
        if found is None or found[1] <= self._clock():
            return None
        return LockInfo(holder=found[2], token=found[0], expires=found[1])

    # ------------------------------------------------------------------ leadership, lifecycle

    async def is_leader(self) -> bool:
        """Take or renew the leader lease; return whether this instance holds it."""
        shared = self._shared()
        held = self._leader
        if held is not None and held[1] - self._clock() > self._leader_ttl / 2:
            return True
        holder, ttl, clock = self.holder_id, self._leader_ttl, self._clock

        def change(txn: lmdb.Transaction[bytes]) -> tuple[int, float] | None:
            if held is not None:
                deadline = renew(shared, txn, _LEADER, holder, held[0], ttl, clock)
                if deadline is not None:
                    return held[0], deadline
            return acquire(shared, txn, _LEADER, holder, ttl, clock)

        self._leader = shared.write(change)
        return self._leader is not None

    async def aclose(self) -> None:
        """Give up leadership, flush to disk and close (the environment closes with its last user)."""
        shared, self._env = self._env, None
        if shared is None:
            return
        held, self._leader = self._leader, None
        try:
            if held is not None:
                shared.write(lambda txn: release_leader(shared, txn, held[0]))
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(shared.release)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
