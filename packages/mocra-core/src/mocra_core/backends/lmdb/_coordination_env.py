r"""The LMDB environment behind `LmdbCoordination`: layout, one environment per directory and process.

Four sub-databases; keys are the UTF-8 coordination keys (no NUL, so `key + b"\0"` is a unique prefix);
integers are big-endian.

```
values    key            -> kind (u8), deadline (f64 epoch s, inf = never) + value bytes | list length (u64)
elements  key \0 index   -> element bytes                          (the items of the list `key`)
locks     key            -> token (i64), deadline (f64 epoch s) + holder (UTF-8)
meta      b"token"       -> the last fencing token handed out (u64)
```
"""

from __future__ import annotations

import os
import struct
import threading
from typing import TYPE_CHECKING, TypeVar

import lmdb

from ...coordination._errors import CoordinationError
from ._env import open_env

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("HEAD", "LIST", "LOCK", "U64", "VALUE", "SharedEnv")

T = TypeVar("T")

HEAD = struct.Struct(">Bd")  # kind, deadline
LOCK = struct.Struct(">qd")  # token, deadline (+ holder)
U64 = struct.Struct(">Q")
VALUE, LIST = 0, 1

_registry: dict[str, SharedEnv] = {}
_registry_lock = threading.Lock()


class SharedEnv:
    """One LMDB environment, opened once per directory and process (LMDB forbids opening it twice).

    Reference-counted: the instances of `LmdbCoordination` on one directory share it, and the last
    `release` flushes it to disk and closes it. The first opener's `map_size` applies; the map doubles
    whenever it fills, and a map grown by another process is adopted.
    """

    __slots__ = ("elements", "env", "locks", "meta", "path", "refs", "values")

    def __init__(self, path: str, map_size: int) -> None:
        os.makedirs(path, exist_ok=True)
        self.path = path
        self.env = open_env(path, map_size=map_size, max_dbs=4, readahead=False)
        self.env.reader_check()  # free the reader slots of processes that died
        self.values = self.env.open_db(b"values")
        self.elements = self.env.open_db(b"elements")
        self.locks = self.env.open_db(b"locks")
        self.meta = self.env.open_db(b"meta")
        self.refs = 0

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, map_size: int) -> SharedEnv:
        """Open (or share) the environment in directory `path`, creating it if missing.

        Raises:
            CoordinationError: The environment cannot be opened.
        """
        real = os.path.realpath(os.fspath(path))
        with _registry_lock:
            shared = _registry.get(real)
            if shared is None:
                try:
                    shared = cls(real, map_size)
                except (OSError, lmdb.Error) as exc:
                    raise CoordinationError("", f"cannot open LMDB environment {real!r}: {exc}") from exc
                _registry[real] = shared
            shared.refs += 1
            return shared

    def release(self) -> None:
        """Drop one reference; the last one flushes (`fsync`) and closes the environment. Blocking."""
        with _registry_lock:
            self.refs -= 1
            if self.refs == 0:
                del _registry[self.path]
                try:
                    self.env.sync(True)
                finally:
                    self.env.close()

    def write(self, change: Callable[[lmdb.Transaction[bytes]], T]) -> T:
        """Run `change` in one write transaction and commit it (aborted if `change` raises)."""
        while True:
            try:
                with self.env.begin(write=True) as txn:
                    return change(txn)
            except lmdb.MapFullError:
                self.env.set_mapsize(self.env.info()["map_size"] * 2)
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)  # another process grew the map: adopt its size
            except lmdb.Error as exc:
                raise CoordinationError("", f"LMDB {self.path!r}: {exc}") from exc

    def read(self, look: Callable[[lmdb.Transaction[bytes]], T]) -> T:
        """Run `look` in a read transaction."""
        while True:
            try:
                with self.env.begin() as txn:
                    return look(txn)
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)
            except lmdb.Error as exc:
                raise CoordinationError("", f"LMDB {self.path!r}: {exc}") from exc

    def next_token(self, txn: lmdb.Transaction[bytes]) -> int:
        """Hand out the next fencing token (inside the caller's write transaction)."""
        raw = txn.get(b"token", db=self.meta)
        token = (0 if raw is None else U64.unpack(raw)[0]) + 1
        txn.put(b"token", U64.pack(token), db=self.meta)
        return token

    def drop_elements(self, txn: lmdb.Transaction[bytes], kb: bytes) -> None:
        """Delete the elements of the list `kb`."""
        prefix = kb + b"\0"
        cursor = txn.cursor(db=self.elements)
        found = cursor.set_range(prefix)
        while found and cursor.key().startswith(prefix):
            cursor.delete()  # moves to the next element
            found = cursor.key() != b""
