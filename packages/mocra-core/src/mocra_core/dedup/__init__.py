"""Request dedup: the `SeenSet` protocol and its memory, LMDB, coordination and Redis stores.

`RedisSeenSet` needs the `redis` extra and is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import MissingExtra
from ._coordination import CoordinationSeenSet
from ._errors import SeenSetError
from ._lmdb import LmdbSeenSet
from ._memory import MemorySeenSet
from ._seen_set import SeenSet

if TYPE_CHECKING:
    from ._redis import RedisSeenSet

__all__ = ("CoordinationSeenSet", "LmdbSeenSet", "MemorySeenSet", "RedisSeenSet", "SeenSet", "SeenSetError")


def __getattr__(name: str) -> object:
    """Import `RedisSeenSet` on first use, so the package works without the `redis` extra."""
    if name != "RedisSeenSet":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from ._redis import RedisSeenSet
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "redis":
            raise
        raise MissingExtra("redis", f"{__name__}.RedisSeenSet") from exc
    globals()[name] = RedisSeenSet
    return RedisSeenSet
