"""`mocra dlq list|replay`: read and replay the dead-letter queues of a job.

A job's queues are in its job dir (`--job-dir DIR`, one process) or on the broker its workers share
(`--queue URL --job NAME`); `JobDirQueues` and `BrokerQueues` open each.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Protocol, TextIO

import anyio

from mocra_core import ConfigError
from mocra_core.config import QueueSettings
from mocra_core.engine import JobDir, describe_dead_letter, is_shared, open_queue_for

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from mocra_core import Settings
    from mocra_core.queue import QueueBackend

__all__ = ("TOPICS", "BrokerQueues", "JobDirQueues", "JobQueues", "list_dead_letters", "replay_dead_letters")

TOPICS = ("task", "request", "response")


class JobQueues(Protocol):
    """Where the queues of a job are."""

    def open(self) -> contextlib.AbstractAsyncContextManager[QueueBackend]:
        """Open the job's queues (an async context manager)."""
        ...

    def rerun(self) -> str:
        """How to have the replayed messages processed."""
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


class BrokerQueues:
    """The queues of a `mocra run --queue URL --job NAME` job, on its broker.

    Args:
        settings: The run's settings; `queue.url` names the broker, with its `[queue.*]` options.
        job: The job's name (`--job`; `mocra run` without it names the job after its spiders, joined by `+`).
    """

    def __init__(self, settings: Settings, job: str) -> None:
        if not is_shared(settings):
            problem = f"expected a broker URL (redis://, nats://, kafka://), got {settings.queue.url!r}"
            raise ConfigError("--queue", problem, source="mocra dlq")
        if not job:
            raise ConfigError(
                "--job",
                "name the job: the --job given to `mocra run` (default: its spider names, joined by '+')",
                source="mocra dlq",
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


def list_dead_letters(queues: JobQueues, *, limit: int, stream: TextIO) -> int:
    """Print the job's dead letters, oldest first, one per line; returns how many were printed.

    Each line: queue, message id, attempts, URL, and the last line of the reason, tab-separated.
    """

    async def read() -> int:
        total = 0
        async with queues.open() as queue:
            for topic in TOPICS:
                for letter in await queue.dead_letters(topic, limit=limit):
                    failure = describe_dead_letter(letter)
                    first_line = failure.reason.strip().splitlines()[-1] if failure.reason.strip() else ""
                    stream.write(
                        f"{failure.topic}\t{failure.id}\t{failure.attempt}\t{failure.url}\t{first_line}\n"
                    )
                    total += 1
        return total

    total = anyio.run(read)
    stream.write(f"{total} dead letters\n")
    return total


def replay_dead_letters(queues: JobQueues, *, topics: Sequence[str], stream: TextIO) -> int:
    """Move the job's dead letters back to their queues (attempt 1); returns how many moved."""

    async def replay() -> int:
        moved = 0
        async with queues.open() as queue:
            for topic in topics:
                moved += await queue.replay(topic)
        return moved

    moved = anyio.run(replay)
    stream.write(f"{moved} dead letters replayed; {queues.rerun()}\n")
    return moved
