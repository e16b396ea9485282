"""`mocra status`: how many messages of a job are queued and dead-lettered, per stage queue and module."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

import anyio

from mocra_core.topics import STAGES, module_of, stage_of

from ._job_queues import job_topics, unknown_modules_note
from ._run import job_counts_line

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mocra_core.observe import StatsSnapshot

    from ._job_queues import JobQueues

__all__ = ("job_status", "print_status")

_ALL = 1 << 62  # `dead_letters` limit: every one


async def job_status(queues: JobQueues, topics: Sequence[str] = STAGES) -> dict[str, tuple[int, int]]:
    """Per topic of `topics` (see `job_topics`): (messages pending, dead letters).

    Pending counts what was queued and not yet finished — waiting, delayed or leased by a worker — over
    every worker of the job, as the backend counts it (`QueueBackend.pending`).
    """
    async with queues.read() as queue:  # also while the job runs
        return {
            topic: (await queue.pending(topic), len(await queue.dead_letters(topic, limit=_ALL)))
            for topic in topics
        }


async def _look(queues: JobQueues) -> tuple[dict[str, tuple[int, int]], bool, StatsSnapshot | None]:
    topics, known = await job_topics(queues)
    return await job_status(queues, topics), known, await queues.counts()


def print_status(queues: JobQueues, *, stream: TextIO) -> dict[str, tuple[int, int]]:
    """Print `job_status` as a small table, whether the job has work left, and what it did so far.

    One row per stage queue (`response`: every module's response topic together), then one per module
    (its response topic). Returns the counts of `job_status`, per topic.
    """
    counts, known, done = anyio.run(_look, queues)
    stream.write(f"{queues}\n{'queue':<10}{'pending':>10}{'dead letters':>14}\n")
    for stage in STAGES:
        pending = sum(p for topic, (p, _) in counts.items() if stage_of(topic) == stage)
        dead = sum(d for topic, (_, d) in counts.items() if stage_of(topic) == stage)
        stream.write(f"{stage:<10}{pending:>10}{dead:>14}\n")
    for topic, (pending, dead) in counts.items():
        module = module_of(topic)
        if module is not None:
            stream.write(f"  {module:<8}{pending:>10}{dead:>14}\n")
    if not known:
        stream.write(unknown_modules_note(queues))
    left = sum(pending for pending, _ in counts.values())
    dead = sum(d for _, d in counts.values())
    verdict = f"{left} messages left" if left else "nothing left to crawl"
    hint = f"; {dead} dead letters (`mocra dlq list` shows them)" if dead else ""
    if not left and not dead and not known and done is None:  # nothing says the job was ever there
        hint = " (or no job of that name there)"
    stream.write(f"{verdict}{hint}\n")
    if done is not None:
        stream.write(f"{job_counts_line(done)}\n")
    return counts
