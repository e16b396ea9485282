"""Coordination: shared state for the workers of one crawl job, behind one protocol.

`Coordination` is the seam (KV values with TTL, gates, compare-and-set, counters, lists, fenced locks,
leadership); `LocalCoordination` serves the tasks of one process, `LmdbCoordination` the processes of one
host, `RedisCoordination` (the `redis` extra, imported on first use) the workers of many hosts, and
`ClusterCoordination` (the `cluster` extra, imported on first use) the nodes of a `mocra_cluster`
control plane.
`CoordinationLeaseStore` and `CoordinationRunStateStore` put `mocra_dag`'s run guard and run state on any
of them. `Ownership` says which node of a cluster does the work of a key: `SingleNodeOwnership` (all of it)
or `ControlPlaneOwnership` (by the partitions of a `mocra_cluster` control plane).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._dag import CoordinationLeaseStore, CoordinationRunStateStore
from ._errors import CoordinationError
from ._ownership import Ownership, SingleNodeOwnership
from ._protocol import MAX_KEY_BYTES, Coordination, LockInfo

if TYPE_CHECKING:
    from ..backends.cluster._coordination import ClusterCoordination
    from ..backends.cluster._ownership import ControlPlaneOwnership
    from ..backends.lmdb._coordination import LmdbCoordination
    from ..backends.memory._coordination import LocalCoordination
    from ..backends.redis._coordination import RedisCoordination

_LAZY = {  # name -> (module, extra, the package the extra installs; "" for none)
    "LocalCoordination": ("..backends.memory._coordination", "", ""),
    "LmdbCoordination": ("..backends.lmdb._coordination", "", ""),
    "RedisCoordination": ("..backends.redis._coordination", "redis", "redis"),
    "ClusterCoordination": ("..backends.cluster._coordination", "cluster", "mocra_cluster"),
    "ControlPlaneOwnership": ("..backends.cluster._ownership", "", ""),
}

__all__ = (
    "MAX_KEY_BYTES",
    "ClusterCoordination",
    "ControlPlaneOwnership",
    "Coordination",
    "CoordinationError",
    "CoordinationLeaseStore",
    "CoordinationRunStateStore",
    "LmdbCoordination",
    "LocalCoordination",
    "LockInfo",
    "Ownership",
    "RedisCoordination",
    "SingleNodeOwnership",
)

for _name in __all__:
    _obj = globals().get(_name)  # the backends come later, from __getattr__
    if getattr(_obj, "__module__", "").startswith(__name__ + "."):
        _obj.__module__ = __name__
del _name, _obj


def __getattr__(name: str) -> object:
    """Import a backend on first use: the package works without the extras, and imports no driver."""
    return load_optional(__name__, _LAZY, name)


if TYPE_CHECKING:  # mypy --strict proves that the backends fit the protocol

    def _fits(
        local: LocalCoordination,
        lmdb: LmdbCoordination,
        redis: RedisCoordination,
        cluster: ClusterCoordination,
    ) -> tuple[Coordination, Coordination, Coordination, Coordination]:
        return local, lmdb, redis, cluster
