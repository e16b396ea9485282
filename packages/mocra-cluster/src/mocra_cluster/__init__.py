"""mocra_cluster: mocra's control plane."""

from __future__ import annotations

from ._commands import (
    AcquireLock,
    AcquirePartition,
    AddIfAbsent,
    Append,
    Command,
    CompareAndSet,
    Delete,
    Heartbeat,
    Incr,
    Join,
    Publish,
    Purge,
    ReleaseLock,
    ReleasePartition,
    Remove,
    RenewLock,
    RenewPartition,
    Set,
    decode_command,
    encode_command,
)
from ._config import ClusterConfig
from ._errors import (
    ClusterClosed,
    ClusterConfigError,
    ClusterError,
    ClusterUnavailable,
    NoQuorum,
    NotLeader,
    Refused,
    StaleToken,
)
from ._fencing import FencedResource
from ._liveness import Liveness
from ._lmdb_store import LmdbStateStore
from ._local import LocalControlPlane
from ._machine import Result, StateMachine
from ._node_status import NodeStatus, node_status
from ._partitions import PARTITIONS, assignment, owned_partitions, owner, partition_of
from ._protocol import ClusterStatus, ControlPlane
from ._raft import RaftControlPlane
from ._raft_status import RaftStatus
from ._raft_tuning import RaftTuning
from ._records import LockInfo, Member, Message
from ._store import MemoryStateStore, StateStore

__version__ = "0.1.0"

__all__ = (
    "AcquireLock",
    "AcquirePartition",
    "AddIfAbsent",
    "Append",
    "ClusterClosed",
    "ClusterConfig",
    "ClusterConfigError",
    "ClusterError",
    "ClusterStatus",
    "ClusterUnavailable",
    "Command",
    "CompareAndSet",
    "ControlPlane",
    "Delete",
    "FencedResource",
    "Heartbeat",
    "Incr",
    "Join",
    "Liveness",
    "LmdbStateStore",
    "LocalControlPlane",
    "LockInfo",
    "Member",
    "MemoryStateStore",
    "Message",
    "NoQuorum",
    "NodeStatus",
    "NotLeader",
    "PARTITIONS",
    "Publish",
    "Purge",
    "RaftControlPlane",
    "RaftStatus",
    "RaftTuning",
    "Refused",
    "ReleaseLock",
    "ReleasePartition",
    "Remove",
    "RenewLock",
    "RenewPartition",
    "Result",
    "Set",
    "StaleToken",
    "StateMachine",
    "StateStore",
    "__version__",
    "assignment",
    "decode_command",
    "encode_command",
    "node_status",
    "owned_partitions",
    "owner",
    "partition_of",
)
