"""`Failure`: a dead letter described for people, and the dead letters a run leaves (`dead_letters_of`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from ..http import Request, Response, Routed
from ..modules import Task
from ._transient import TRANSIENT
from .generate._sitemaps import SITEMAP_NODE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..queue import DeadLetter
    from ._activity import ActivityQueue

__all__ = ("Failure", "dead_letters_of", "describe_dead_letter")

logger = logging.getLogger(__name__)


class Failure(msgspec.Struct, kw_only=True):
    """One entry of a dead-letter queue, described for people.

    Attributes:
        topic: The queue it failed in: `task`, `request` (download) or `response-<module>` (parse).
        id: The message id (for `replay`).
        url: The URL of the request or response, or the module/node of a task.
        attempt: Attempts made.
        reason: Why it gave up: status or error of the last attempt, or the parse traceback.
    """

    topic: str
    id: str
    url: str
    attempt: int
    reason: str


def describe_dead_letter(letter: DeadLetter) -> Failure:
    """Turn a dead letter into a `Failure`."""
    payload = letter.payload
    if isinstance(payload, Routed):
        where = payload.request.url
    elif isinstance(payload, Request | Response):
        where = payload.url
    elif isinstance(payload, Task) and payload.node == SITEMAP_NODE:
        where = f"sitemap {payload.meta.get('url')} ({payload.module})"
    elif isinstance(payload, Task):
        where = f"task {payload.module}/{payload.node}"
    else:
        where = f"<undecodable {type(payload).__name__}>"
    return Failure(topic=letter.topic, id=letter.id, url=where, attempt=letter.attempt, reason=letter.reason)


async def dead_letters_of(queue: ActivityQueue, topics: Sequence[str]) -> tuple[list[Failure], int]:
    """The run's dead letters, the first 1,000 described, and their count (none if the broker is away)."""
    failures: list[Failure] = []
    dead = 0
    try:
        for topic in topics:
            letters = await queue.dead_letters(topic, limit=1_000)
            failures.extend(describe_dead_letter(d) for d in letters[: 1_000 - len(failures)])
            dead += (
                len(letters) if len(letters) < 1_000 else len(await queue.dead_letters(topic, limit=1 << 62))
            )
    except TRANSIENT as exc:
        logger.warning("cannot count the dead letters: %s", exc)
    return failures, dead
