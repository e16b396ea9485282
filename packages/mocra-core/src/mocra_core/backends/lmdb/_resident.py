"""`ResidentPages`: keep the pages of an LMDB file that a process has mapped in bounded (Linux).

LMDB reads through a memory map of its file. Every page a process touches there stays in its resident
set (`RssFile`) until the kernel needs the memory back, and the kernel maps the neighbours of each page
read as well (fault-around), so a queue that writes and then reads a 2 GB file ends with ~2 GB of RSS
that is only page cache. `trim` drops the map's pages from the process's page tables with
`madvise(MADV_DONTNEED)`: for a shared file mapping that loses nothing (the next read faults the page back
in from the page cache, or the file), it only unmaps. Where that is not available (not Linux, no libc)
it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    import lmdb

__all__ = ("ResidentPages",)

logger = logging.getLogger(__name__)

_MADV_DONTNEED = 4
_TRIM_EVERY = 256  # write transactions between two trims


def _load_madvise() -> Callable[[int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    except OSError:
        return None
    madvise = libc.madvise
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    madvise.restype = ctypes.c_int
    madvise_fn: Callable[[int, int, int], int] = madvise
    return madvise_fn


_madvise = _load_madvise()


class ResidentPages:
    """Counts an environment's write transactions and unmaps its file's pages every `every` of them.

    Args:
        env: The environment (its `data.mdb` is found in `/proc/self/maps`; a remap is found again).
        every: Write transactions between two trims (default: 256).
    """

    __slots__ = ("_data", "_every", "_writes")

    def __init__(self, env: lmdb.Environment, *, every: int | None = None) -> None:
        self._data = os.path.realpath(os.path.join(env.path(), "data.mdb"))
        self._every = _TRIM_EVERY if every is None else every
        self._writes = 0

    def wrote(self) -> None:
        """Count a write transaction; trim when it is the `every`-th."""
        self._writes += 1
        if self._writes >= self._every:
            self._writes = 0
            self.trim()

    def trim(self) -> int:
        """Unmap the file's resident pages from this process; return the bytes of mapping advised."""
        if _madvise is None:
            return 0
        advised = 0
        for start, end in self._ranges():
            if _madvise(start, end - start, _MADV_DONTNEED) == 0:
                advised += end - start
            else:  # pragma: no cover - the kernel refused: keep going without it
                logger.debug("madvise of %s failed: errno %d", self._data, ctypes.get_errno())
        return advised

    def _ranges(self) -> list[tuple[int, int]]:
        ranges = []
        try:
            with open("/proc/self/maps") as maps:
                for line in maps:
                    if line.rstrip("\n").endswith(self._data):
                        start, _, end = line.partition(" ")[0].partition("-")
                        ranges.append((int(start, 16), int(end, 16)))
        except OSError:  # pragma: no cover - no procfs
            return []
        return ranges
