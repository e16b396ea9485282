"""`LmdbLeaseStore`: run leases shared by the processes of one host, tokens monotonic across restarts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import msgspec

from ._clock import SystemClock
from ._lease import Lease, extend, grant
from ._lmdb import LmdbEnv, run_in_thread

if TYPE_CHECKING:
    import os
    from types import TracebackType
    from typing import Self

    import lmdb

    from ._clock import Clock

__all__ = ("LmdbLeaseStore",)

_COUNTER = b"token"


class LmdbLeaseStore:
    """A `LeaseStore` in an LMDB directory: the processes of one host exclude each other from a run.

    The fencing counter is stored with the leases and bumped in the same write transaction as the lease
    it hands out, so tokens never repeat, even after a restart. Expiry is judged on `clock` (epoch
    seconds, so processes agree). Each call runs in a worker thread (see `LmdbRunStateStore`).

    Args:
        path: Directory of the database (created if missing); may be shared with an `LmdbRunStateStore`.
        clock: Judges expiry (a `ManualClock` in tests).
        map_size: Maximum size of the database in bytes.
        sync: `fsync` every change, so a power cut cannot roll the counter back.

    Raises:
        MissingExtra: lmdb is not installed (`pip install 'mocra-dag[lmdb]'`).

    Example:
        >>> import anyio, tempfile
        >>> async def main(path):
        ...     async with LmdbLeaseStore(path) as leases:
        ...         first = await leases.acquire("nightly", owner="a", ttl=30)
        ...         await leases.release(first)
        ...     async with LmdbLeaseStore(path) as leases:  # a restart
        ...         second = await leases.acquire("nightly", owner="b", ttl=30)
        ...     return first.token, second.token
        >>> with tempfile.TemporaryDirectory() as path:
        ...     anyio.run(main, path)
        (1, 2)
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        map_size: int = 64 << 20,
        sync: bool = True,
    ) -> None:
        self._clock = clock or SystemClock()
        self._env: LmdbEnv | None = LmdbEnv.open(
            path, map_size=map_size, sync=sync, needed_by="LmdbLeaseStore"
        )
        self._leases = self._env.db(b"dag-leases")
        self._meta = self._env.db(b"dag-meta")
        self._limiter = anyio.CapacityLimiter(1)
        self._encode = msgspec.msgpack.Encoder().encode
        self._decode = msgspec.msgpack.Decoder(Lease).decode

    def _open(self) -> lmdb.Environment:
        if self._env is None:
            raise RuntimeError("the store is closed")
        return self._env.env

    def _get(self, txn: lmdb.Transaction[bytes], name: str) -> Lease | None:
        raw = txn.get(name.encode(), db=self._leases)
        return self._decode(raw) if raw is not None else None

    async def acquire(self, name: str, *, owner: str, ttl: float) -> Lease | None:
        """Take the lease if free or expired, with the next token."""
        env, now = self._open(), self._clock.now()

        def work() -> Lease | None:
            with env.begin(write=True) as txn:
                raw = txn.get(_COUNTER, db=self._meta)
                token = (int.from_bytes(raw, "big") if raw is not None else 0) + 1
                lease = grant(self._get(txn, name), name, owner, ttl, now, token)
                if lease is not None:
                    txn.put(_COUNTER, token.to_bytes(8, "big"), db=self._meta)
                    txn.put(name.encode(), self._encode(lease), db=self._leases)
                return lease

        return await run_in_thread(self._limiter, work)

    async def renew(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend the lease or raise `StaleToken`."""
        env, now = self._open(), self._clock.now()

        def work() -> Lease:
            with env.begin(write=True) as txn:
                renewed = extend(self._get(txn, lease.name), lease, ttl, now)
                txn.put(lease.name.encode(), self._encode(renewed), db=self._leases)
                return renewed

        return await run_in_thread(self._limiter, work)

    async def release(self, lease: Lease) -> None:
        """Free the lease if still held under its token."""
        env = self._open()

        def work() -> None:
            with env.begin(write=True) as txn:
                current = self._get(txn, lease.name)
                if current is not None and current.token == lease.token:
                    txn.delete(lease.name.encode(), db=self._leases)

        await run_in_thread(self._limiter, work)

    async def holder(self, name: str) -> Lease | None:
        """The unexpired lease of `name`."""
        env, now = self._open(), self._clock.now()

        def work() -> Lease | None:
            with env.begin() as txn:
                current = self._get(txn, name)
            return current if current is not None and current.expires > now else None

        return await run_in_thread(self._limiter, work)

    async def aclose(self) -> None:
        """Close the store (the environment closes with its last user); idempotent."""
        if self._env is not None:
            env, self._env = self._env, None
            env.release()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
