"""`FetchWait`: how long a reader's fetches wait at the broker: short, longer once a long partition needs it.

A Kafka fetch names a wait: how long the broker may hold it for records to arrive. Apache Kafka answers
as soon as it has records, so there the wait only spaces idle fetches. tansu (the broker of the tests
and benchmarks) holds every fetch for its whole wait and answers with what it has read by then; it reads
a partition at a cost that grows with the record batches in it, so below that cost it answers with a
few records or none (a partition 5,000 batches long: at 1 ms nothing, at 2 ms ~100 records a fetch, at
5 ms all; with 10 ms the 150,000-page soak stopped once its partitions grew past ~70,000 records). A
long wait costs a crawl that is caught up its length on every hop (the bench crawl: 30 % slower at 50 ms
than at 10 ms), and on tansu the lag does not tell which is needed: a partition behind by a thousand
records is read in one short fetch while it is short, and not at all once it is long. So:

- a reader's fetches wait `low` at first, caught up or behind;
- a partition behind by at least `SHORT_ANSWER` records whose fetch answers keep bringing fewer
  (`SHORT_LIMIT` answers in a row, told apart by aiokafka's `last_poll_timestamp`) doubles the wait, up
  to `high`: the broker needs longer to read it. A wait grown is kept (a topic never gets shorter on
  tansu, and a reader caught up on a long partition needs it for the next record as much).

On Apache Kafka a fetch behind answers at once with up to a megabyte per partition, so the wait stays
`low`. The reader passes only the partitions it fetches: a paused one (its window is full) is not
fetched and its high watermark is stale.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ._driver import TopicPartition

__all__ = ("SHORT_ANSWER", "SHORT_LIMIT", "FetchWait", "PartitionLag")

SHORT_ANSWER = 500  # records an answer brings at least (a reader's getmany), for a partition this far behind
SHORT_LIMIT = 3  # short answers in a row, for one partition, before the wait doubles


class PartitionLag(NamedTuple):
    """What the reader knows of one partition it fetches (aiokafka's public consumer calls)."""

    highwater: int | None
    """The broker's high watermark from the last fetch answer (`consumer.highwater`); None before one."""
    polled: int | None
    """When the last fetch answer for it arrived, epoch ms (`consumer.last_poll_timestamp`)."""
    next: int
    """The next offset the reader takes from it (after the records it has been handed)."""


class FetchWait:
    """The fetch wait of one consumer, grown from its fetch answers; see the module docstring.

    Args:
        low: Seconds a fetch waits at first.
        high: The most the wait grows to.

    Raises:
        ValueError: the bounds are not `0 < low <= high`.

    Example:
        >>> wait = FetchWait(low=0.01, high=1.0)
        >>> wait.observe({"t-0": PartitionLag(highwater=5_000, polled=1, next=0)})  # behind: still short
        0.01
        >>> for polled in (2, 3, 4):  # three answers in a row with no record
        ...     seconds = wait.observe({"t-0": PartitionLag(highwater=5_000, polled=polled, next=0)})
        >>> seconds
        0.02
    """

    def __init__(self, *, low: float, high: float) -> None:
        if not 0 < low <= high:
            problem = f"got {low!r}, {high!r}"
            raise ValueError(f"fetch waits must be 0 < fetch_wait_min <= fetch_wait_max, {problem}")
        self.low = low
        self.high = high
        self.seconds = low
        self.behind = False  # a partition was at least `SHORT_ANSWER` records behind at the last look
        self._seen: dict[TopicPartition, PartitionLag] = {}
        self._short: dict[TopicPartition, int] = {}

    def observe(self, lags: Mapping[TopicPartition, PartitionLag]) -> float:
        """Take in the partitions' lag after a fetch; returns the wait (seconds) for the next fetches.

        `lags` holds every partition the consumer fetches now (assigned, not paused).
        """
        grow = False
        self.behind = False
        for tp, lag in lags.items():
            grow = self._answered_short(tp, lag) or grow
            far = lag.highwater is not None and lag.highwater - lag.next >= SHORT_ANSWER
            self.behind = self.behind or far
        self._seen = dict(lags)
        self._short = {tp: n for tp, n in self._short.items() if tp in lags}
        if grow:
            self.seconds = min(self.high, self.seconds * 2)
            self._short.clear()  # answers to fetches sent with the old wait do not count
        return self.seconds

    def _answered_short(self, tp: TopicPartition, lag: PartitionLag) -> bool:
        """Count a short answer for a partition far behind; True once `SHORT_LIMIT` in a row."""
        before = self._seen.get(tp)
        if before is None or before.highwater is None or lag.polled == before.polled:
            return False  # first look, or no new answer since
        if before.highwater - before.next < SHORT_ANSWER or lag.next - before.next >= SHORT_ANSWER:
            self._short.pop(tp, None)  # not far behind, or enough came: the wait is long enough
            return False
        self._short[tp] = self._short.get(tp, 0) + 1
        return self._short[tp] >= SHORT_LIMIT
