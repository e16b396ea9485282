"""What an operator sees of a job: its state, counts, queues, workers and cluster, as plain structs (JSON).

The admin API (`/api/v1/...`), the dashboard and `/metrics` all read these; `JobView.snapshot()` makes one.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..observe import StatsSnapshot

__all__ = ("ClusterNode", "ControlState", "FailureView", "JobSnapshot", "QueueDepth", "WorkerInfo")

ControlState = Literal["running", "paused", "stopping"]
"""What an operator asked of a job: run, hold (no new work starts; in-flight work ends), or stop (drain)."""


class QueueDepth(msgspec.Struct, frozen=True, kw_only=True):
    """One stage queue of a job: messages waiting (ready, delayed or leased) and dead letters."""

    pending: int = 0
    dead: int = 0


class WorkerInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A live worker of a job, as its heartbeat last said (every second; gone after a few missed).

    Attributes:
        id: `<host>:<pid>:<n>`, unique per engine.
        host: Host name.
        pid: Process id.
        started: Unix time the worker's run started.
        seen: Unix time of its last heartbeat.
        state: Its engine's lifecycle state (`ready`, `active`, `draining`, ...).
        responses: Pages it downloaded in this run.
        items: Items it wrote in this run.
        pages_per_second: Its rate over its run.
        generations: The generations of each module it has code of (`mocra_core.generations`).
    """

    id: str
    host: str
    pid: int
    started: float
    seen: float
    state: str
    responses: int = 0
    items: int = 0
    pages_per_second: float = 0.0
    generations: dict[str, list[int]] = {}


class ClusterNode(msgspec.Struct, frozen=True, kw_only=True):
    """A node of a `mocra run --cluster` control plane: its role, term, last heartbeat and partitions."""

    id: str
    role: str
    term: int = 0
    heartbeat: float = 0.0
    partitions: list[int] = []


class FailureView(msgspec.Struct, frozen=True, kw_only=True):
    """A dead letter, for people: where it failed, its message id (for replay), what and why."""

    topic: str
    id: str
    url: str
    attempt: int
    reason: str


class JobSnapshot(msgspec.Struct, kw_only=True):
    """A job at one moment, for the whole job whichever worker answers.

    Attributes:
        job: The job's name.
        state: The answering worker's engine state (`prepare`, `ready`, `active`, `draining`, `stopped`,
            `failed`).
        control: What the operator asked (`running`, `paused`, `stopping`), job-wide.
        stats: The job's counts so far, all its workers and runs (`Stats.job_snapshot` on one node).
        run: The answering worker's own counts of this run (with latencies and domains).
        queues: Each stage queue's depth (`task`, `request`, `response-<module>`), job-wide.
        workers: The job's live workers.
        cluster: The control plane's nodes, when the job runs on a cluster.
        time: Unix time of the snapshot.
    """

    job: str
    state: str
    control: ControlState = "running"
    stats: StatsSnapshot = msgspec.field(default_factory=StatsSnapshot)
    run: StatsSnapshot = msgspec.field(default_factory=StatsSnapshot)
    queues: dict[str, QueueDepth] = {}
    workers: list[WorkerInfo] = []
    cluster: list[ClusterNode] = []
    time: float = 0.0
