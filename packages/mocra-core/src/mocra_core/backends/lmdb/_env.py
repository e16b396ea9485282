"""`open_env`: the one place an LMDB environment is opened (queue, seen set, coordination, gate, stats)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import lmdb

if TYPE_CHECKING:
    import os

__all__ = ("open_env",)


def open_env(
    path: str | os.PathLike[str],
    *,
    map_size: int = 10 << 20,
    max_dbs: int = 0,
    readonly: bool = False,
    readahead: bool = True,
) -> lmdb.Environment:
    """Open the LMDB environment in directory `path` (created if missing, unless `readonly`).

    Written environments are opened with `sync=False, metasync=False`: a commit is in the OS page cache
    when it returns, so it survives the process being killed, not a power cut or kernel crash. A
    `readonly` one reads beside the process writing it, its map as large as the file.

    Args:
        path: The environment's directory.
        map_size: Initial size of the memory map, in bytes (ignored when `readonly`; LMDB's default).
        max_dbs: Named sub-databases it holds (0: only the main one).
        readonly: Open it for reading only; its sub-databases must exist.
        readahead: Let the OS read ahead (off for random access to a set much larger than memory).

    Raises:
        lmdb.Error: it cannot be opened (each store says so in its own error).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     env = open_env(tmp, map_size=1 << 20)
        ...     with env.begin(write=True) as txn:
        ...         stored = txn.put(b"k", b"v")
        ...     env.close()
        ...     reader = open_env(tmp, readonly=True)
        ...     with reader.begin() as txn:
        ...         value = txn.get(b"k")
        ...     reader.close()
        >>> value
        b'v'
    """
    if readonly:
        return lmdb.open(str(path), readonly=True, max_dbs=max_dbs, subdir=True, readahead=readahead)
    return lmdb.open(
        str(path),
        map_size=map_size,
        max_dbs=max_dbs,
        sync=False,
        metasync=False,
        subdir=True,
        readahead=readahead,
    )
