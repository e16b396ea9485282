"""`mocra dlq list|replay --job-dir DIR`: read and replay the dead-letter queues of a job."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

import anyio

from mocra_core import ConfigError
from mocra_core.config import QueueSettings
from mocra_core.engine import JobDir, describe_dead_letter

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("TOPICS", "list_dead_letters", "replay_dead_letters")

TOPICS = ("task", "request", "response")


def _job(path: str) -> JobDir:
    job = JobDir(path)
    if not job.is_resumed:
        raise ConfigError(
            "--job-dir", "holds no crawl state (run `mocra run ... --job-dir` first)", source=path
        )
    return job


def list_dead_letters(path: str, *, limit: int, stream: TextIO) -> int:
    """Print the dead letters of the job in `path`, oldest first; returns how many there are."""

    async def read() -> int:
        job = _job(path)
        total = 0
        async with job.open_queue(QueueSettings()) as queue:
            for topic in TOPICS:
                for letter in await queue.dead_letters(topic, limit=limit):
                    failure = describe_dead_letter(letter)
                    first_line = failure.reason.strip().splitlines()[-1] if failure.reason.strip() else ""
                    stream.write(
                        f"{failure.topic}\t{failure.id}\t{failure.attempt}\t{failure.url}\t{first_line}\n"
                    )
                    total += 1
        job.close()
        return total

    total = anyio.run(read)
    stream.write(f"{total} dead letters\n")
    return total


def replay_dead_letters(path: str, *, topics: Sequence[str], stream: TextIO) -> int:
    """Move the job's dead letters back to their queues; the next `mocra run --job-dir` processes them."""

    async def replay() -> int:
        job = _job(path)
        moved = 0
        async with job.open_queue(QueueSettings()) as queue:
            for topic in topics:
                moved += await queue.replay(topic)
        job.close()
        return moved

    moved = anyio.run(replay)
    stream.write(
        f"{moved} dead letters replayed; run the same `mocra run ... --job-dir {path}` to process them\n"
    )
    return moved
