"""Request dedup: the `SeenSet` protocol and its memory and LMDB stores."""

from __future__ import annotations

from ._errors import SeenSetError
from ._lmdb import LmdbSeenSet
from ._memory import MemorySeenSet
from ._seen_set import SeenSet

__all__ = ("LmdbSeenSet", "MemorySeenSet", "SeenSet", "SeenSetError")
