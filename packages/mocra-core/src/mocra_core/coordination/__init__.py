"""Coordination: shared state for the workers of one crawl job, behind one protocol.

`Coordination` is the seam (KV values with TTL, gates, compare-and-set, counters, lists, fenced locks,
leadership); `LocalCoordination` serves the tasks of one process, `LmdbCoordination` the processes of one
host. `CoordinationLeaseStore` and `CoordinationRunStateStore` put `mocra_dag`'s run guard and run state
on any of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._dag import CoordinationLeaseStore, CoordinationRunStateStore
from ._errors import CoordinationError
from ._lmdb import LmdbCoordination
from ._local import LocalCoordination
from ._protocol import MAX_KEY_BYTES, Coordination, LockInfo

__all__ = (
    "MAX_KEY_BYTES",
    "Coordination",
    "CoordinationError",
    "CoordinationLeaseStore",
    "CoordinationRunStateStore",
    "LmdbCoordination",
    "LocalCoordination",
    "LockInfo",
)

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith(__name__ + "."):
        _obj.__module__ = __name__
del _name, _obj

if TYPE_CHECKING:  # mypy --strict proves that the backends fit the protocol

    def _fits(local: LocalCoordination, lmdb: LmdbCoordination) -> tuple[Coordination, Coordination]:
        return local, lmdb
