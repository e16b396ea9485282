"""`DataSink`: the protocol every item destination implements."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType
    from typing import Self

    from ..queue._fence import Fence

__all__ = ("DataSink", "FencedSink", "SinkContext")


class DataSink(Protocol):
    """Receives items in batches. open() before the first write, close() after the last (flushes).

    Items are what spiders yield: msgspec Structs, dataclasses, dicts, or anything else msgspec can
    encode. The engine calls `write` from one task at a time, in order, and retries a `write` that
    raises with the same batch; if it still fails, it writes the batch again in parts (each page's
    items whole) to find the pages at fault, which go to the dead-letter queue. So a `write` either
    keeps the whole batch or raises having kept none of it where the destination allows (the file
    sinks truncate a half-written batch away; `SqlSink` rolls back). Delivery is at-least-once: a
    batch written just before a crash is written again when the job resumes.

    Implementations: `JsonlSink`, `CsvSink`, `ParquetSink` and `DataFrameSink` (the `polars` extra),
    `XlsxSink` (the `excel` extra), `SqlSink` (the `sql` extra), `CallbackSink` (`on_item`), `ChannelSink`
    (`channel`) and `FanoutSink`. Errors they raise on purpose are `SinkError`.
    """

    async def open(self) -> None:
        """Acquire the destination (open the file); called once, before the first `write`."""
        ...

    async def write(self, items: Sequence[object]) -> None:
        """Deliver one batch of items, in order."""
        ...

    async def close(self) -> None:
        """Flush and release the destination; called once, after the last `write`."""
        ...


@runtime_checkable
class FencedSink(DataSink, Protocol):
    """A sink that refuses the writes of a claim that has expired (`SqlSink` with a key, `FanoutSink`).

    The engine writes each item with the `Fence` of the delivery it came from (the message, and the
    lease: its attempt). A write under an older lease of a message than the one the destination already
    holds for that item loses: it is not kept, and `write_fenced` counts it. Items without a fence are
    written as by `write`.

    Example:
        >>> from mocra_core.sinks import JsonlSink, SqlSink
        >>> sql, jsonl = SqlSink("sqlite:///items.db", key="id"), JsonlSink("items.jsonl")
        >>> isinstance(sql, FencedSink), isinstance(jsonl, FencedSink)
        (True, False)
    """

    async def write_fenced(self, items: Sequence[object], fences: Sequence[Fence | None]) -> int:
        """Deliver one batch, `items[i]` under `fences[i]`; returns how many lost to a newer claim."""
        ...


class SinkContext:
    """Mixin: `async with sink:` calls `open()` on entry and `close()` on exit."""

    async def open(self) -> None:
        """Acquire the destination."""

    async def close(self) -> None:
        """Release the destination."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
