"""`StateStore`: a few named values in an LMDB directory (a job dir's `state/`: the job's saved stats)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._env import open_env

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping

    import lmdb

__all__ = ("StateStore",)


class StateStore:
    """Named byte values in the LMDB environment of a directory, opened on first use.

    Writes are not fsynced (see `open_env`): they survive the process being killed, not a power cut.

    Args:
        path: The directory; created on first use.
        map_size: Size of the memory map, in bytes.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     store = StateStore(tmp + "/state")
        ...     store.put({b"a": b"1", b"b": b"2"})
        ...     found = store.get(b"a", b"c")
        ...     store.close()
        >>> found
        [b'1', None]
    """

    __slots__ = ("_env", "_map_size", "path")

    def __init__(self, path: str | os.PathLike[str], *, map_size: int = 64 << 20) -> None:
        self.path = path
        self._map_size = map_size
        self._env: lmdb.Environment | None = None

    def _opened(self) -> lmdb.Environment:
        if self._env is None:
            self._env = open_env(self.path, map_size=self._map_size)
        return self._env

    def get(self, *keys: bytes) -> list[bytes | None]:
        """The values of `keys` (None for a missing one), read in one transaction."""
        with self._opened().begin() as txn:
            return [txn.get(key) for key in keys]

    def put(self, values: Mapping[bytes, bytes]) -> None:
        """Set `values` in one write transaction (blocking: microseconds)."""
        with self._opened().begin(write=True) as txn:
            for key, value in values.items():
                txn.put(key, value)

    def close(self) -> None:
        """Close the environment (the next call opens it again)."""
        if self._env is not None:
            self._env.close()
            self._env = None
