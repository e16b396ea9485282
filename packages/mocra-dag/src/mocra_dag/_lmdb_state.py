"""`LmdbRunStateStore`: node records and the output cache in an LMDB directory, durable across restarts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ._errors import StaleToken
from ._lmdb import LmdbEnv, run_in_thread
from ._state import NodeRecord, RecordCodec

if TYPE_CHECKING:
    import os
    from types import TracebackType
    from typing import Self

    import lmdb

__all__ = ("LmdbRunStateStore",)

_FENCE = 8  # bytes of a big-endian fence


def _prefix(run_id: str) -> bytes:
    if "\x00" in run_id:
        raise ValueError(f"run ids cannot contain NUL: {run_id!r}")
    return run_id.encode() + b"\x00"


class LmdbRunStateStore:
    """A `RunStateStore` in an LMDB directory: runs resume after the process restarts.

    Records and cached outputs are msgpack-encoded (msgspec): outputs must be msgpack-serialisable and
    come back as plain msgpack types unless the node's `Step.output_type` says otherwise (see
    `RunStateStore`). Each call is one LMDB transaction, run in a worker thread (one at a time per
    store) so that `fsync` never blocks the event loop. Several processes of one host may share the
    directory; fences are checked inside the write transaction, so they hold across processes.

    Args:
        path: Directory of the database (created if missing); may be shared with an `LmdbLeaseStore`.
        map_size: Maximum size of the database in bytes (the file is sparse).
        sync: `fsync` every commit, so a power cut loses nothing committed. With False, commits still
            survive the process being killed.

    Raises:
        MissingExtra: lmdb is not installed (`pip install 'mocra-dag[lmdb]'`).

    Example:
        >>> import anyio, tempfile
        >>> async def main(path):
        ...     async with LmdbRunStateStore(path) as store:
        ...         await store.begin("nightly", 1)
        ...         await store.commit("nightly", "extract", NodeRecord(status="succeeded", output=[1, 2]), 1)
        ...     async with LmdbRunStateStore(path) as store:  # reopened: still there
        ...         return (await store.load("nightly"))["extract"].output
        >>> with tempfile.TemporaryDirectory() as path:
        ...     anyio.run(main, path)
        [1, 2]
    """

    def __init__(self, path: str | os.PathLike[str], *, map_size: int = 1 << 30, sync: bool = True) -> None:
        self._env: LmdbEnv | None = LmdbEnv.open(
            path, map_size=map_size, sync=sync, needed_by="LmdbRunStateStore"
        )
        self._records = self._env.db(b"dag-records")
        self._fences = self._env.db(b"dag-fences")
        self._cache = self._env.db(b"dag-cache")
        self._limiter = anyio.CapacityLimiter(1)
        codec = RecordCodec()
        self._encoded, self._decode = codec.encode, codec.decode

    @property
    def path(self) -> str:
        """The database directory."""
        return self._open().path

    def _open(self) -> LmdbEnv:
        if self._env is None:
            raise RuntimeError("the store is closed")
        return self._env

    def _fence_in(self, txn: lmdb.Transaction[bytes], run_id: str, token: int | None) -> None:
        if token is None:
            return
        raw = txn.get(run_id.encode(), db=self._fences)
        current = int.from_bytes(raw, "big") if raw is not None else -1
        if token < current:
            raise StaleToken(run_id, token, current)
        if token > current:
            txn.put(run_id.encode(), token.to_bytes(_FENCE, "big"), db=self._fences)

    def _scan(self, txn: lmdb.Transaction[bytes], prefix: bytes) -> dict[str, NodeRecord]:
        found: dict[str, NodeRecord] = {}
        cursor = txn.cursor(db=self._records)
        if cursor.set_range(prefix):
            for key, value in cursor:
                if not key.startswith(prefix):
                    break
                found[key[len(prefix) :].decode()] = self._decode(value)
        return found

    async def begin(self, run_id: str, token: int | None) -> dict[str, NodeRecord]:
        """Raise the fence and return the run's records, in one write transaction."""
        prefix, env = _prefix(run_id), self._open().env

        def work() -> dict[str, NodeRecord]:
            with env.begin(write=True) as txn:
                self._fence_in(txn, run_id, token)
                return self._scan(txn, prefix)

        return await run_in_thread(self._limiter, work)

    async def commit(self, run_id: str, node: str, record: NodeRecord, token: int | None) -> None:
        """Store the record if `token` is not stale; raise `OutputNotSerialisable` for a bad output."""
        key = _prefix(run_id) + node.encode()
        data = self._encoded(f"node {node!r} of run {run_id!r}", record)
        env = self._open().env

        def work() -> None:
            with env.begin(write=True) as txn:
                self._fence_in(txn, run_id, token)
                txn.put(key, data, db=self._records)

        await run_in_thread(self._limiter, work)

    async def load(self, run_id: str) -> dict[str, NodeRecord]:
        """Return the run's records."""
        prefix, env = _prefix(run_id), self._open().env

        def work() -> dict[str, NodeRecord]:
            with env.begin() as txn:
                return self._scan(txn, prefix)

        return await run_in_thread(self._limiter, work)

    async def delete(self, run_id: str) -> None:
        """Forget the run: its records and its fence."""
        prefix, env = _prefix(run_id), self._open().env

        def work() -> None:
            with env.begin(write=True) as txn:
                cursor = txn.cursor(db=self._records)
                if cursor.set_range(prefix):
                    while cursor.key().startswith(prefix):
                        if not cursor.delete():
                            break
                txn.delete(run_id.encode(), db=self._fences)

        await run_in_thread(self._limiter, work)

    async def load_cached(self, key: str) -> NodeRecord | None:
        """Return the cached record of an idempotency key."""
        env, raw_key = self._open().env, key.encode()

        def work() -> bytes | None:
            with env.begin() as txn:
                return txn.get(raw_key, db=self._cache)

        raw = await run_in_thread(self._limiter, work)
        return self._decode(raw) if raw is not None else None

    async def store_cached(self, key: str, record: NodeRecord) -> None:
        """Cache the record under `key`; raise `OutputNotSerialisable` for a bad output."""
        data = self._encoded(f"cache key {key!r}", record)
        env, raw_key = self._open().env, key.encode()

        def work() -> None:
            with env.begin(write=True) as txn:
                txn.put(raw_key, data, db=self._cache)

        await run_in_thread(self._limiter, work)

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
