"""`ItemWriter`: group-commits items into one sink, retrying failed writes; nothing is dropped silently."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio

from ..._errors import MocraError
from ...sinks._data_sink import FencedSink

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...config import SinkSettings
    from ...middleware import MiddlewareChain
    from ...observe import Stats
    from ...queue import Fence
    from ...sinks import DataSink

__all__ = ("ItemWriter", "SinkWriteFailed")

logger = logging.getLogger(__name__)

_Entry = tuple[Any, "Fence | None"]  # an item, and the fence of the claim it was made under


class SinkWriteFailed(MocraError):
    """The items of one submitter (a parsed page) could not be written; its delivery goes to the DLQ."""


class _Piece(NamedTuple):
    """Items `start:end` of a batch, all submitted by submitter number `submitter`."""

    submitter: int
    start: int
    end: int


class _Batch:
    """Items to write in one go, by submitter; `done` is set once written (None: nobody waits for it)."""

    __slots__ = ("done", "error", "failed", "fences", "items", "sizes")

    def __init__(self, *, waited: bool = True) -> None:
        self.items: list[Any] = []
        self.fences: list[Fence | None] = []  # each item's
        self.sizes: list[int] = []  # how many items each submitter added, in order
        self.done = anyio.Event() if waited else None
        self.error: BaseException | None = None  # every submitter failed with it
        self.failed: dict[int, BaseException] = {}  # submitter → why its items were not written

    def add(self, items: list[Any], fence: Fence | None) -> None:
        """Add one submitter's `items`, made under the claim `fence`."""
        self.sizes.append(len(items))
        self.items.extend(items)
        self.fences.extend([fence] * len(items))


