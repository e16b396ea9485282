"""The engine: stages connected by queues, their composition and lifecycle."""

from __future__ import annotations

from ..backends.cluster._plane import cluster_from_env, cluster_status
from ._backends import Backends, open_backends
from ._builder import Mocra, MocraBuilder
from ._codec import EngineCodec
from ._deploying import deploy_to_job
from ._downloaders import run_downloaders
from ._engine import CrawlResult, Engine, Failure, Progress, describe_dead_letter
from ._job_counts import read_job_counts
from ._job_start import job_builder, with_overrides, with_start_urls
from ._job_view import EngineJobView
from ._jobdir import JobDir
from ._lifecycle import State, StateChange
from ._plan import Backend, BackendPlan, QueueView
from .generate import recorded_modules

__all__ = (
    "Backend",
    "BackendPlan",
    "Backends",
    "CrawlResult",
    "Engine",
    "EngineJobView",
    "EngineCodec",
    "Failure",
    "JobDir",
    "Mocra",
    "MocraBuilder",
    "Progress",
    "QueueView",
    "State",
    "StateChange",
    "cluster_from_env",
    "cluster_status",
    "describe_dead_letter",
    "deploy_to_job",
    "job_builder",
    "open_backends",
    "read_job_counts",
    "recorded_modules",
    "run_downloaders",
    "with_overrides",
    "with_start_urls",
)
