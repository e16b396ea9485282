"""What is left of a topic on Kafka: per lane partition, records published and not yet done.

A partition this process's member owns counts exactly (end offset minus fetch position, plus the records
it holds); another member's counts from the group's committed offset (the start offset if none), so it may
count acked records above that offset until their commit lands, never fewer. With several groups on a
topic, the largest count wins; with none, every record still stored counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._driver import topic_partition
from ._reader import lanes_of

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._dlq import DeadLetters
    from ._reader import Reader
    from ._wire import Names, Wire

__all__ = ("count_pending",)


async def count_pending(
    topic: str, *, wire: Wire, names: Names, dlq: DeadLetters, readers: Iterable[Reader]
) -> int:
    """Messages of `topic` published and not yet acked or dead-lettered (see the module docstring).

    Args:
        topic: The queue topic.
        wire: The queue's connection.
        names: The queue's names.
        dlq: The queue's DLQ reader (it also answers offset queries).
        readers: This process's members of the topic's groups.
    """
    prefix = names.prefix(topic)
    lanes = lanes_of(names, topic, await wire.list_topics(prefix))
    tps = [topic_partition(name, p) for name in lanes for p in range(wire.topics[name])]
    if not tps:
        return 0
    ends = await dlq.exact_ends(tps)
    members = {reader.group_id: reader for reader in readers}
    group_ids = list(members) or await wire.groups(prefix)
    if not group_ids:
        starts = await dlq.beginning_offsets(tps)
        return sum(max(ends[tp] - starts[tp], 0) for tp in tps)
    most = 0
    for group_id in group_ids:
        reader = members.get(group_id)
        counts = {tp: reader.local_pending(tp, ends[tp]) if reader else None for tp in tps}
        others = [tp for tp, count in counts.items() if count is None]
        if others:
            committed = await wire.group_offsets(group_id, others)
            missing = [tp for tp in others if committed[tp] < 0]
            starts = await dlq.beginning_offsets(missing) if missing else {}
            for tp in others:
                base = committed[tp] if committed[tp] >= 0 else starts[tp]
                counts[tp] = max(ends[tp] - base, 0)
        most = max(most, sum(count or 0 for count in counts.values()))
    return most
