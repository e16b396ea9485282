"""Request dedup: the `SeenSet` protocol and its memory, LMDB, coordination and Redis stores.

`RedisSeenSet` needs the `redis` extra and `ClusterSeenSet` the `cluster` extra; each is imported on first
use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._coordination import CoordinationSeenSet
from ._errors import SeenSetError
from ._lmdb import LmdbSeenSet
from ._memory import MemorySeenSet
from ._seen_set import SeenSet

if TYPE_CHECKING:
    from ._cluster import ClusterSeenSet
    from ._redis import RedisSeenSet

__all__ = (
    "ClusterSeenSet",
    "CoordinationSeenSet",
    "LmdbSeenSet",
    "MemorySeenSet",
    "RedisSeenSet",
    "SeenSet",
    "SeenSetError",
)

_LAZY = {
    "RedisSeenSet": ("._redis", "redis", "redis"),
    "ClusterSeenSet": ("._cluster", "cluster", "mocra_cluster"),
}
"""The stores imported on first use: their module, the extra that provides their driver, and its package."""


def __getattr__(name: str) -> object:
    """Import `RedisSeenSet` / `ClusterSeenSet` on first use, so the package works without their extras."""
    return load_optional(__name__, _LAZY, name)
