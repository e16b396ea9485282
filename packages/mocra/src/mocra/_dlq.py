"""`mocra dlq list|replay`: read and replay the dead-letter queues of a job (see `_job_queues.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

import anyio

from mocra_core.engine import describe_dead_letter
from mocra_core.topics import stage_of

from ._job_queues import job_topics, unknown_modules_note

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._job_queues import JobQueues

__all__ = ("list_dead_letters", "replay_dead_letters")


def list_dead_letters(queues: JobQueues, *, limit: int, stream: TextIO) -> int:
    """Print the job's dead letters, oldest first, one per line; returns how many were printed.

    Each line: queue topic (a module's response topic is `response-<module>`), message id, attempts,
    URL, and the last line of the reason, tab-separated. `limit` applies per topic.
    """

    async def read() -> int:
        total = 0
        topics, known = await job_topics(queues)
        if not known:
            stream.write(unknown_modules_note(queues))
        async with queues.read() as queue:  # also while the job runs
            for topic in topics:
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
    """Move the job's dead letters back to their queues (attempt 1); returns how many moved.

    `topics` names stage queues (`task`, `request`, `response`: every module's response topic) or
    topics (`response-<module>`).
    """

    async def replay() -> int:
        moved = 0
        every, known = await job_topics(queues)
        if not known:
            stream.write(unknown_modules_note(queues))
        chosen = [topic for topic in every if topic in topics or stage_of(topic) in topics]
        chosen += [topic for topic in topics if topic not in every]  # named, though not recorded
        async with queues.open() as queue:
            for topic in chosen:
                moved += await queue.replay(topic)
        return moved

    moved = anyio.run(replay)
    stream.write(f"{moved} dead letters replayed; {queues.rerun()}\n")
    return moved
