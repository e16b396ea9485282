"""The engine: stages connected by queues, their composition and lifecycle."""

from __future__ import annotations

from ._backends import is_shared, open_queue_for
from ._builder import Mocra, MocraBuilder
from ._cluster import cluster_from_env, cluster_status
from ._codec import EngineCodec
from ._engine import CrawlResult, Engine, Failure, Progress, describe_dead_letter
from ._job_counts import read_job_counts
from ._jobdir import JobDir

__all__ = (
    "CrawlResult",
    "Engine",
    "EngineCodec",
    "Failure",
    "JobDir",
    "Mocra",
    "MocraBuilder",
    "Progress",
    "cluster_from_env",
    "cluster_status",
    "describe_dead_letter",
    "is_shared",
    "open_queue_for",
    "read_job_counts",
)
