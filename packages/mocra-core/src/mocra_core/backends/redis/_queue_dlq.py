"""Reading and replaying the dead-letter stream of a `RedisStreamsQueue` topic."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ..._errors import PoisonMessage
from ...queue._delivery import DeadLetter
from ...queue._envelope import pack, unpack

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...queue._codec import Codec
    from ._queue_store import RedisStore

__all__ = ("lane", "read_dead_letters", "replay_dead_letters")

_PAGE = 1000  # DLQ entries per XRANGE (and per replay script)


def lane(priority: int) -> str:
    """The lane of a priority: shifted to unsigned 64 bits, 16 hex digits (so lanes sort as strings)."""
    if not isinstance(priority, int) or not -(2**63) <= priority < 2**63:
        raise ValueError(f"priority must be a 64-bit int, got {priority!r}")
    return f"{priority + 2**63:016x}"


async def read_dead_letters(
    store: RedisStore, prefix: str, topic: str, codec: Codec, limit: int
) -> list[DeadLetter]:
    """Up to `limit` dead letters, oldest first; a payload the codec cannot read is given as bytes."""
    letters = []
    for entry, fields in await store.dead_letters(prefix, "-", limit) if limit > 0 else []:
        try:
            envelope = unpack(fields.get(b"e", b""))
        except PoisonMessage as exc:  # written there by someone else
            letters.append(DeadLetter(entry.decode(), topic, fields, None, 0, exc.reason, 0.0))
            continue
        try:
            payload = codec.decode(envelope.body)
        except Exception:
            payload = envelope.body
        letters.append(
            DeadLetter(
                envelope.id,
                topic,
                payload,
                envelope.key,
                envelope.attempt,
                envelope.reason or "",
                envelope.failed_at or 0.0,
                envelope.priority,
                envelope.created,
            )
        )
    return letters


async def replay_dead_letters(store: RedisStore, prefix: str, ids: Sequence[str] | None) -> int:
    """Move dead letters (all, or those with the given message ids) back to their lanes; how many."""
    chosen = None if ids is None else set(ids)
    start, moved = "-", 0
    while True:
        page = await store.dead_letters(prefix, start, _PAGE)
        items = []
        for entry, fields in page:
            try:
                envelope = unpack(fields.get(b"e", b""))
            except PoisonMessage:
                continue  # not ours to replay
            if chosen is None or envelope.id in chosen:
                prior = envelope.prior_attempts + envelope.attempt  # its fence goes on rising (`Fence`)
                fresh = msgspec.structs.replace(
                    envelope, attempt=1, prior_attempts=prior, reason=None, failed_at=None
                )
                items.append((entry, lane(envelope.priority), envelope.key, pack(fresh)))
        if items:
            moved += await store.replay(prefix, items)
        if len(page) < _PAGE:
            return moved
        start = "(" + page[-1][0].decode()
