"""Shared plumbing of the LMDB stores: lazy import, one environment per directory, calls in a thread."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, TypeVar

import anyio.to_thread

from ._errors import MissingExtra

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    import lmdb

__all__ = ("LmdbEnv", "run_in_thread")

T = TypeVar("T")

_registry: dict[str, LmdbEnv] = {}
_registry_lock = threading.Lock()


def _import_lmdb(needed_by: str) -> ModuleType:
    try:
        import lmdb
    except ImportError as exc:
        raise MissingExtra("lmdb", needed_by) from exc
    return lmdb


class LmdbEnv:
    """One LMDB environment, opened once per directory and process and shared by the stores using it.

    LMDB forbids opening one environment twice in a process, so `LmdbRunStateStore` and `LmdbLeaseStore`
    on the same directory share this object (reference-counted; the first opener's settings apply).
    """

    __slots__ = ("dbs", "env", "lmdb", "path", "refs")

    def __init__(self, path: str, env: lmdb.Environment, module: ModuleType) -> None:
        self.path = path
        self.env = env
        self.lmdb = module
        self.refs = 0
        self.dbs: dict[bytes, lmdb._Database] = {}

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, map_size: int, sync: bool, needed_by: str) -> LmdbEnv:
        """Open (or share) the environment in directory `path`, creating it if missing.

        Raises:
            MissingExtra: lmdb is not installed.
        """
        module = _import_lmdb(needed_by)
        real = os.path.realpath(os.fspath(path))
        with _registry_lock:
            shared = _registry.get(real)
            if shared is None:
                os.makedirs(real, exist_ok=True)
                env = module.open(real, map_size=map_size, max_dbs=16, sync=sync, metasync=sync, subdir=True)
                shared = _registry[real] = cls(real, env, module)
            shared.refs += 1
            return shared

    def db(self, name: bytes) -> lmdb._Database:
        """The named sub-database, created on first use."""
        with _registry_lock:
            found = self.dbs.get(name)
            if found is None:
                found = self.dbs[name] = self.env.open_db(name)
            return found

    def release(self) -> None:
        """Drop one reference; the last one closes the environment."""
        with _registry_lock:
            self.refs -= 1
            if self.refs == 0:
                del _registry[self.path]
                self.env.close()


async def run_in_thread(limiter: anyio.CapacityLimiter, fn: Callable[[], T]) -> T:
    """Run a blocking LMDB transaction in a worker thread, one at a time per store.

    Writes with `sync=True` wait for `fsync` (milliseconds on disk), so they must not block the event
    loop. If the caller is cancelled the transaction still finishes (never half-applied); the
    cancellation is raised afterwards.
    """
    return await anyio.to_thread.run_sync(fn, limiter=limiter)
