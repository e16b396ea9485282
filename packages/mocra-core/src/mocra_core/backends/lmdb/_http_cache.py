"""`HttpCacheStore`: the development HTTP cache's entries in an LMDB environment, and their format.

LMDB (already a dependency of mocra-core) rather than a file per entry or a cache library: a write is one
transaction, so an entry is never seen half-written, even beside another process writing the same
directory (the workers of a job on one host); reads are memory-mapped; the cache is one directory.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from typing import TYPE_CHECKING

import anyio.to_thread
import lmdb
import msgspec

from ..._errors import ConfigError
from ._env import open_env

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    T = TypeVar("T")

__all__ = ("CacheEntry", "CachedHop", "CachedResponse", "HttpCacheStore")

logger = logging.getLogger(__name__)

_MAP_SIZE = 1 << 30  # sparse: the file grows with its entries; the map doubles when full
_FORMAT = b"\x01"  # the first byte of every value: another one is read as a miss


class CachedHop(msgspec.Struct, array_like=True):
    """A redirect hop of a stored download, checked again (`Hop`) when the entry is used."""

    url: str
    method: str
    body: bytes | None
    status: int


class CachedResponse(msgspec.Struct, array_like=True):
    """The final response of a stored download (body decoded, headers as received)."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    elapsed: float


class CacheEntry(msgspec.Struct, array_like=True):
    """One stored download: when, its redirect hops, and its response (None: a hop was refused)."""

    stored_at: float
    hops: list[CachedHop]
    response: CachedResponse | None


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(CacheEntry)
_registry: dict[str, _SharedEnv] = {}
_registry_lock = threading.Lock()


class _SharedEnv:
    """One LMDB environment per directory and process (LMDB forbids opening one twice), ref-counted.

    Its transactions run one at a time (`lock`): growing the map needs no other transaction open in the
    process, and a cache's reads take microseconds.
    """

    def __init__(self, path: str, map_size: int) -> None:
        os.makedirs(path, exist_ok=True)
        self.env = open_env(path, map_size=map_size, readahead=False)
        self.env.reader_check()  # free the reader slots of processes that died
        self.lock = threading.Lock()
        self.refs = 0

    def read(self, key: bytes) -> bytes | None:
        """The value under `key`, or None. Blocking (waits for the lock)."""
        with self.lock:
            return self.read_locked(key)

    def try_read(self, key: bytes) -> tuple[bool, bytes | None]:
        """`(True, value)` when the lock was free (the read took microseconds), else `(False, None)`."""
        if not self.lock.acquire(blocking=False):
            return False, None
        try:
            return True, self.read_locked(key)
        finally:
            self.lock.release()

    def read_locked(self, key: bytes) -> bytes | None:
        """The value under `key`, or None; the caller holds the lock."""
        env = self.env
        while True:
            try:
                with env.begin(buffers=False) as txn:
                    value: bytes | None = txn.get(key)
                    return value
            except lmdb.MapResizedError:
                env.set_mapsize(0)  # another process grew the map: adopt its size

    def write(self, values: dict[bytes, bytes]) -> None:
        """Put `values` by key in one transaction, growing the map when it is full. Blocking."""
        env = self.env
        with self.lock:
            while True:
                try:
                    with env.begin(write=True) as txn:
                        for key, value in values.items():
                            txn.put(key, value)
                        return
                except lmdb.MapFullError:
                    env.set_mapsize(env.info()["map_size"] * 2)
                except lmdb.MapResizedError:
                    env.set_mapsize(0)


