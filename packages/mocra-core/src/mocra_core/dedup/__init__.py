"""Request dedup: the `SeenSet` protocol and its memory, LMDB, coordination and Redis stores.

`RedisSeenSet` needs the `redis` extra and `ClusterSeenSet` the `cluster` extra; each is imported on first
use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .._errors import MissingExtra
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

_LAZY = {"RedisSeenSet": ("._redis", "redis"), "ClusterSeenSet": ("._cluster", "cluster")}
"""The stores imported on first use: their module and the extra that provides their driver."""


def __getattr__(name: str) -> object:
    """Import `RedisSeenSet` / `ClusterSeenSet` on first use, so the package works without their extras."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, extra = _LAZY[name]
    driver = "mocra_cluster" if extra == "cluster" else extra
    try:
        found: object = getattr(importlib.import_module(module, __name__), name)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != driver:
            raise
        raise MissingExtra(extra, f"{__name__}.{name}") from exc
    globals()[name] = found
    return found
