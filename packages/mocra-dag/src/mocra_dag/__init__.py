"""mocra_dag: a generic DAG engine.

Build a validated `Graph` (fluent `Graph.builder()` or `Graph.chain`), then run graphs of async node
functions with a `Scheduler`: fan-out and fan-in, bounded concurrency, per-node retries, timeouts and
circuit breakers (`NodePolicy`), idempotency keys with single-flight, a lease-based `RunGuard` whose
fencing token protects the run's state, resume after failure, and a stream of `NodeEvent`s. State and
lease stores are protocols with in-memory and LMDB implementations (`pip install 'mocra-dag[lmdb]'`).
"""

from __future__ import annotations

from ._clock import Clock, ManualClock, SystemClock
from ._errors import (
    CircuitOpen,
    CycleError,
    DagError,
    DuplicateNodeError,
    EmptyGraphError,
    GraphError,
    InvalidNodeIdError,
    MissingExtra,
    NodeTimeout,
    OutputNotSerialisable,
    ReservedNodeIdError,
    RunAlreadyActive,
    RunFailed,
    RunTimeout,
    StaleToken,
    UnknownNodeError,
    UnreachableNodeError,
)
from ._events import EventLog, EventLogger, EventSink, NodeEvent, NodeStatus
from ._graph import Graph, GraphBuilder
from ._guard import RunGuard
from ._lease import Lease, LeaseStore, MemoryLeaseStore
from ._lmdb_lease import LmdbLeaseStore
from ._lmdb_state import LmdbRunStateStore
from ._policy import NodePolicy
from ._run import RunResult
from ._scheduler import Scheduler
from ._settings import SchedulerSettings
from ._state import MemoryRunStateStore, NodeRecord, RunStateStore
from ._step import Inputs, NodeFn, Step

__version__ = "0.1.0"

__all__ = (
    "CircuitOpen",
    "Clock",
    "CycleError",
    "DagError",
    "DuplicateNodeError",
    "EmptyGraphError",
    "EventLog",
    "EventLogger",
    "EventSink",
    "Graph",
    "GraphBuilder",
    "GraphError",
    "Inputs",
    "InvalidNodeIdError",
    "Lease",
    "LeaseStore",
    "LmdbLeaseStore",
    "LmdbRunStateStore",
    "ManualClock",
    "MemoryLeaseStore",
    "MemoryRunStateStore",
    "MissingExtra",
    "NodeEvent",
    "NodeFn",
    "NodePolicy",
    "NodeRecord",
    "NodeStatus",
    "NodeTimeout",
    "OutputNotSerialisable",
    "ReservedNodeIdError",
    "RunAlreadyActive",
    "RunFailed",
    "RunGuard",
    "RunResult",
    "RunStateStore",
    "RunTimeout",
    "Scheduler",
    "SchedulerSettings",
    "StaleToken",
    "Step",
    "SystemClock",
    "UnknownNodeError",
    "UnreachableNodeError",
    "__version__",
)
