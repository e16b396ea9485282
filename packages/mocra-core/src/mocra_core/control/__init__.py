"""Operating a running job: what it looks like (`JobSnapshot`) and how to steer it (`JobView`).

The admin API, the dashboard and `/metrics` read jobs through `JobView`; the engine provides one per run.
"""

from ._protocol import JobView
from ._snapshot import ClusterNode, ControlState, FailureView, JobSnapshot, QueueDepth, WorkerInfo

__all__ = (
    "ClusterNode",
    "ControlState",
    "FailureView",
    "JobSnapshot",
    "JobView",
    "QueueDepth",
    "WorkerInfo",
)
