"""`LmdbStateStore`: the state machine's store in an LMDB directory, shared by the processes of one host.

LMDB serialises write transactions across processes (its lock file), so one `StateMachine.apply` per
write transaction is atomic and linearisable for every process on the directory. Calls block the
calling thread: reads take microseconds, a write one commit (plus an `fsync` when `sync=True`); the
local plane runs them inline (see `LocalControlPlane`).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

import lmdb
import msgspec

from ._errors import ClusterClosed, ClusterError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ("LmdbStateStore",)

T = TypeVar("T")

_registry: dict[str, _SharedEnv] = {}
_registry_lock = threading.Lock()
_snapshot_decoder = msgspec.msgpack.Decoder(list[tuple[bytes, bytes]])


class _SharedEnv:
    """One environment per directory and process (LMDB forbids opening it twice), reference-counted."""

    def __init__(self, path: str, map_size: int, sync: bool) -> None:
        os.makedirs(path, exist_ok=True)
        self.path = path
        self.env = lmdb.open(path, map_size=map_size, max_dbs=2, sync=sync, metasync=sync, subdir=True)
        self.env.reader_check()  # free the reader slots of processes that died
        self.db = self.env.open_db(b"cluster-state")
        self.refs = 0
        self.grow_lock = threading.Lock()


class LmdbStateStore:
    """A `StateStore` in the LMDB directory `path` (created if missing).

    Args:
        path: Directory of the database; several processes may open it at once.
        map_size: Initial maximum size in bytes; it doubles whenever a write fills it.
        sync: `fsync` every commit, so a power cut cannot roll back a handed-out fencing token. Without
            it a crashed *process* still loses nothing, only a crashed machine may.

    Raises:
        ClusterError: The directory cannot be opened.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as path:
        ...     store = LmdbStateStore(path, sync=False)
        ...     with store.transaction(write=True):
        ...         store.put(b"k/a", b"1")
        ...     store.close()
        ...     again = LmdbStateStore(path, sync=False)  # a restart
        ...     found = again.get(b"k/a")
        ...     again.close()
        >>> found
        b'1'
    """

    def __init__(self, path: str | os.PathLike[str], *, map_size: int = 64 << 20, sync: bool = True) -> None:
        real = os.path.realpath(os.fspath(path))
        with _registry_lock:
            shared = _registry.get(real)
            if shared is None:
                try:
                    shared = _SharedEnv(real, map_size, sync)
                except (OSError, lmdb.Error) as exc:
                    raise ClusterError(f"cannot open the LMDB directory {real!r}: {exc}") from exc
                _registry[real] = shared
            shared.refs += 1
        self._shared: _SharedEnv | None = shared
        self._local = threading.local()

    @property
    def path(self) -> str:
        """The directory of the database."""
        return self._env().path

    def _env(self) -> _SharedEnv:
        if self._shared is None:
            raise ClusterClosed("the LMDB state store is closed")
        return self._shared

    def _txn(self) -> lmdb.Transaction | None:
        txn: lmdb.Transaction | None = getattr(self._local, "txn", None)
        return txn

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[None]:
        """Open a transaction in this thread (or join the one already open); an exception aborts it.

        Raises:
            RuntimeError: A write transaction was asked for inside a read-only one.
        """
        if self._txn() is not None:
            if write and not getattr(self._local, "write", False):
                raise RuntimeError("cannot write inside a read-only transaction")
            yield
            return
        shared = self._env()
        with shared.env.begin(db=shared.db, write=write) as txn:
            self._local.txn, self._local.write = txn, write
            try:
                yield
            finally:
                self._local.txn = None

    def atomic(self, fn: Callable[[], T]) -> T:
        """Run `fn` (which opens its write transaction) and retry it when the map must grow.

        A full map aborts the transaction, so `fn` ran without effect; the map doubles and `fn` runs
        again. A map grown by another process is adopted the same way.
        """
        while True:
            try:
                return fn()
            except lmdb.MapFullError:
                self._grow()
            except lmdb.MapResizedError:
                self._env().env.set_mapsize(0)  # adopt the size another process set

    def _grow(self) -> None:
        shared = self._env()
        with shared.grow_lock:
            shared.env.set_mapsize(shared.env.info()["map_size"] * 2)

    def _run(self, fn: Callable[[lmdb.Transaction], T], *, write: bool) -> T:
        txn = self._txn()
        if txn is not None:
            if write and not self._local.write:
                raise RuntimeError("cannot write inside a read-only transaction")
            return fn(txn)
        with self.transaction(write=write):
            found = self._txn()
            assert found is not None
            return fn(found)

    def get(self, key: bytes) -> bytes | None:
        """Return the value of `key`, or None."""
        value = self._run(lambda txn: txn.get(key), write=False)
        return None if value is None else bytes(value)

    def put(self, key: bytes, value: bytes) -> None:
        """Store `value` under `key`."""
        self._run(lambda txn: txn.put(key, value), write=True)

    def delete(self, key: bytes) -> bool:
        """Remove `key`; True if it was there."""
        deleted: bool = self._run(lambda txn: txn.delete(key), write=True)
        return deleted

    def scan(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        """Return the items whose key starts with `prefix`, in key order."""

        def collect(txn: lmdb.Transaction) -> list[tuple[bytes, bytes]]:
            found = []
            cursor = txn.cursor()
            if cursor.set_range(prefix):
                for raw_key, value in cursor:
                    key = bytes(raw_key)
                    if not key.startswith(prefix):
                        break
                    found.append((key, bytes(value)))
            return found

        return self._run(collect, write=False)

    def snapshot(self) -> bytes:
        """Encode the whole content (the format of `MemoryStateStore.snapshot`, so the two compare)."""
        return msgspec.msgpack.encode(self.scan(b""))

    def restore(self, snapshot: bytes) -> None:
        """Replace the whole content with that of `snapshot`, in one write transaction.

        Raises:
            msgspec.DecodeError: `snapshot` is not a snapshot.
        """
        pairs = _snapshot_decoder.decode(snapshot)

        def replace() -> None:
            shared = self._env()
            with self.transaction(write=True):
                txn = self._txn()
                assert txn is not None
                txn.drop(shared.db, delete=False)
                for key, value in pairs:
                    txn.put(key, value)

        self.atomic(replace)

    def close(self) -> None:
        """Release the directory; the last store of the process on it closes the environment."""
        shared, self._shared = self._shared, None
        if shared is None:
            return
        with _registry_lock:
            shared.refs -= 1
            if shared.refs == 0:
                del _registry[shared.path]
                shared.env.close()
