"""`mocra status`: how many messages of a job are queued and dead-lettered, per stage queue."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

import anyio

from ._job_queues import TOPICS
from ._run import job_counts_line

if TYPE_CHECKING:
    from mocra_core.observe import StatsSnapshot

    from ._job_queues import JobQueues

__all__ = ("job_status", "print_status")

_ALL = 1 << 62  # `dead_letters` limit: every one


async def job_status(queues: JobQueues) -> dict[str, tuple[int, int]]:
    """Per stage queue (task, request, response): (messages pending, dead letters).

    Pending counts what was queued and not yet finished — waiting, delayed or leased by a worker — over
    every worker of the job, as the backend counts it (`QueueBackend.pending`).
    """
    async with queues.read() as queue:  # also while the job runs
        return {
            topic: (await queue.pending(topic), len(await queue.dead_letters(topic, limit=_ALL)))
            for topic in TOPICS
        }


async def _look(queues: JobQueues) -> tuple[dict[str, tuple[int, int]], StatsSnapshot | None]:
    return await job_status(queues), await queues.counts()


def print_status(queues: JobQueues, *, stream: TextIO) -> dict[str, tuple[int, int]]:
    """Print `job_status` as a small table, whether the job has work left, and what it did so far.

    Returns the counts of `job_status`.
    """
    counts, done = anyio.run(_look, queues)
    stream.write(f"{queues}\n{'queue':<10}{'pending':>10}{'dead letters':>14}\n")
    for topic, (pending, dead) in counts.items():
        stream.write(f"{topic:<10}{pending:>10}{dead:>14}\n")
    left = sum(pending for pending, _ in counts.values())
    dead = sum(d for _, d in counts.values())
    verdict = f"{left} messages left" if left else "nothing left to crawl"
    hint = f"; {dead} dead letters (`mocra dlq list` shows them)" if dead else ""
    if not left and not dead:
        hint = " (or no job of that name there)"
    stream.write(f"{verdict}{hint}\n")
    if done is not None:
        stream.write(f"{job_counts_line(done)}\n")
    return counts
