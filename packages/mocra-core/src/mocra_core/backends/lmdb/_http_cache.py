"""`HttpCacheStore`: the development HTTP cache's entries in an LMDB environment, and their format.

LMDB (already a dependency of mocra-core) rather than a file per entry or a cache library: a write is one
transaction, so an entry is never seen half-written, even beside another process writing the same
directory (the workers of a job on one host); reads are memory-mapped; the cache is one directory.
"""

from __future__ import annotations

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
    """One LMDB environment per directory and process (LMDB forbids opening one twice), ref-counted."""

    def __init__(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)
        self.env = open_env(path, map_size=64 << 20, readahead=False)
        self.env.reader_check()  # free the reader slots of processes that died
        self.refs = 0


class HttpCacheStore:
    """Cache entries by key in the LMDB environment in `path` (created if missing).

    Stores on one directory share one environment per process; `aclose` releases this one. An entry that
    cannot be decoded (another format, a damaged value) reads as missing and is logged; the caller stores
    a fresh one over it. Every call runs in a worker thread.

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

    def __init__(self, path: str) -> None:
        self.path = real = os.path.realpath(path)
        with _registry_lock:
            shared = _registry.get(real)
            if shared is None:
                try:
                    shared = _SharedEnv(real)
                except (OSError, lmdb.Error) as exc:
                    problem = f"cannot open the HTTP cache in {real!r}: {exc}; delete it to start afresh"
                    raise ConfigError("http_cache.dir", problem) from exc
                _registry[real] = shared
            shared.refs += 1
        self._shared: _SharedEnv | None = shared

    async def get(self, key: bytes) -> CacheEntry | None:
        """The entry stored under `key`, or None (missing, or unreadable: logged)."""
        raw = await self._run(lambda env: _read(env, key))
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
        """Store `entry` under `key`, replacing what was there (one transaction)."""
        value = _FORMAT + _ENCODER.encode(entry)
        await self._run(lambda env: _write(env, key, value))

    async def aclose(self) -> None:
        """Release this store; the last one on its directory flushes and closes the environment."""
        shared, self._shared = self._shared, None
        if shared is not None:
            await anyio.to_thread.run_sync(_release, self.path, shared)

    async def _run(self, call: Callable[[lmdb.Environment], T]) -> T:
        shared = self._shared
        if shared is None:
            raise RuntimeError(f"the HTTP cache {self.path!r} is closed")
        return await anyio.to_thread.run_sync(call, shared.env)


def _read(env: lmdb.Environment, key: bytes) -> bytes | None:
    while True:
        try:
            with env.begin(buffers=False) as txn:
                value: bytes | None = txn.get(key)
                return value
        except lmdb.MapResizedError:
            env.set_mapsize(0)  # another process grew the map: adopt its size


def _write(env: lmdb.Environment, key: bytes, value: bytes) -> None:
    while True:
        try:
            with env.begin(write=True) as txn:
                txn.put(key, value)
                return
        except lmdb.MapFullError:
            env.set_mapsize(env.info()["map_size"] * 2)
        except lmdb.MapResizedError:
            env.set_mapsize(0)


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
