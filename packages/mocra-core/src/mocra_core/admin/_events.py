"""A job's live snapshots as server-sent events: `event: snapshot`, `data: <JobSnapshot JSON>`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import msgspec
from starlette.responses import StreamingResponse

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ..control import JobView

__all__ = ("job_events", "snapshot_event")


def snapshot_event(data: bytes) -> bytes:
    """One SSE message of event `snapshot` carrying `data` (one line of JSON).

    Example:
        >>> snapshot_event(b'{"job":"x"}').splitlines()
        [b'event: snapshot', b'data: {"job":"x"}', b'']
    """
    return b"event: snapshot\ndata: " + data + b"\n\n"


async def _snapshots(view: JobView, interval: float, closing: anyio.Event) -> AsyncIterator[bytes]:
    encoder = msgspec.json.Encoder()
    yield b"retry: 2000\n\n"  # a browser's EventSource reconnects after 2 s if the stream breaks
    while not closing.is_set():
        yield snapshot_event(encoder.encode(await view.snapshot()))
        with anyio.move_on_after(interval):
            await closing.wait()


def job_events(view: JobView, *, interval: float, closing: anyio.Event) -> StreamingResponse:
    """A `text/event-stream` of `view`'s snapshot every `interval` seconds.

    It ends when the client leaves or `closing` is set (the server stops).
    """
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(
        _snapshots(view, interval, closing), media_type="text/event-stream", headers=headers
    )
