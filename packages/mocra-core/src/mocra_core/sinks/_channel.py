"""`ChannelSink`: send items into an anyio memory object stream for your own task to consume."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from ._data_sink import SinkContext
from ._errors import SinkError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ("ChannelSink", "channel")


class ChannelSink(SinkContext):
    """Sends each item into `send_stream`; `close()` closes it, which ends `async for` on the receiver.

    The stream is bounded, so a slow consumer slows the crawl down (back-pressure) instead of letting
    items pile up in memory.

    Args:
        send_stream: The sending side; this sink owns it and closes it.

    Raises:
        SinkError: on `write`, when the receiving side was closed (not retryable).
    """

    def __init__(self, send_stream: MemoryObjectSendStream[Any]) -> None:
        self._send = send_stream

    async def write(self, items: Sequence[object]) -> None:
        """Send the items one by one, waiting while the stream's buffer is full."""
        send = self._send.send
        try:
            for item in items:
                await send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise SinkError("channel sink: the receiving side is closed", retryable=False) from exc

    async def close(self) -> None:
        """Close the sending side; the receiver gets the buffered items, then its iteration ends."""
        await self._send.aclose()

    def __repr__(self) -> str:
        return "ChannelSink()"


def channel(max_buffer: int = 1000) -> tuple[ChannelSink, MemoryObjectReceiveStream[Any]]:
    """Return a sink and the receiving end of its stream, which buffers up to `max_buffer` items.

    Example:
        >>> import anyio
        >>> async def main() -> list[object]:
        ...     sink, items = channel()
        ...     async def crawl() -> None:
        ...         async with sink:
        ...             await sink.write([1, 2, 3])
        ...     async with anyio.create_task_group() as tg, items:
        ...         tg.start_soon(crawl)
        ...         return [item async for item in items]
        >>> anyio.run(main)
        [1, 2, 3]
    """
    send, receive = anyio.create_memory_object_stream[Any](max_buffer)
    return ChannelSink(send), receive
