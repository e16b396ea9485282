"""Request dedup: the `SeenSet` protocol and its memory, LMDB, coordination and Redis stores.

The stores of a driver live in `mocra_core.backends` and are imported on first use (this package imports
no driver): `MemorySeenSet`, `LmdbSeenSet`, `RedisSeenSet` (the `redis` extra), `ClusterSeenSet` (the
`cluster` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._coordination import CoordinationSeenSet
from ._errors import SeenSetError
from ._seen_set import SeenSet

if TYPE_CHECKING:
    from ..backends.cluster._seen import ClusterSeenSet
    from ..backends.lmdb._seen import LmdbSeenSet
    from ..backends.memory._seen import MemorySeenSet
    from ..backends.redis._seen import RedisSeenSet

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
    "MemorySeenSet": ("..backends.memory._seen", "", ""),
    "LmdbSeenSet": ("..backends.lmdb._seen", "", ""),
    "RedisSeenSet": ("..backends.redis._seen", "redis", "redis"),
    "ClusterSeenSet": ("..backends.cluster._seen", "cluster", "mocra_cluster"),
}
"""The stores imported on first use: their module, the extra that provides their driver, and its package
("" for none)."""


def __getattr__(name: str) -> object:
    """Import a store on first use: the package works without the extras, and imports no driver."""
    return load_optional(__name__, _LAZY, name)
