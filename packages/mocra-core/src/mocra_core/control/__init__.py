"""Operating a running job: what it looks like (`JobSnapshot`) and how to steer it (`JobView`).

The admin API, the dashboard and `/metrics` read jobs through `JobView`; the engine provides one per run
(`mocra_core.engine.EngineJobView`) and registers it in the `JobRegistry` it was given. `JobControl`
pauses, resumes and stops a whole job through its coordination store; `WorkerRegistry` lists its live
workers from their heartbeats.
"""

from ._errors import JobEnded
from ._hold import Hold
from ._job_control import CONTROL_KEY, POLL_INTERVAL, STOPS_KEY, JobControl
from ._protocol import JobView
from ._registry import KEPT_FINISHED, JobRegistry
from ._snapshot import ClusterNode, ControlState, FailureView, JobSnapshot, QueueDepth, WorkerInfo
from ._workers import HEARTBEAT, WORKER_TTL, WORKERS_KEY, WorkerRegistry, new_worker_id

__all__ = (
    "CONTROL_KEY",
    "HEARTBEAT",
    "KEPT_FINISHED",
    "POLL_INTERVAL",
    "STOPS_KEY",
    "WORKERS_KEY",
    "WORKER_TTL",
    "ClusterNode",
    "ControlState",
    "FailureView",
    "Hold",
    "JobControl",
    "JobEnded",
    "JobRegistry",
    "JobSnapshot",
    "JobView",
    "QueueDepth",
    "WorkerInfo",
    "WorkerRegistry",
    "new_worker_id",
)
