"""`FanoutSink`: write every batch to several sinks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._data_sink import FencedSink, SinkContext

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..queue._fence import Fence
    from ._data_sink import DataSink

__all__ = ("FanoutSink",)


class FanoutSink(SinkContext):
    """Opens, writes to and closes each of `sinks` in turn.

    If one sink's `write` raises, the sinks before it already have the batch; the engine's retry gives
    it to them again (at-least-once). `close` closes every sink even if some fail, then raises the
    first error.

    Example:
        >>> import anyio
        >>> from mocra_core.sinks import CallbackSink
        >>> a, b = [], []
        >>> async def main() -> None:
        ...     async with FanoutSink(CallbackSink(a.append), CallbackSink(b.append)) as sink:
        ...         await sink.write(["x"])
        >>> anyio.run(main)
        >>> a, b
        (['x'], ['x'])
    """

    def __init__(self, *sinks: DataSink) -> None:
        self._sinks = sinks
        self._opened: list[DataSink] = []

    async def open(self) -> None:
        """Open each sink; if one fails, close those already open and raise."""
        for sink in self._sinks:
            try:
                await sink.open()
            except BaseException:
                await self.close()
                raise
            self._opened.append(sink)

    async def write(self, items: Sequence[object]) -> None:
        """Write the batch to each sink in turn."""
        for sink in self._sinks:
            await sink.write(items)

    async def write_fenced(self, items: Sequence[object], fences: Sequence[Fence | None]) -> int:
        """Write the batch to each sink in turn, with its fences to those that take them.

        Returns the most items one sink refused as written under an expired claim; the sinks that do
        not fence (files, callbacks) take every item.
        """
        lost = 0
        for sink in self._sinks:
            if isinstance(sink, FencedSink):
                lost = max(lost, await sink.write_fenced(items, fences))
            else:
                await sink.write(items)
        return lost

    async def close(self) -> None:
        """Close every open sink, in reverse order; raise the first error after trying them all."""
        error: BaseException | None = None
        while self._opened:
            try:
                await self._opened.pop().close()
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error

    def __repr__(self) -> str:
        return f"FanoutSink({', '.join(map(repr, self._sinks))})"
