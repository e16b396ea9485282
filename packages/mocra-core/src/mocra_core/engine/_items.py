"""`ItemWriter`: group-commits items into one sink, retrying failed writes; nothing is dropped silently."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio

from .._errors import MocraError

if TYPE_CHECKING:
    from ..config import SinkSettings
    from ..middleware import MiddlewareChain
    from ..observe import Stats
    from ..sinks import DataSink

__all__ = ("ItemWriter", "SinkWriteFailed")

logger = logging.getLogger(__name__)


class SinkWriteFailed(MocraError):
    """A batch could not be written after every retry; its parse deliveries go to the DLQ for replay."""


class _Batch:
    __slots__ = ("done", "error", "items")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.done = anyio.Event()
        self.error: BaseException | None = None


class ItemWriter:
    """Writes the items of one sink in batches; `submit` returns once its items are written.

    Parse workers call `submit` before acknowledging the response they parsed, so an item is either in
    the sink or its response is still in the queue (and is parsed again after a crash): at-least-once.
    While one batch is being written, new items gather into the next one (group commit).
    """

    def __init__(self, sink: DataSink, chain: MiddlewareChain, stats: Stats, settings: SinkSettings) -> None:
        self._sink = sink
        self._chain = chain
        self._stats = stats
        self._settings = settings
        self._next = _Batch()
        self._wake = anyio.Event()
        self._closing = False

    @property
    def sink(self) -> DataSink:
        """The sink written to."""
        return self._sink

    async def submit(self, items: list[Any]) -> None:
        """Queue `items` for the next batch and wait until it is written.

        Raises:
            SinkWriteFailed: the batch failed after all retries.
        """
        if not items:
            return
        batch = self._next
        batch.items.extend(items)
        self._wake.set()
        await batch.done.wait()
        if batch.error is not None:
            raise SinkWriteFailed(f"sink {self._sink!r} failed: {batch.error}") from batch.error

    async def run(self) -> None:
        """Write batches until `close` is called and the last batch is written."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            batch, self._next = self._next, _Batch()
            if batch.items:
                await self._write(batch)
            batch.done.set()
            if self._closing and not self._next.items:
                return

    def close(self) -> None:
        """Let `run` return once pending items are written."""
        self._closing = True
        self._wake.set()

    async def _write(self, batch: _Batch) -> None:
        items: Any = batch.items
        if self._chain.has_storage:
            items = await self._chain.before_write(items)
        size = self._settings.batch_size
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            error = await self._write_chunk(chunk)
            if error is not None:
                batch.error = error
                return
            self._stats.items += len(chunk)

    async def _write_chunk(self, chunk: list[Any]) -> BaseException | None:
        delay = self._settings.retry_delay
        for attempt in range(1, self._settings.max_retries + 2):
            try:
                await self._sink.write(chunk)
            except Exception as exc:  # a sink may raise anything: retried, then reported
                if attempt > self._settings.max_retries or getattr(exc, "retryable", True) is False:
                    logger.error(
                        "sink %r failed %d times; %d items go back with their responses: %s",
                        self._sink,
                        attempt,
                        len(chunk),
                        exc,
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
