"""Request dedup: the `SeenSet` protocol and its memory and LMDB stores."""

from __future__ import annotations

from ._coordination import CoordinationSeenSet
from ._errors import SeenSetError
from ._lmdb import LmdbSeenSet
from ._memory import MemorySeenSet
from ._seen_set import SeenSet

__all__ = ("CoordinationSeenSet", "LmdbSeenSet", "MemorySeenSet", "SeenSet", "SeenSetError")
