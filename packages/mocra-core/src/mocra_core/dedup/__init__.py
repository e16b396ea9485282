"""Request dedup: the `SeenSet` protocol and its memory, LMDB, coordination and Redis stores.

The stores of a driver live in `mocra_core.backends` and are imported on first use (this package imports
no driver): `MemorySeenSet`, `LmdbSeenSet`, `RedisSeenSet` (the `redis` extra), `ClusterSeenSet` (the
`cluster` extra), and the approximate ones (scalable Bloom filters, `dedup.approximate`):
`MemoryBloomSeenSet` and `RedisBloomSeenSet`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._coordination import CoordinationSeenSet
from ._errors import SeenSetError
from ._seen_set import SeenSet
from ._settings import DedupSettings

if TYPE_CHECKING:
    from ..backends.cluster._seen import ClusterSeenSet
    from ..backends.lmdb._seen import LmdbSeenSet
    from ..backends.memory._bloom_seen import MemoryBloomSeenSet
    from ..backends.memory._seen import MemorySeenSet
    from ..backends.redis._bloom_seen import RedisBloomSeenSet
    from ..backends.redis._seen import RedisSeenSet

__all__ = (
    "ClusterSeenSet",
    "CoordinationSeenSet",
    "DedupSettings",
    "LmdbSeenSet",
    "MemoryBloomSeenSet",
    "MemorySeenSet",
    "RedisBloomSeenSet",
    "RedisSeenSet",
    "SeenSet",
    "SeenSetError",
)

_LAZY = {
    "MemorySeenSet": ("..backends.memory._seen", "", ""),
    "MemoryBloomSeenSet": ("..backends.memory._bloom_seen", "", ""),
    "RedisBloomSeenSet": ("..backends.redis._bloom_seen", "redis", "redis"),
    "LmdbSeenSet": ("..backends.lmdb._seen", "", ""),
    "RedisSeenSet": ("..backends.redis._seen", "redis", "redis"),
    "ClusterSeenSet": ("..backends.cluster._seen", "cluster", "mocra_cluster"),
}
"""The stores imported on first use: their module, the extra that provides their driver, and its package
("" for none)."""


def __getattr__(name: str) -> object:
    """Import a store on first use: the package works without the extras, and imports no driver."""
    return load_optional(__name__, _LAZY, name)
