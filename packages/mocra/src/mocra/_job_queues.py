"""Where a job's queues are, for the commands that look into a job (`mocra dlq`, `mocra status`).

A job's queues are in its job dir (`--job-dir DIR`, one process) or on the broker its workers share
(`--queue URL --job NAME`); `JobDirQueues` and `BrokerQueues` open each.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Protocol

from mocra_core import ConfigError, redact
from mocra_core.config import QueueSettings
from mocra_core.engine import JobDir, is_shared, open_queue_for

if TYPE_CHECKING:
    import argparse
    from collections.abc import AsyncIterator

    from mocra_core import Settings
    from mocra_core.queue import QueueBackend

__all__ = ("TOPICS", "BrokerQueues", "JobDirQueues", "JobQueues", "add_job_arguments", "job_queues")

TOPICS = ("task", "request", "response")


class JobQueues(Protocol):
    """Where the queues of a job are."""

    def open(self) -> contextlib.AbstractAsyncContextManager[QueueBackend]:
        """Open the job's queues (an async context manager)."""
        ...

    def rerun(self) -> str:
        """How to have the replayed messages processed."""
        ...

    def __str__(self) -> str:
        """The job, for people: its dir, or its name and broker."""
        ...


class JobDirQueues:
    """The queues of a `mocra run --job-dir DIR` job, in its LMDB files."""

    def __init__(self, path: str) -> None:
        self.path = path

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[QueueBackend]:
        """Open the job dir's queues; raises `ConfigError` when `path` holds no crawl state."""
        job = JobDir(self.path)
        try:
            if not job.is_resumed:
                raise ConfigError(
                    "--job-dir",
                    "holds no crawl state (run `mocra run ... --job-dir` first)",
                    source=self.path,
                )
            async with job.open_queue(QueueSettings()) as queue:
                yield queue
        finally:
            job.close()

    def rerun(self) -> str:
        return f"run the same `mocra run ... --job-dir {self.path}` to process them"

    def __str__(self) -> str:
        return f"job dir {self.path}"


class BrokerQueues:
    """The queues of a `mocra run --queue URL --job NAME` job, on its broker.

    Args:
        settings: The run's settings; `queue.url` names the broker, with its `[queue.*]` options.
        job: The job's name (`--job`; `mocra run` without it names the job after its spiders, joined by `+`).
    """

    def __init__(self, settings: Settings, job: str) -> None:
        if not is_shared(settings):
            problem = f"expected a broker URL (redis://, nats://, kafka://), got {settings.queue.url!r}"
            raise ConfigError("--queue", problem, source="command line")
        if not job:
            raise ConfigError(
                "--job",
                "name the job: the --job given to `mocra run` (default: its spider names, joined by '+')",
                source="command line",
            )
        self.settings = settings
        self.job = job

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[QueueBackend]:
        """Connect to the broker; raises `BackendUnavailable` naming the URL when it cannot be reached."""
        async with open_queue_for(self.settings, None, self.job) as queue:
            yield queue

    def rerun(self) -> str:
        return (
            f"the workers of job {self.job!r} process them; if none is running, start one "
            f"(`mocra run ... --queue ... --job {self.job}`)"
        )

    def __str__(self) -> str:
        return f"job {self.job!r} on {redact(self.settings.queue.url)}"


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that name a job: `--job-dir DIR`, or `--queue URL --job NAME [-c FILE] [-s KEY=VALUE]`."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--job-dir", help="the job dir given to `mocra run`")
    where.add_argument("--queue", metavar="URL", help="the broker given to `mocra run --queue`")
    parser.add_argument("--job", metavar="NAME", help="with --queue: the job given to `mocra run --job`")
    parser.add_argument("-c", "--config", help="with --queue: a TOML settings file ([queue.*] options)")
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --queue: override a setting",
    )


def job_queues(args: argparse.Namespace) -> JobQueues:
    """The queues the options of `add_job_arguments` name."""
    if args.job_dir:
        return JobDirQueues(args.job_dir)
    from mocra_core.config import load

    settings = load(
        args.config, overrides=args.set, flags=[(f"--queue {args.queue}", "queue.url", args.queue)]
    )
    return BrokerQueues(settings, args.job or settings.crawl.job or "")
