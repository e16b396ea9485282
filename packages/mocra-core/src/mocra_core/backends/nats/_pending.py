"""What is left of a topic on NATS: per work subject, what its consumer has not delivered or not seen acked.

A work-queue stream deletes a message when its consumer records the ack, so its stored messages are what
is ready, delayed or leased — except after a crash: nats-server 2.9, killed mid-crawl, may keep messages
whose ack its consumer recorded. They are never delivered again, so counting stored messages would keep
a job from ever looking empty. A subject with a consumer therefore counts from the consumer's side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nats.js import JetStreamContext
    from nats.js.api import ConsumerInfo

__all__ = ("consumers_of", "count_pending")

_PAGE = 256  # consumers the server lists at a time


async def consumers_of(js: JetStreamContext, stream: str) -> list[ConsumerInfo]:
    """Every consumer of `stream`."""
    found: list[ConsumerInfo] = []
    while True:
        page = await js.consumers_info(stream, offset=len(found) or None)
        found += page
        if len(page) < _PAGE:
            return found


def count_pending(stored: Mapping[str, int], consumers: Sequence[ConsumerInfo]) -> int:
    """Messages left of the subjects `stored` (subject → stored messages), as their consumers see them.

    Example:
        >>> from nats.js.api import ConsumerConfig, ConsumerInfo
        >>> seen = ConsumerInfo(
        ...     name="c", stream_name="s", config=ConsumerConfig(filter_subject="q.a"), created=0,
        ...     num_pending=2, num_ack_pending=1,
        ... )
        >>> count_pending({"q.a": 7, "q.b": 4}, [seen])  # 4 stored ones of q.a were acked: not counted
        7
    """
    by_subject = {consumer.config.filter_subject: consumer for consumer in consumers}
    total = 0
    for subject, count in stored.items():
        consumer = by_subject.get(subject)
        if consumer is None:
            total += count
        else:
            total += (consumer.num_pending or 0) + (consumer.num_ack_pending or 0)
    return total
