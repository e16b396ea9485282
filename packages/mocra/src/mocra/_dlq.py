"""`mocra dlq list|replay`: read and replay the dead-letter queues of a job (see `_job_queues.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

import anyio

from mocra_core.engine import describe_dead_letter

from ._job_queues import TOPICS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._job_queues import JobQueues

__all__ = ("list_dead_letters", "replay_dead_letters")


def list_dead_letters(queues: JobQueues, *, limit: int, stream: TextIO) -> int:
    """Print the job's dead letters, oldest first, one per line; returns how many were printed.

    Each line: queue, message id, attempts, URL, and the last line of the reason, tab-separated.
    """

    async def read() -> int:
        total = 0
        async with queues.read() as queue:  # also while the job runs
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
