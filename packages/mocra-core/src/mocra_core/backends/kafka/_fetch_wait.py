"""`FetchWait`: how long a reader's next fetch waits at the broker, chosen from how far behind it is.

A Kafka fetch names a wait: how long the broker may hold it for records to arrive. Apache Kafka answers
as soon as it has records, so there the wait only spaces idle fetches. tansu (the broker of the tests
and benchmarks) holds every fetch for its whole wait, and answers with what it read by then: reading a
long partition takes it longer than a short wait, and it answers empty. So one wait cannot serve both
ends: a short one stalls a reader behind on a long topic (the 150,000-page soak stopped at 10 ms), a
long one adds its length to every hop of a crawl that is caught up (the bench crawl: 30 % slower at
50 ms than at 10 ms), and between the two tansu answers with a few records a fetch (at 2 ms, ~100 of a
partition 5,000 record batches long). `FetchWait` picks per state:

- **caught up** (every assigned partition fetched to its high watermark): `low`, so a record produced
  now is handed over within a few milliseconds;
- **behind** (a partition's high watermark above the next offset the reader takes from it): the behind
  wait, `start` at first. A partition behind whose fetches keep coming back short (fewer than
  `SHORT_ANSWER` records, or than it lagged, `SHORT_LIMIT` answers in a row, by aiokafka's
  `last_poll_timestamp`) doubles it, up to `high`: the broker needs longer to read it. On Apache Kafka
  a fetch behind answers at once with up to a megabyte per partition, so the wait stays. A grown wait
  is kept (a topic never gets shorter on tansu).

The reader passes only the partitions it fetches: a paused one (its window is full) is not fetched, its
high watermark is stale, and the reader has a window of work to do meanwhile; lanes still caught up
(a crawl's listing pages) keep their short hops beside a backlog of another lane.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ._driver import TopicPartition

__all__ = ("SHORT_ANSWER", "SHORT_LIMIT", "FetchWait", "PartitionLag")

SHORT_ANSWER = 100  # records a fetch answer behind brings at least (or all it lagged), or it is short
SHORT_LIMIT = 3  # short answers in a row, for a partition behind, before the behind wait doubles


class PartitionLag(NamedTuple):
    """What the reader knows of one assigned partition after a fetch (aiokafka's public consumer calls)."""

    highwater: int | None
    """The broker's high watermark from the last fetch answer (`consumer.highwater`); None before one."""
    polled: int | None
    """When the last fetch answer for it arrived, epoch ms (`consumer.last_poll_timestamp`)."""
    next: int
    """The next offset the reader takes from it (after the records it has been handed)."""


class FetchWait:
    """The fetch wait of one consumer, from the lag of its partitions; see the module docstring.

    Args:
        low: Seconds a fetch waits while the reader is caught up.
        start: Seconds a fetch waits when the reader falls behind for the first time.
        high: The most the behind wait grows to.

    Raises:
        ValueError: the bounds are not `0 < low <= start <= high`.

    Example:
        >>> wait = FetchWait(low=0.005, start=0.05, high=1.0)
        >>> wait.observe({})  # nothing fetched yet: as if behind
        0.05
        >>> wait.observe({"t-0": PartitionLag(highwater=10, polled=1, next=10)})
        0.005
        >>> wait.observe({"t-0": PartitionLag(highwater=12, polled=2, next=10)})
        0.05
    """

    def __init__(self, *, low: float, start: float, high: float) -> None:
        if not 0 < low <= start <= high:
            order = "0 < fetch_wait_min <= fetch_wait <= fetch_wait_max"
            raise ValueError(f"fetch waits must be {order}, got {low!r}, {start!r}, {high!r}")
        self.low = low
        self.high = high
        self.behind = start
        self.seconds = start
        self._seen: dict[TopicPartition, PartitionLag] = {}
        self._short: dict[TopicPartition, int] = {}

    def observe(self, lags: Mapping[TopicPartition, PartitionLag]) -> float:
        """Take in the partitions' lag after a fetch; returns the wait (seconds) for the next fetches.

        `lags` holds every partition the consumer fetches now (assigned, not paused); none, or one not
        fetched yet, counts as behind, so a reader that starts (or resumes everything) on a long topic
        does not begin with fetches that answer empty.
        """
        behind = not lags
        grow = False
        for tp, lag in lags.items():
            if lag.highwater is None:
                behind = True
            elif lag.highwater <= lag.next:
                self._short.pop(tp, None)
            else:
                behind = True
                grow = self._answered_short(tp, lag) or grow
        self._seen = dict(lags)
        self._short = {tp: n for tp, n in self._short.items() if tp in lags}
        if grow:
            self.behind = min(self.high, self.behind * 2)
            self._short.clear()
        self.seconds = self.behind if behind else self.low
        return self.seconds

    def _answered_short(self, tp: TopicPartition, lag: PartitionLag) -> bool:
        """Count a short fetch answer for a partition behind; True once `SHORT_LIMIT` in a row."""
        before = self._seen.get(tp)
        if before is None or lag.polled == before.polled or self.seconds < self.behind:
            return False  # first look, no new answer, or one to a short fetch of the caught-up state
        wanted = SHORT_ANSWER
        if before.highwater is not None:
            wanted = min(wanted, before.highwater - before.next)
        if lag.next - before.next >= wanted:
            self._short.pop(tp, None)  # enough came: the wait is long enough
            return False
        self._short[tp] = self._short.get(tp, 0) + 1
        return self._short[tp] >= SHORT_LIMIT