class HttpCacheStore:
    """Cache entries by key in the LMDB environment in `path` (created if missing).

    Stores on one directory share one environment per process; `aclose` releases this one. An entry that
    cannot be read (another format, a damaged value, an LMDB error) reads as missing and is logged; the
    caller stores a fresh one over it; a failed write is logged, not raised, so a cache that fails never
    fails a download. Writes are batched: entries stored while a write runs go in the next transaction.
    Every write runs in a worker thread; transactions run one at a time per directory.

    Args:
        path: The directory.
        map_size: The memory map's first size in bytes (the first store opened on `path` sets it); it
            doubles whenever it fills.

    Raises:
        ConfigError: the directory cannot be opened as an LMDB environment (`http_cache.dir`).

    Example:
        >>> import anyio, tempfile
        >>> async def main(path: str) -> CacheEntry | None:
        ...     store = HttpCacheStore(path)
        ...     await store.put(b"k", CacheEntry(stored_at=1.0, hops=[], response=None))
        ...     try:
        ...         return await store.get(b"k")
        ...     finally:
        ...         await store.aclose()
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp)
        CacheEntry(stored_at=1.0, hops=[], response=None)
    """

    def __init__(self, path: str, *, map_size: int = _MAP_SIZE) -> None:
        self.path = real = os.path.realpath(path)
        with _registry_lock:
            shared = _registry.get(real)
            if shared is None:
                try:
                    shared = _SharedEnv(real, map_size)
                except (OSError, lmdb.Error) as exc:
                    problem = f"cannot open the HTTP cache in {real!r}: {exc}; delete it to start afresh"
                    raise ConfigError("http_cache.dir", problem) from exc
                _registry[real] = shared
            shared.refs += 1
        self._shared: _SharedEnv | None = shared
        self._limiter = anyio.CapacityLimiter(1)  # one thread at a time: they would queue for the lock
        self._pending: dict[bytes, bytes] = {}  # stored, not yet written
        self._writing = False

    async def get(self, key: bytes) -> CacheEntry | None:
        """The entry stored under `key`, or None (missing, or unreadable: logged)."""
        raw = self._pending.get(key)
        try:
            if raw is None:
                raw = await self._read(key)
        except lmdb.Error as exc:
            logger.warning("HTTP cache %s: cannot read an entry (%s); fetching again", self.path, exc)
            return None
        if raw is None:
            return None
        if raw[:1] != _FORMAT:
            logger.warning("HTTP cache %s: an entry of another format; fetching again", self.path)
            return None
        try:
            return _DECODER.decode(raw[1:])
        except msgspec.DecodeError as exc:
            logger.warning("HTTP cache %s: a damaged entry (%s); fetching again", self.path, exc)
            return None

    async def put(self, key: bytes, entry: CacheEntry) -> None:
        """Store `entry` under `key`, replacing what was there; a failure to write it is logged.

        Returns once it is written, or at once when another call is writing: that call writes this entry
        in its next transaction (and `aclose` writes what is left).
        """
        self._pending[key] = _FORMAT + _ENCODER.encode(entry)
        if not self._writing:
            self._writing = True
            try:
                await self._write_pending()
            finally:
                self._writing = False

    async def _read(self, key: bytes) -> bytes | None:
        # A read is a memory-mapped lookup (microseconds): done here when no write holds the lock, as a
        # thread hop cost ~30 times more (`benchmarks/README.md`, "HTTP cache"); in a thread otherwise.
        shared = self._shared
        if shared is None:
            raise RuntimeError(f"the HTTP cache {self.path!r} is closed")
        done, raw = shared.try_read(key)
        return raw if done else await self._run(functools.partial(_SharedEnv.read, key=key))

    async def _write_pending(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, {}
            try:
                await self._run(functools.partial(_SharedEnv.write, values=batch))
            except lmdb.Error as exc:
                logger.warning("HTTP cache %s: cannot store %d entries (%s)", self.path, len(batch), exc)

    async def aclose(self) -> None:
        """Write what is pending, release this store; the last one on its directory closes the environment."""
        if self._shared is not None:
            with anyio.CancelScope(shield=True):
                await self._write_pending()
        shared, self._shared = self._shared, None
        if shared is not None:
            await anyio.to_thread.run_sync(_release, self.path, shared)

    async def _run(self, call: Callable[[_SharedEnv], T]) -> T:
        shared = self._shared
        if shared is None:
            raise RuntimeError(f"the HTTP cache {self.path!r} is closed")
        return await anyio.to_thread.run_sync(call, shared, limiter=self._limiter)


def _release(path: str, shared: _SharedEnv) -> None:
    with _registry_lock:  # closed under the lock: a new opener of `path` waits for it
        shared.refs -= 1
        if shared.refs:
            return
        del _registry[path]
        try:
            shared.env.sync(True)
        finally:
            shared.env.close()