class ItemWriter:
    """Writes the items of one sink in batches; `submit` returns once its items are written.

    Parse workers call `submit` before acknowledging the response they parsed, so an item is either in
    the sink or its response is still in the queue (and is parsed again after a crash): at-least-once.
    A submitter that finds the writer idle writes its items itself; while a write runs, new items gather
    into the next batch, which the writer task writes next (group commit). One write runs at a time.

    A batch the sink refuses (after its retries, or at once when the error is not retryable) is written
    again submitter by submitter, halving the failing part until the submitters at fault are found: only
    their `submit` raises, and the others' items are written once (a sink that keeps nothing of a failed
    write, as the file and SQL sinks do, holds them exactly once). When the sink fails whatever part it
    is given with a retryable error (it is down), every submitter left fails. A storage middleware that
    changes the number of items hides whose item is whose: then the whole batch fails, as one.

    Each submitter's items carry the `Fence` of its claim (the delivery it parsed). A `FencedSink`
    refuses the items of a claim that has expired and whose message a newer claim has written: they
    count as `dropped["fenced"]`, not as written, and are logged; the submitter is not told (its
    acknowledgement is stale anyway). A storage middleware that changes the number of items drops the
    fences of the batch.
    """

    def __init__(self, sink: DataSink, chain: MiddlewareChain, stats: Stats, settings: SinkSettings) -> None:
        self._sink = sink
        self._fenced = sink if isinstance(sink, FencedSink) else None  # a protocol check is slow: once
        self._chain = chain
        self._stats = stats
        self._settings = settings
        self._next = _Batch()
        self._wake = anyio.Event()
        self._writing = False  # a write runs (the writer task's, or a submitter's own)
        self._written = anyio.Event()  # set when the write running now ends
        self._closing = False

    @property
    def sink(self) -> DataSink:
        """The sink written to."""
        return self._sink

    async def submit(self, items: list[Any], fence: Fence | None = None) -> None:
        """Queue `items`, made under the claim `fence`, for the next batch and wait until it is written.

        When no batch is being written or waiting, the caller writes its items itself, at once: no
        hand-over to the writer task and back (two task wake-ups a page on the crawl's hot path), and
        no wait at all when the sink writes without suspending (a small JSONL batch).

        Raises:
            SinkWriteFailed: `items` could not be written (naming the sink's error); the other
                submitters' items of the batch were written.
        """
        if not items:
            return
        if self._writing or self._next.sizes or self._closing:
            batch = self._next
            submitter = len(batch.sizes)
            batch.add(items, fence)
            self._wake.set()
            assert batch.done is not None
            await batch.done.wait()
        else:  # the writer is idle: write now, in this task
            batch, submitter = _Batch(waited=False), 0
            batch.add(items, fence)
            await self._write_alone(batch)
        error = batch.failed.get(submitter, batch.error) if batch.failed else batch.error
        if error is not None:
            raise SinkWriteFailed(f"sink {self._sink!r} failed: {error}") from error

    async def run(self) -> None:
        """Write batches until `close` is called and the last batch is written."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            while self._writing:  # a submitter writes its own items: the next batch waits for it
                await self._written.wait()
            batch, self._next = self._next, _Batch()
            if batch.items:
                await self._write_alone(batch)
            assert batch.done is not None
            batch.done.set()
            if self._closing and not self._next.items:
                return

    async def _write_alone(self, batch: _Batch) -> None:
        """Write `batch`, no other write running meanwhile (items keep their order in the sink)."""
        self._writing = True
        try:
            await self._write(batch)
        finally:
            self._writing = False
            written, self._written = self._written, anyio.Event()
            written.set()

    def close(self) -> None:
        """Let `run` return once pending items are written."""
        self._closing = True
        self._wake.set()

    async def _write(self, batch: _Batch) -> None:
        stored: Sequence[Any] = batch.items
        if self._chain.has_storage:
            stored = await self._chain.before_write(stored)
        fences = batch.fences if len(stored) == len(batch.items) else [None] * len(stored)
        items: list[_Entry] = list(zip(stored, fences, strict=True))
        size = self._settings.batch_size
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            error = await self._write_chunk(chunk)
            if error is None:
                continue
            if len(batch.sizes) > 1 and len(items) == len(batch.items):
                await self._isolate(batch, items, start, error)
                return
            if len(batch.sizes) > 1:
                logger.warning("a storage middleware changed the number of items: the batch fails as one")
            batch.error = error
            self._log_failed(len(batch.sizes), len(batch.sizes), error)
            return

    async def _isolate(
        self, batch: _Batch, items: Sequence[_Entry], start: int, error: BaseException
    ) -> None:
        """Write what is left of a batch whose chunk at `start` failed with `error`, finding who is at fault.

        The submitters' items from `start` on are packed into groups of at most `batch_size`; a group
        that fails is halved until each failing submitter stands alone.
        """
        size = self._settings.batch_size
        failed = (start, min(start + size, len(items)))
        down: BaseException | None = None  # the sink fails whatever it is given
        for group in _groups(_pieces(batch.sizes, start), size):
            lo, hi = group[0].start, group[-1].end
            if down is not None:
                self._fail(batch, group, down)
                continue
            if hi - lo > size:  # one submitter with more items than a batch: chunk by chunk, as usual
                problem = await self._write_span(items, lo, hi)
                if problem is not None:
                    self._fail(batch, group, problem)
                continue
            if (lo, hi) == failed:
                problem = error
            elif lo < failed[1]:  # part of it has just failed: try once
                problem = await self._write_once(items[lo:hi])
            else:
                problem = await self._write_chunk(items[lo:hi])
            if problem is not None:
                down = await self._bisect(batch, items, group, problem)

    async def _bisect(
        self, batch: _Batch, items: Sequence[_Entry], group: list[_Piece], error: BaseException
    ) -> BaseException | None:
        """Halve a failing `group` of at most `batch_size` items until each failing submitter stands alone.

        The halves are written in order. Returns the error when the sink seems down (both halves of a
        group failed with the same retryable error): then every piece left is failed with it.
        """
        if len(group) == 1:
            self._fail(batch, group, error)
            return None
        middle = len(group) // 2
        first, second = group[:middle], group[middle:]
        problem = await self._write_half(items, first)
        if problem is not None:
            down = await self._bisect(batch, items, first, problem)
            if down is not None:
                self._fail(batch, second, down)
                return down
        again = await self._write_half(items, second)
        if again is None:
            return None
        if problem is not None and _same_outage(problem, again):
            self._fail(batch, second, again)
            return again
        return await self._bisect(batch, items, second, again)

    async def _write_half(self, items: Sequence[_Entry], pieces: list[_Piece]) -> BaseException | None:
        return await self._write_once(items[pieces[0].start : pieces[-1].end])

    def _fail(self, batch: _Batch, pieces: Sequence[_Piece], error: BaseException) -> None:
        for piece in pieces:
            batch.failed[piece.submitter] = error
        self._log_failed(len(pieces), len(batch.sizes), error)

    def _log_failed(self, failed: int, submitters: int, error: BaseException) -> None:
        logger.error(
            "sink %r: the items of %d of %d submitters go back with their responses: %s",
            self._sink, failed, submitters, error,
        )  # fmt: skip

    async def _write_span(self, items: Sequence[_Entry], lo: int, hi: int) -> BaseException | None:
        for start in range(lo, hi, self._settings.batch_size):
            error = await self._write_chunk(items[start : min(start + self._settings.batch_size, hi)])
            if error is not None:
                return error
        return None

    async def _send(self, chunk: Sequence[_Entry]) -> None:
        """Write `chunk` (with its fences to a sink that takes them) and count what was written."""
        items = [item for item, _ in chunk]
        fences = [fence for _, fence in chunk]
        lost = 0
        if self._fenced is not None and any(fence is not None for fence in fences):
            lost = await self._fenced.write_fenced(items, fences)
        else:
            await self._sink.write(items)
        self._stats.items += len(chunk) - lost
        if lost:
            self._stats.drop("fenced", lost)
            logger.warning(
                "sink %r: %d of %d items refused: their worker's lease had expired and another worker "
                "has written them since (fenced)", self._sink, lost, len(chunk),
            )  # fmt: skip

    async def _write_once(self, chunk: Sequence[_Entry]) -> BaseException | None:
        try:
            await self._send(chunk)
        except Exception as exc:  # a sink may raise anything: reported to the caller
            return exc
        return None

    async def _write_chunk(self, chunk: Sequence[_Entry]) -> BaseException | None:
        delay = self._settings.retry_delay
        for attempt in range(1, self._settings.max_retries + 2):
            try:
                await self._send(chunk)
            except Exception as exc:  # a sink may raise anything: retried, then reported
                if attempt > self._settings.max_retries or not _retryable(exc):
                    logger.warning(
                        "sink %r failed %d times on %d items: %s", self._sink, attempt, len(chunk), exc
                    )
                    return exc
                logger.warning(
                    "sink %r failed (attempt %d), retrying in %.2fs: %s", self._sink, attempt, delay, exc
                )
                await anyio.sleep(delay)
                delay *= 2
            else:
                return None
        return None


def _retryable(error: BaseException) -> bool:
    """Whether writing the same items again may work (`SinkError.retryable`; other errors: yes)."""
    return getattr(error, "retryable", True) is not False


def _same_outage(first: BaseException, second: BaseException) -> bool:
    """Whether two failures of a sink look like one outage (not two bad items): retryable and alike."""
    return _retryable(first) and type(first) is type(second) and str(first) == str(second)


def _pieces(sizes: Sequence[int], start: int) -> list[_Piece]:
    """Each submitter's items from item `start` on (of one begun before `start`: the rest)."""
    pieces: list[_Piece] = []
    end = 0
    for submitter, count in enumerate(sizes):
        begin, end = end, end + count
        if end > start:
            pieces.append(_Piece(submitter, max(begin, start), end))
    return pieces


def _groups(pieces: Sequence[_Piece], size: int) -> list[list[_Piece]]:
    """Consecutive pieces packed into groups of at most `size` items (a larger piece makes a group alone)."""
    groups: list[list[_Piece]] = []
    current: list[_Piece] = []
    count = 0
    for piece in pieces:
        length = piece.end - piece.start
        if current and count + length > size:
            groups.append(current)
            current, count = [], 0
        current.append(piece)
        count += length
    if current:
        groups.append(current)
    return groups
